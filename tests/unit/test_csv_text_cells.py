"""The CSV reader's text-cell shortcuts (readers/text_cells.py) against independent references.

- `has_padded_cells` (first / last byte of each cell) against RE2's `^\\s|\\s$` as Arrow runs
  it and against a plain Python rule (RE2's `\\s` is `[\\t\\n\\f\\r ]`);
- `_clean_text` against `str.strip()` and the N/A tokens, cell by cell in Python;
- `_skip_non_numbers`' shortcuts against the whole-column float cast they avoid;
- `read_csv` of a file with such cells against the stdlib `csv` module.
Edge cases: empty strings, nulls (also nulls whose slot holds bytes), sliced arrays and
chunks, multi-byte UTF-8, tabs, \\v, non-ASCII whitespace, all-null columns, large_string.
"""
from __future__ import annotations

import csv
import math
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tb_plugin.readers import text_cells
from tb_plugin.readers.text_cells import NULL_TOKENS, has_padded_cells
from tb_plugin.readers.tolerant import read_csv

RE2_SPACE = "\t\n\f\r "  # RE2's \s (re2/syntax: "whitespace (== [\t\n\f\r ])")
UNICODE_SPACES = ["\u00a0", "\u0085", "\u1680", "\u2003", "\u2028", "\u202f", "\u3000"]


def padded_reference(cells) -> bool:
    return any(c and (c[0] in RE2_SPACE or c[-1] in RE2_SPACE) for c in cells if c is not None)


def regex_reference(col) -> bool:
    return bool(pc.any(pc.match_substring_regex(col, r"^\s|\s$")).as_py())


CASES = [
    [],
    [None, None],
    ["", "", None],
    ["a", "b c", "中文"],
    ["a\t"],
    ["\ta"],
    [" "],
    ["", None, "x "],
    ["x\v", "\vx"],  # \v is no RE2 \s
    ["x\u00a0", "\u3000x", "\u2003"],  # nor is non-ASCII whitespace
    ["é", "aé", "é\n"],
    ["\r\n"],
    ["\fx"],
    ["N/A\t", "1.5"],
    ["1717200000001250.323\t", "17.0\t"],
]


@pytest.mark.parametrize("cells", CASES)
@pytest.mark.parametrize("typ", [pa.string(), pa.large_string()])
def test_padded_cells_as_regex_and_python(cells, typ):
    arr = pa.array(cells, typ)
    want = padded_reference(cells)
    assert has_padded_cells(arr) is want
    assert has_padded_cells(pa.chunked_array([arr], typ)) is want
    if len(arr):
        assert regex_reference(arr) is want


def test_padded_cells_of_slices_and_chunks():
    cells = [" a", "b", "c", "d\t", "e", None, "f"]
    arr = pa.array(cells)
    for lo in range(len(cells)):
        for n in range(len(cells) - lo + 1):
            part = arr.slice(lo, n)
            assert has_padded_cells(part) is padded_reference(cells[lo:lo + n]), (lo, n)
            assert has_padded_cells(part) is (n > 0 and regex_reference(part))
    chunked = pa.chunked_array([arr.slice(1, 2), pa.array([], pa.string()), arr.slice(4, 3)])
    assert has_padded_cells(chunked) is False
    assert has_padded_cells(pa.chunked_array([arr.slice(1, 2), arr.slice(3, 1)])) is True
    assert has_padded_cells(pa.chunked_array([], pa.string())) is False


def test_padded_cells_ignore_the_bytes_of_null_slots():
    # A null slot whose offsets span " x ": Arrow's regex does not see it; neither may we.
    data = b"a x b"
    offsets = np.array([0, 1, 4, 5], np.int32)
    validity = np.packbits(np.array([1, 0, 1, 0, 0, 0, 0, 0], bool), bitorder="little")
    arr = pa.StringArray.from_buffers(3, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data),
                                      pa.py_buffer(validity.tobytes()), 1)
    assert arr.to_pylist() == ["a", None, "b"]
    assert regex_reference(arr) is False
    assert has_padded_cells(arr) is False


