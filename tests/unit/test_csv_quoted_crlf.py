"""Quoted CR LF in large CSV files (torch_npu call stacks and shapes): Arrow (26) drops the
LF of a quoted CR LF when one of its blocks ends between the two bytes, so the block size
is chosen so that no block ends right after a CR. Checked against the stdlib csv module,
over many block sizes (most of which would put a boundary inside some cell)."""
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


# Denser: CR LF and lone CR inside quoted cells (CR LF row ends).
DENSE = [(f"op{i}", "a\r\nb\r" * (i % 4) + f"x{i}" + "\ry" * (i % 3 == 0))
         for i in range(900)]


@pytest.mark.parametrize("block", range(500, 2500, 97))
def test_dense_crs_whatever_the_starting_block_size(tmp_path, monkeypatch, block):
    monkeypatch.setattr(tolerant, "_BLOCK_BYTES", block)
    path = tmp_path / "ops.csv"
    want = _write(path, DENSE)
    chosen = tolerant._block_bytes(str(path))
    data = path.read_bytes()
    assert chosen >= block
    assert chosen > len(data) or all(data[k - 1] != 13 for k in range(chosen, len(data), chosen))
    df, warnings = tolerant.read_csv(str(path), "ops.csv")
    assert warnings == []
    assert [[a, b] for a, b in zip(df["Name"], df["Call Stack"])] == want


def test_block_sizes(tmp_path, monkeypatch):
    monkeypatch.setattr(tolerant, "_BLOCK_BYTES", 1000)
    plain = tmp_path / "plain.csv"  # LF row ends, no CR anywhere: the size as it is
    _write(plain, [(f"op{i}", f'"x", {i}') for i in range(300)], terminator="\n")
    assert tolerant._block_bytes(str(plain)) == 1000
    small = tmp_path / "small.csv"  # one block anyway
    _write(small, ROWS[:3])
    assert small.stat().st_size < 1000 and tolerant._block_bytes(str(small)) == 1000
    # A CR as the last byte of the first block: the next size, or one block when no more
    # sizes may be tried.
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(b"Name\n" + b"a" * 994 + b"\r\n" + b"b\n" * 2000)
    assert crlf.read_bytes()[999] == 13
    assert tolerant._block_bytes(str(crlf)) == 1001
    monkeypatch.setattr(tolerant, "_BLOCK_TRIES", 1)
    assert tolerant._block_bytes(str(crlf)) == crlf.stat().st_size + 1
