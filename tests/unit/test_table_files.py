"""Table files written by a writer thread inside a load stage (tb_plugin/table_files.py):
written by another thread only inside a `spilling` block, complete when the block ends, read
back only after their writes, in order per path, and a failed write fails the block."""
from __future__ import annotations

import os
import threading

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from tb_plugin import model, table_files
from tb_plugin.table_files import read_table, spilling, write_columns, write_table
from tb_plugin.readers.trace_args import _ArgsSink


def _frame(n: int, value: int) -> pd.DataFrame:
    return pd.DataFrame({"a": np.full(n, value, np.int64), "b": np.arange(n, dtype=np.int64)})


def _read(path: str) -> pd.DataFrame:
    with pa.memory_map(path) as src:
        return pa.ipc.open_file(src).read_all().to_pandas()


def _writer_threads(monkeypatch) -> list[int]:
    """Record the thread of every IPC file opened for writing."""
    seen: list[int] = []
    real = pa.ipc.new_file

    def new_file(*args, **kwargs):
        seen.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(pa.ipc, "new_file", new_file)
    return seen


def test_outside_a_stage_the_caller_writes(tmp_path, monkeypatch):
    seen = _writer_threads(monkeypatch)
    path = str(tmp_path / "t.arrow")
    write_table(path, _frame(10, 1))
    assert seen == [threading.get_ident()]
    assert os.path.exists(path)  # at once, no block to wait for
    pd.testing.assert_frame_equal(_read(path), _frame(10, 1))


def test_inside_a_stage_a_thread_writes_and_the_end_waits(tmp_path, monkeypatch):
    if not table_files._copy_on_write():
        pytest.skip("pandas without copy-on-write: frames are written by the caller")
    seen = _writer_threads(monkeypatch)
    paths = [str(tmp_path / f"t{i}.arrow") for i in range(6)]
    with spilling(str(tmp_path)):
        for i, path in enumerate(paths):
            write_table(path, _frame(50_000, i))
        write_columns(str(tmp_path / "c.arrow"), {"x": np.arange(7, dtype=np.int64)})
    assert len(seen) == 7 and threading.get_ident() not in seen
    for i, path in enumerate(paths):  # every file complete once the block has ended
        pd.testing.assert_frame_equal(_read(path), _frame(50_000, i))
    assert _read(str(tmp_path / "c.arrow"))["x"].tolist() == list(range(7))
    assert not [n for n in os.listdir(tmp_path) if table_files.WRITE_ASIDE in n]


def test_a_table_read_back_in_the_stage_is_the_one_written_last(tmp_path):
    path = str(tmp_path / "t.arrow")
    with spilling(str(tmp_path)):
        for value in range(5):  # the same table rewritten: its writes land in order
            write_table(path, _frame(200_000, value))
            back = read_table(path)  # waits for the write of this path
            assert (back["a"] == value).all() and len(back) == 200_000
    assert (_read(path)["a"] == 4).all()


def test_a_profile_reads_its_spilled_table_while_it_is_written(tmp_path):
    with spilling(str(tmp_path)):
        profile = model.Profile()
        profile.set("counters", pd.DataFrame({
            "track_id": np.zeros(300_000, np.int32), "ts_ns": np.arange(300_000, dtype=np.int64),
            "series": "c", "value": 1.0}))
        assert "counters" not in profile.tables  # spilled: read back from its file
        got = profile.arrow_column("counters", "ts_ns").to_numpy()
        assert np.array_equal(got, np.arange(300_000))


def test_a_failed_write_fails_the_stage_when_it_ends(tmp_path):
    missing = str(tmp_path / "no-such-dir" / "t.arrow")
    with pytest.raises(OSError):
        with spilling(str(tmp_path)):
            write_table(missing, _frame(10, 1))
            write_table(str(tmp_path / "ok.arrow"), _frame(10, 2))
    # the writes after the failed one still happened; the next stage starts clean
    pd.testing.assert_frame_equal(_read(str(tmp_path / "ok.arrow")), _frame(10, 2))
    with spilling(str(tmp_path)):
        write_table(str(tmp_path / "next.arrow"), _frame(3, 3))
    assert len(_read(str(tmp_path / "next.arrow"))) == 3


def test_an_error_inside_the_stage_is_not_hidden_by_a_failed_write(tmp_path):
    missing = str(tmp_path / "no-such-dir" / "t.arrow")
    with pytest.raises(KeyError):
        with spilling(str(tmp_path)):
            write_table(missing, _frame(10, 1))
            raise KeyError("the stage's own error")
    table_files.drain()  # nothing left over for this thread


def test_the_args_file_is_complete_when_its_sink_closes(tmp_path):
    path = str(tmp_path / "args.arrow")
    texts = [f'{{"i": {i}}}' for i in range(1000)]
    with spilling(str(tmp_path)):
        sink = _ArgsSink(path)
        for k in range(0, 1000, 100):
            sink.add_array(pa.array(texts[k:k + 100], pa.string()))
        sink.close()
        assert _read(path)["args"].tolist() == texts  # before the block ends