def test_padded_cells_random_against_regex():
    rng = random.Random(13)
    alphabet = ["a", "1", ".", " ", "\t", "\n", "\v", "\f", "\r", "é", "中", "\u00a0", "\u3000"]
    for _ in range(300):
        cells = [None if rng.random() < 0.1 else
                 "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 4)))
                 for _ in range(rng.randrange(1, 6))]
        arr = pa.array(cells, rng.choice([pa.string(), pa.large_string()]))
        assert has_padded_cells(arr) is regex_reference(arr) is padded_reference(cells), cells


def clean_reference(cells):
    """Trim every cell (Python `str.strip()`: Unicode whitespace) when some cell is padded as
    RE2 sees it, and make the N/A tokens missing; else the cells as they are."""
    if not padded_reference(cells):
        return list(cells)
    out = []
    for c in cells:
        c = None if c is None else c.strip()
        out.append(None if c in NULL_TOKENS else c)
    return out


CLEAN_CASES = CASES + [
    ["N/A\t", "\u00a0N/A\t", "  ", "\t-", "null ", "x\v", "x"],
    ["x\v", "\u00a0y"],  # nothing RE2 calls padded: left as written
    ["long text cell\t", "another one"],
    [" None", "NA", "n/a\t"],
]


@pytest.mark.parametrize("cells", CLEAN_CASES)
@pytest.mark.parametrize("typ", [pa.string(), pa.large_string()])
def test_clean_text_as_strip_and_null_tokens(cells, typ):
    col = pa.chunked_array([pa.array(cells, typ)], typ)
    assert text_cells._clean_text(col).to_pylist() == clean_reference(cells)


def test_clean_text_of_sliced_chunks():
    cells = ["a", " b", "N/A ", "c", None, "d\t"]
    arr = pa.array(cells)
    col = pa.chunked_array([arr.slice(0, 2), arr.slice(2, 4)])
    assert text_cells._clean_text(col).to_pylist() == clean_reference(cells)
    col = pa.chunked_array([arr.slice(3, 2)])
    assert text_cells._clean_text(col).to_pylist() == ["c", None]


def skip_reference(cells) -> tuple[list, int]:
    """The whole-column rule: a column every present cell of which casts to float64 is
    numeric; its not-finite cells become missing and are counted."""
    col = pa.array(cells, pa.string())
    present = len(col) - col.null_count
    try:
        values = pc.cast(col, pa.float64()).to_pylist()
    except pa.ArrowInvalid:
        return list(cells), 0
    bad = [c is not None and not math.isfinite(v) for c, v in zip(cells, values)]
    if present == 0 or sum(bad) == present:
        return list(cells), 0
    return [None if b else c for c, b in zip(cells, bad)], sum(bad)


SKIP_CASES = [
    ["1", "2.5", None],
    ["1", "inf", "-inf", "NaN"],
    ["1", "nan", "2"],
    ["1", "1e400", "2"],
    ["1", "1" * 400, "2"],
    ["1.5e3", "2"],
    ["name", "inf"],
    ["1", "name"],
    [None, "inf", "3"],
    ["inf", "nan"],
    ["-0", "+1.25", "."],
    ["1.2.3", "inf"],
    [None, None],
    ["", "inf", "1"],
    ["Infinity", "4"],
]


@pytest.mark.parametrize("cells", SKIP_CASES)
def test_skip_non_numbers_as_the_whole_column_cast(cells):
    table = pa.table({"c": pa.array(cells, pa.string())})
    out, gaps = text_cells._skip_non_numbers(table)
    want, n_bad = skip_reference(cells)
    assert out.column("c").to_pylist() == want
    assert gaps == ({"c": n_bad} if n_bad else {})


def test_finite_shortcut_is_never_wrong():
    rng = random.Random(7)
    alphabet = list("0123456789+-.e") + ["inf", "nan", " "]
    for _ in range(400):
        cells = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 6)))
                 for _ in range(rng.randrange(1, 5))]
        col = pa.array(cells, pa.string())
        if text_cells._no_cell_is_non_finite(col):
            assert skip_reference(cells)[1] == 0, cells
    assert text_cells._no_cell_is_non_finite(pa.array(["1.25", "-3", None, "+0.5"]))
    assert not text_cells._no_cell_is_non_finite(pa.array(["1.25", "inf"]))
    assert not text_cells._no_cell_is_non_finite(pa.array(["9" * 400]))


