"""Checks on the cells of text columns (Arrow string arrays or pandas string Series), read
in place from the arrays' offsets and bytes: whether a cell starts or ends with whitespace
(`has_padded_cells`, `may_need_trim`) or with given bytes (`cells_start_with`,
`cells_end_with`), whether the cells hold a byte (`cells_contain`), can be a NULL token or a
number that is not finite; and the two cleanups the CSV reader runs on every column with them
(`_clean_text`: trim, and null the `NULL_TOKENS`; `_skip_non_numbers`: the not-finite cells
of numeric columns become missing, `_gaps_text` says how many).

Separate from reading files (`tolerant`) because these are byte-level shortcuts with their
own exactness argument (each answers as the regex, cast or strip it stands in for;
tests/unit/test_csv_text_cells.py checks them against references), and readers use them on
columns of any origin.

Everything here is vectorized (pyarrow / numpy); no per-row Python on large inputs.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import native

# Cells the producers write for "not applicable" (torch_npu: N/A in the PMU columns of other
# core types; MindSpore: "-" in its average row; blank columns a component lacks): missing
# values, skipped without a warning. `NaN`/`inf` are not among them: a number that is not
# finite marks a broken measurement, so `_skip_non_numbers` counts it.
NULL_TOKENS = ["", "N/A", "NA", "n/a", "None", "null", "-"]


_NULLS = pa.array(NULL_TOKENS, pa.string())
_LONGEST_NULL = max(len(t.encode()) for t in NULL_TOKENS)


def _clean_text(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Trim surrounding whitespace (msprof's trailing tab) and null the N/A tokens, only in
    columns that have padded cells: most columns need no copy at all."""
    if col.null_count == len(col):
        return col
    if not has_padded_cells(col):
        return col
    col = pc.utf8_trim_whitespace(col)
    if not _has_short_cells(col, _LONGEST_NULL):  # no cell can be a N/A token
        return col
    return pc.if_else(pc.is_in(col, value_set=_NULLS), pa.scalar(None, pa.string()), col)


# The bytes RE2's `\s` matches: `[\t\n\f\r ]`, ASCII only (no \v, no U+00A0). A column is
# trimmed when a cell starts or ends with one of them, as `^\s|\s$` finds it; then all of
# its cells are trimmed of Unicode whitespace (`utf8_trim_whitespace`, as `str.strip()`).
_RE2_SPACE = np.zeros(256, bool)
_RE2_SPACE[[9, 10, 12, 13, 32]] = True
_RE2_SPACE_BYTES = _RE2_SPACE.astype(np.uint8).tobytes()


def _text_cells(arr: pa.Array):
    """(data bytes, starts, ends, valid mask or None) of a string / large_string /
    binary array, read in place from its buffers (a sliced array's own cells only)."""
    n = len(arr)
    wide = _wide(arr)
    _, offsets, data = arr.buffers()
    item = np.int64 if wide else np.int32
    off = np.frombuffer(offsets, item, n + 1, arr.offset * np.dtype(item).itemsize)
    buf = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    return buf, off[:-1], off[1:], valid


def _wide(arr) -> bool:
    """Whether a text / binary array's offsets are int64 (large_*) rather than int32."""
    return pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)


def _chunks(col) -> list:
    return col.chunks if isinstance(col, pa.ChunkedArray) else [col]


def has_padded_cells(col) -> bool:
    r"""Whether a cell of a text column starts or ends with whitespace (RE2's `\s`), i.e.
    `pc.any(pc.match_substring_regex(col, r"^\s|\s$"))`, read from the first and last byte
    of each cell. Why: the regex scans every byte of every text column of a large CSV;
    these bytes are ASCII, so a cell's first / last byte is its first / last character."""
    if native.helpers is not None:
        return _native_boundary(col, _RE2_SPACE_BYTES, _RE2_SPACE_BYTES)
    return _boundary_bytes_in(col, _RE2_SPACE, 0) or _boundary_bytes_in(col, _RE2_SPACE, -1)


