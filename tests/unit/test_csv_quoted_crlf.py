"""Quoted CR LF in large CSV files (torch_npu call stacks and shapes): Arrow (26) drops the
LF of a quoted CR LF when one of its blocks ends between the two bytes, so such a file is
parsed as one block. Checked against the stdlib csv module, over many block sizes (most of
which put a boundary inside some cell)."""
from __future__ import annotations

import csv
import io

import pytest

from tb_plugin.readers import tolerant


def _write(path, rows, terminator="\r\n", encoding="utf-8", extra=b""):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=terminator)
    w.writerow(["Name", "Call Stack"])
    w.writerows(rows)
    path.write_bytes(buf.getvalue().encode(encoding) + extra)
    return list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8", "replace"),
                                       newline="")))[1:]


ROWS = [(f"op{i}", f'frame_a.py(1): f\r\nframe_b.py({i}): "g"\r\nframe_c') for i in range(600)]


@pytest.mark.parametrize("block", range(900, 960, 7))
def test_cells_are_read_whole_wherever_the_blocks_would_end(tmp_path, monkeypatch, block):
    monkeypatch.setattr(tolerant, "_BLOCK_BYTES", block)
    want = _write(tmp_path / "ops.csv", ROWS)
    df, warnings = tolerant.read_csv(str(tmp_path / "ops.csv"), "ops.csv")
    assert warnings == []
    assert [[a, b] for a, b in zip(df["Name"], df["Call Stack"])] == want


def test_a_repaired_file_too(tmp_path, monkeypatch):
    # Not valid UTF-8: read into memory, repaired, then parsed from there.
    monkeypatch.setattr(tolerant, "_BLOCK_BYTES", 911)
    want = _write(tmp_path / "ops.csv", ROWS, extra=b'op\xff,"x\r\ny"\r\n')
    df, warnings = tolerant.read_csv(str(tmp_path / "ops.csv"), "ops.csv")
    assert warnings and "not valid UTF-8" in warnings[0]
    assert [[a, b] for a, b in zip(df["Name"], df["Call Stack"])] == want


def test_only_files_with_a_quoted_cr_are_read_in_one_block(tmp_path, monkeypatch):
    monkeypatch.setattr(tolerant, "_BLOCK_BYTES", 1000)
    monkeypatch.setattr(tolerant, "_SCAN_BYTES", 64)  # the quote parity across windows
    plain = tmp_path / "plain.csv"  # CR LF row ends, quoted cells without CR
    _write(plain, [(f"op{i}", f'"x", {i}') for i in range(300)])
    assert tolerant._block_bytes(str(plain)) == 1000
    late = tmp_path / "late.csv"  # one quoted CR, far from the start
    _write(late, [(f"op{i}", f'"x", {i}') for i in range(300)] + [("last", "a\rb")])
    assert tolerant._block_bytes(str(late)) == late.stat().st_size + 1
    small = tmp_path / "small.csv"  # one block anyway
    _write(small, ROWS[:3])
    assert small.stat().st_size < 1000 and tolerant._block_bytes(str(small)) == 1000
