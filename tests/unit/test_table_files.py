"""table_files: the Arrow IPC files the cache is made of, written through a buffer, hold
exactly the bytes Arrow's own writer makes of the same table, whatever the sizes of its
buffers (some larger than the write buffer), and leave no file aside."""
import os

import numpy as np
import pyarrow as pa
import pytest

from tb_plugin import table_files


def _reference_bytes(table: pa.Table, batch: bool = False) -> bytes:
    """The IPC file as Arrow writes it into memory (no file, no buffering of ours)."""
    out = pa.BufferOutputStream()
    with pa.ipc.new_file(out, table.schema) as writer:
        if batch:
            writer.write_batch(table.to_batches()[0])
        else:
            writer.write_table(table, max_chunksize=1 << 20)
    return out.getvalue().to_pybytes()


def _tables():
    rng = np.random.default_rng(7)
    n = 300_000  # 2.4 MB a numeric column: larger than the write buffer
    return {
        "mixed": pa.table({
            "name": pa.array([f"op{i % 97}" if i % 11 else None for i in range(2_000)]),
            "dur_ns": pa.array(rng.integers(0, 1 << 40, 2_000)),
            "ratio": pa.array(rng.random(2_000)),
        }).replace_schema_metadata({b"pandas": b'{"columns": []}'}),
        "large": pa.table({"ts": pa.array(rng.integers(0, 1 << 60, n)),
                           "v": pa.array(rng.random(n))}),
        "empty": pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.string())}),
    }


@pytest.mark.parametrize("name", ["mixed", "large", "empty"])
def test_written_file_is_arrows_own_bytes(tmp_path, name):
    table = _tables()[name]
    path = str(tmp_path / f"{name}.arrow")
    table_files.write_arrow(path, table)
    with open(path, "rb") as fh:
        assert fh.read() == _reference_bytes(table)
    assert pa.ipc.open_file(path).read_all().equals(table)
    assert os.listdir(tmp_path) == [f"{name}.arrow"]  # nothing left aside


def test_columns_written_as_one_batch(tmp_path):
    table = _tables()["mixed"]
    path = str(tmp_path / "cols.arrow")
    table_files.write_columns(path, {c: table.column(c).to_numpy(zero_copy_only=False)
                                     if c != "name" else table.column(c)
                                     for c in table.column_names})
    expected = pa.table({c: table.column(c) for c in table.column_names})  # (no metadata)
    with open(path, "rb") as fh:
        assert fh.read() == _reference_bytes(expected, batch=True)
    assert os.listdir(tmp_path) == ["cols.arrow"]