def cells_start_with(col, first: bytes) -> bool:
    """Whether a present, non-empty cell of a text column (pandas string Series or Arrow
    array) starts with one of the ASCII bytes `first` (read from the offsets)."""
    return _boundary_bytes_in(col, first, 0)


def cells_end_with(col, last: bytes) -> bool:
    """Whether a present, non-empty cell of a text column ends with one of the ASCII bytes
    `last`."""
    return _boundary_bytes_in(col, last, -1)


def cells_contain(col, chars: bytes) -> bool:
    """Whether the bytes of a text column's cells hold one of the ASCII bytes `chars` (the
    bytes of missing cells count too: True means "maybe")."""
    for arr in _chunks(_as_arrow(col)):
        if len(arr) == 0:
            continue
        buf, starts, ends, _ = _text_cells(arr)
        cells = buf[int(starts[0]):int(ends[-1])]
        if len(cells) and np.isin(cells, np.frombuffer(chars, np.uint8)).any():
            return True
    return False


def may_need_trim(col) -> bool:
    """False when no cell of a text column starts or ends with whitespace as
    `utf8_trim_whitespace` / `str.strip()` sees it (ASCII \t-\r, \x1c-\x1f, space, or a
    non-ASCII space: a cell's boundary byte of one of those is "maybe")."""
    return (_boundary_bytes_in(col, _TRIM_FIRST, 0)
            or _boundary_bytes_in(col, _TRIM_LAST, -1))


# The first / last UTF-8 bytes of every character `utf8_trim_whitespace` trims: ASCII 9-13,
# 28-32 and U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
_TRIM_FIRST = bytes([*range(9, 14), *range(28, 33), 0xC2, 0xE1, 0xE2, 0xE3])
_TRIM_LAST = bytes([*range(9, 14), *range(28, 33), *range(0x80, 0x8B), 0x9F, 0xA0, 0xA8,
                    0xA9, 0xAF])


def _as_arrow(col):
    return col if isinstance(col, (pa.Array, pa.ChunkedArray)) else \
        pa.array(col, from_pandas=True)


def _native_boundary(col, first: bytes, last: bytes) -> bool:
    """`_boundary_bytes_in` of both ends at once, in C (`_native.boundary_bytes`): 256-byte
    tables of the marked first / last bytes (b"": that end is not checked)."""
    boundary = native.helpers.boundary_bytes
    for arr in _chunks(_as_arrow(col)):
        if len(arr) == arr.null_count:
            continue
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
                or pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
            arr = arr.cast(pa.string())
        validity, offsets, data = arr.buffers()[:3]
        wide = _wide(arr)
        if boundary(data if data is not None else b"", offsets,
                    validity if validity is not None and arr.null_count else b"",
                    arr.offset, len(arr), wide, first, last):
            return True
    return False


def _table_bytes(chars) -> bytes:
    table = np.zeros(256, np.uint8)
    table[list(chars)] = 1
    return table.tobytes()


def _boundary_bytes_in(col, chars, side: int) -> bool:
    """Whether a present, non-empty cell's first (side 0) or last (-1) byte is one of
    `chars` (bytes, or a 256-entry bool table)."""
    if native.helpers is not None:
        table = chars.astype(np.uint8).tobytes() if isinstance(chars, np.ndarray) \
            else _table_bytes(chars)
        return _native_boundary(col, table if side == 0 else b"", table if side else b"")
    if isinstance(chars, np.ndarray):
        table = chars
    else:
        table = np.zeros(256, bool)
        table[list(chars)] = True
    for arr in _chunks(_as_arrow(col)):
        if len(arr) == arr.null_count:
            continue
        buf, starts, ends, valid = _text_cells(arr)
        live = ends > starts
        if valid is not None:
            live &= valid
        rows = np.flatnonzero(live)
        at = starts[rows] if side == 0 else ends[rows] - 1
        if len(rows) and table[buf[at]].any():
            return True
    return False