def test_read_csv_text_cells_as_the_csv_module(tmp_path):
    rows = [["Name", "Start Time(us)", "Value", "Note"],
            ["a", "1717200000001250.323\t", "1.5", "x\v"],
            ["\u00a0b\t", "1717200000001277.534\t", "inf", "中文 "],
            ["c", "N/A", "2", ""],
            ["N/A\t", "1717200000001300.000\t", "-", "\u3000y"]]
    path = tmp_path / "t.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    df, warnings = read_csv(str(path), "t.csv")
    header, body = rows[0], rows[1:]
    for j, name in enumerate(header):
        cells = [None if r[j] in NULL_TOKENS else r[j] for r in body]  # the parser's nulls
        want = clean_reference(cells)
        if name == "Value":
            want, _ = skip_reference(want)
        got = [None if v is None or v is pa.NA or (isinstance(v, float) and math.isnan(v))
               else v for v in df[name].astype(object).where(df[name].notna(), None)]
        assert got == want, name
    assert len(warnings) == 1 and "Value 1" in warnings[0]


def test_may_need_trim_never_misses_a_trimmed_character():
    # Every code point at the start and at the end of a cell: where str.strip() (and Arrow's
    # utf8_trim_whitespace) would remove it, the shortcut must say "maybe".
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for cells in (["x" + c for c in points], [c + "x" for c in points]):
        arr = pa.array(cells)
        trimmed = pc.utf8_trim_whitespace(arr).to_pylist()
        for cell, t in zip(cells, trimmed):
            assert t == cell.strip()
        stripped = [c for c, t in zip(cells, trimmed) if t != c]
        assert len(stripped) == 29  # the 29 whitespace characters of Python and Arrow
        assert all(text_cells.may_need_trim(pa.array([c])) for c in stripped)
    kept = ["abc", "中", "a b", "", None, "x\u00a0y"]  # (a last byte like é's A9: "maybe")
    assert not text_cells.may_need_trim(pa.array(kept))
    assert text_cells.may_need_trim(pa.array(kept + ["a "]))


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string()])
def test_cell_boundaries_and_bytes_as_python(typ):
    rng = random.Random(3)
    alphabet = ["a", ";", "\n", "\r", "1", "中", " ", ""]
    for _ in range(200):
        cells = [None if rng.random() < 0.15 else
                 "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 4)))
                 for _ in range(rng.randrange(1, 6))]
        arr = pa.array(cells, typ)
        lo = rng.randrange(0, len(cells))
        part, part_cells = arr.slice(lo), cells[lo:]
        present = [c for c in part_cells if c]
        assert text_cells.cells_start_with(part, b"1;") is any(c[0] in "1;" for c in present)
        assert text_cells.cells_end_with(part, b";\n") is any(c[-1] in ";\n" for c in present)
        if any("\n" in c or "\r" in c for c in present):  # may say "maybe" otherwise
            assert text_cells.cells_contain(part, b"\r\n")
    assert not text_cells.cells_contain(pa.array(["a;b", None, ""]), b"\r\n")
    series = __import__("pandas").Series(["NPU:0", "3", None], dtype="string")
    assert text_cells.cells_start_with(series, b"0123456789")
    assert not text_cells.cells_start_with(series[:1], b"0123456789")


def test_read_csv_quoted_crlf_and_a_long_row(tmp_path):
    # Quoted cells with CR LF inside, tabs after numbers, and one row of 2 MiB (a call stack):
    # the frame holds the csv module's cells.
    rng = random.Random(5)
    rows = [["Name", "Call Stack", "Duration(us)"]]
    for i in range(40000):
        stack = ";\r\n".join(f"f{rng.randrange(1000)}.py({i}): g" for _ in range(rng.randrange(3)))
        rows.append([f"op{i}", stack, f"{rng.random() * 100:.3f}\t"])
    rows.insert(20000, ["huge", "x;\r\n" * (1 << 19), "1.0"])
    path = tmp_path / "operator_details.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    df, warnings = read_csv(str(path), "operator_details.csv")
    assert warnings == []
    limit = csv.field_size_limit(1 << 30)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            body = list(csv.reader(fh))[1:]
    finally:
        csv.field_size_limit(limit)
    assert len(df) == len(body)
    for j, name in enumerate(rows[0]):
        want = clean_reference([None if r[j] in NULL_TOKENS else r[j] for r in body])
        got = df[name].astype(object).where(df[name].notna(), None).tolist()
        assert got == want, name