def _has_short_cells(col, max_bytes: int) -> bool:
    """Whether a present cell of a text column has at most `max_bytes` bytes."""
    for arr in _chunks(col):
        if len(arr) == arr.null_count:
            continue
        _, starts, ends, valid = _text_cells(arr)
        short = (ends - starts) <= max_bytes
        if (short & valid).any() if valid is not None else short.any():
            return True
    return False


# A cell of only the bytes '+' to '9' (digits, signs, point, and ',' '/') spells no NaN or
# inf: it is a plain decimal, finite unless it has hundreds of digits (a double overflows
# beyond ~1.8e308), or no number at all.
_PLAIN_LOW, _PLAIN_HIGH = ord("+"), ord("9")
_FINITE_DIGITS = 300


def _no_cell_is_non_finite(col) -> bool:
    """True when no cell of a text column can parse to NaN / inf (every byte of the
    column's cells is one of `+,-./0123456789`, and no cell is long enough to overflow);
    False when unsure. A numeric column without such cells needs no float parse here."""
    plain = getattr(native.helpers, "plain_numbers", None)
    for arr in _chunks(col):
        if len(arr) == 0:
            continue
        if plain is not None:  # (in C: the same bytes and lengths, no numpy temporaries)
            _, offsets, data = arr.buffers()[:3]
            if not plain(data if data is not None else b"", offsets, arr.offset, len(arr),
                         _wide(arr), _FINITE_DIGITS):
                return False
            continue
        buf, starts, ends, _ = _text_cells(arr)
        lo, hi = int(starts[0]), int(ends[-1])
        cells = buf[lo:hi]
        if hi > lo and (int((ends - starts).max()) >= _FINITE_DIGITS or cells.min() < _PLAIN_LOW
                        or cells.max() > _PLAIN_HIGH):
            return False
    return True


def _first_cell_is_number(col) -> bool:
    """Whether the first present cell casts to float64 (a text column fails here, at
    once; the cast of a whole column parses every cell before it reports the failure)."""
    for arr in _chunks(col):
        if len(arr) == arr.null_count:
            continue
        first = 0 if arr.null_count == 0 else \
            int(np.argmax(arr.is_valid().to_numpy(zero_copy_only=False)))
        try:
            pc.cast(arr.slice(first, 1), pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False
        return True
    return False


def _skip_non_numbers(table: pa.Table) -> tuple[pa.Table, dict[str, int]]:
    """Make the not-finite cells of numeric columns missing, and count them per column.

    A column is numeric when every cell is a number or missing and at least one is a finite
    number. Its `NaN`, `inf`, `-inf` and overflowing (`1e400`) cells become missing, like
    the `N/A`, `-` and empty ones already are, so no reader can add them into a total (a
    single `inf` would make every sum it reaches infinite); the file's warning says how
    many there were. Text columns (names, shapes) fail the float cast on their first cell,
    so this parses the numeric columns once and little else.
    """
    gaps: dict[str, int] = {}
    cols = {}
    for name, col in zip(table.column_names, table.columns):
        cols[name] = col
        present = len(col) - col.null_count
        if present == 0:
            continue
        # Exact shortcuts: a column with no possibly non-finite cell is left as it is, and
        # a column whose first cell is no number is not numeric.
        if (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)) and (
                _no_cell_is_non_finite(col) or not _first_cell_is_number(col)):
            continue
        try:
            values = pc.cast(col, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        finite = pc.is_finite(values)  # missing stays missing
        n_finite = pc.sum(finite).as_py() or 0
        if 0 < n_finite < present:
            gaps[name] = present - n_finite
            cols[name] = pc.if_else(finite, col, pa.scalar(None, col.type))
    return (pa.table(cols) if gaps else table), gaps


def _gaps_text(gaps: dict[str, int]) -> str:
    total = sum(gaps.values())
    shown = sorted(gaps.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = ", ".join(f"{name} {n}" for name, n in shown[:6])
    more = f", and {len(shown) - 6} more column(s)" if len(shown) > 6 else ""
    return (f"{total} cell(s) of numeric columns are not finite numbers (NaN, inf, -inf);"
            f" they were skipped like N/A, never added into totals: {parts}{more}")