@pytest.fixture(params=["native", "numpy"])
def boundary_path(request, monkeypatch):
    """The cell-boundary checks with the compiled helper and with numpy only."""
    from tb_plugin.readers import native

    if request.param == "native":
        assert native.helpers is not None, "the compiled helpers are not built"
    else:
        monkeypatch.setattr(native, "helpers", None)
    return request.param


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string(), pa.binary()])
def test_boundary_checks_as_python_on_both_paths(boundary_path, typ):
    """has_padded_cells / cells_start_with / cells_end_with / may_need_trim against their
    definitions in Python, on sliced and chunked arrays with nulls (whose slots may hold
    bytes), both with the compiled helper and without."""
    rng = random.Random(11)
    alphabet = ["a", " ", "\t", "\n", "\r", "\x0b", "1", ";", "中", "\u00a0", "é", ""]
    for _ in range(300):
        cells = [None if rng.random() < 0.2 else
                 "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 4)))
                 for _ in range(rng.randrange(1, 7))]
        if typ == pa.binary():
            arr = pa.array([None if c is None else c.encode() for c in cells], typ)
        else:
            arr = pa.array(cells, typ)
        lo = rng.randrange(0, len(cells))
        part, part_cells = arr.slice(lo, rng.randrange(0, len(cells) - lo + 1)), None
        part_cells = cells[lo:lo + len(part)]
        chunked = pa.chunked_array([part, arr.slice(0, lo)], typ)
        both = part_cells + cells[:lo]
        for col, seen in ((part, part_cells), (chunked, both)):
            present = [c.encode() for c in seen if c]
            re2_space = b"\t\n\f\r "
            assert has_padded_cells(col) is any(
                c[:1] in [bytes([b]) for b in re2_space] or c[-1:] in
                [bytes([b]) for b in re2_space] for c in present)
            assert text_cells.cells_start_with(col, b"1;") is any(c[0] in b"1;" for c in present)
            assert text_cells.cells_end_with(col, b";\n") is any(c[-1] in b";\n" for c in present)
            if typ != pa.binary():
                text = [c.decode() for c in present]
                if any(c != c.strip() for c in text):
                    assert text_cells.may_need_trim(col)


@pytest.mark.parametrize("typ", [pa.string(), pa.large_string()])
def test_finite_shortcut_as_python_on_both_paths(boundary_path, typ):
    """_no_cell_is_non_finite against its definition in Python (every byte from the first
    cell's start to the last cell's end, null slots' included, is one of
    "+,-./0123456789", and no cell has 300 bytes or more), on sliced and chunked arrays,
    with the compiled helper and without."""
    rng = random.Random(13)
    alphabet = ["1", "9", "0", "+", "-", ".", ",", "/", "e", "n", " ", "*", ":", ""]

    def definition(arr) -> bool:
        for chunk in (arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]):
            if len(chunk) == 0:
                continue
            _, offsets, data = chunk.buffers()[:3]
            item = 8 if pa.types.is_large_string(chunk.type) else 4
            off = [int.from_bytes(offsets.to_pybytes()[i * item:(i + 1) * item], "little",
                                  signed=True)
                   for i in range(chunk.offset, chunk.offset + len(chunk) + 1)]
            raw = data.to_pybytes() if data is not None else b""
            if any(b - a >= 300 for a, b in zip(off, off[1:])):
                return False
            if any(not (ord("+") <= c <= ord("9")) for c in raw[off[0]:off[-1]]):
                return False
        return True

    for _ in range(400):
        cells = [None if rng.random() < 0.2 else
                 "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 5)))
                 for _ in range(rng.randrange(1, 7))]
        if rng.random() < 0.1:
            cells[rng.randrange(len(cells))] = "1" * rng.choice([299, 300, 301])
        arr = pa.array(cells, typ)
        lo = rng.randrange(0, len(cells))
        part = arr.slice(lo, rng.randrange(0, len(cells) - lo + 1))
        chunked = pa.chunked_array([part, arr.slice(0, lo)], typ)
        for col in (arr, part, chunked):
            assert text_cells._no_cell_is_non_finite(col) is definition(col), cells
