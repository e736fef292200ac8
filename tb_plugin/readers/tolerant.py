"""Parsing quirks shared by every reader: exact decimal timestamps, trailing tabs, `N/A`,
BOM / CRLF, non-UTF-8 bytes, files that are empty or truncated.

Everything here is vectorized (pyarrow / numpy); no per-row Python on large inputs.
"""
from __future__ import annotations

import io
import mmap
import os
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

# Cells the producers write for "not applicable" (torch_npu: N/A in the PMU columns of other
# core types; MindSpore: "-" in its average row; blank columns a component lacks): missing
# values, skipped without a warning. `NaN`/`inf` are not among them: a number that is not
# finite marks a broken measurement, so `_skip_non_numbers` counts it.
NULL_TOKENS = ["", "N/A", "NA", "n/a", "None", "null", "-"]


class InputError(Exception):
    """A file that cannot be used; the message says why in words a user understands."""


def us_text_to_ns(values) -> np.ndarray:
    """Parse microsecond timestamps/durations given as text (or numbers) to int64 ns, exactly.

    Accepts "1700000000000100.250", "1700000000000100.25\\t", '"12.5"', "12", "1.25e3",
    numbers, None/"N/A" (-> 0). Decimal strings are split at the point so no precision is lost
    (a float64 near 1.7e15 µs has 0.25 µs spacing).
    """
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.string())
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if pa.types.is_integer(arr.type):
        return arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64) * 1000
    if pa.types.is_floating(arr.type):
        f = arr.fill_null(0).to_numpy(zero_copy_only=False)
        return np.round(np.nan_to_num(f) * 1000.0).astype(np.int64)
    if not (pa.types.is_binary(arr.type) or pa.types.is_string(arr.type)):
        arr = arr.cast(pa.string())
    # The text is read in place from the array's buffers (32-bit offsets).
    _, offsets, data = arr.buffers()
    off = np.frombuffer(offsets, np.int32, n + 1, arr.offset * 4)
    buf = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    starts, ends = off[:-1].astype(np.int64), off[1:].astype(np.int64)
    if arr.null_count:
        ends = np.where(arr.is_valid().to_numpy(zero_copy_only=False), ends, starts)
    return us_spans_to_ns(buf, starts, ends)


def us_spans_to_ns(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """`us_text_to_ns` of the texts buf[starts[i]:ends[i]] (bytes of one buffer, e.g. an Arrow
    string array's data or the raw JSON values of a trace chunk), vectorized per text shape.

    Why: a trace holds millions of timestamps and durations, and nearly all of them have one
    of a few shapes (the same length and the same position of the point). Texts of one shape
    are one uint8 matrix; their digits are weighted by powers of ten in one product. The few
    texts of another form (an exponent, inner spaces, junk) go through the general parser.
    """
    n = len(starts)
    out = np.zeros(n, np.int64)
    if n == 0:
        return out
    starts = starts.astype(np.int64, copy=True)
    ends = ends.astype(np.int64, copy=True)
    # Strip the quotes and blanks around a value (a JSON string, a CSV cell with a tab).
    if len(buf) == 0:
        return out
    for _ in range(3):
        live = ends > starts
        first = buf[np.minimum(starts, len(buf) - 1)]
        last = buf[ends - 1]
        lead = live & _STRIP[first]
        trail = live & _STRIP[last] & (ends - 1 > starts)
        if not (lead.any() or trail.any()):
            break
        starts += lead
        ends -= trail
    lengths = ends - starts
    slow = lengths > _FAST_WIDTH
    fast = np.flatnonzero((lengths > 0) & ~slow)
    if len(fast):
        lens = lengths[fast]
        widths = np.flatnonzero(np.bincount(lens)).tolist()
        for width in widths:
            rows = fast if len(widths) == 1 else fast[lens == width]
            # One row per text, `width` bytes each: a gather of rows from a window view.
            m = np.lib.stride_tricks.sliding_window_view(buf, width)[starts[rows]]
            _shape_group(m, rows, out, slow)
    if slow.any():
        bad = np.flatnonzero(slow)
        texts = [bytes(buf[s:e]).decode("utf-8", "replace") for s, e in zip(starts[bad], ends[bad])]
        out[bad] = _us_text_to_ns_general(pa.array(texts, pa.string()))
    return out


_FAST_WIDTH = 24
_STRIP = np.zeros(256, bool)
_STRIP[[ord(c) for c in ' \t\r\n"']] = True


def _shape_group(m: np.ndarray, rows: np.ndarray, out: np.ndarray, slow: np.ndarray) -> None:
    """Texts of one length as a uint8 matrix (one row each). When every row has the first
    row's shape (its sign and point columns; the case of nearly every timestamp and duration
    column), the digits are weighed in place; otherwise rows are grouped by point position.
    Rows that are not a plain decimal are marked slow."""
    width = m.shape[1]
    digits = m - 48  # uint8: every byte that is not a digit becomes >= 10
    first = m[0]
    signed = first[0] in (43, 45)  # '+' / '-'
    p = int(np.argmax(first == 46)) if 46 in first else width
    lo = int(signed)
    if (p - lo <= 16
            and (digits[:, lo:p] < 10).all() and (digits[:, p + 1:] < 10).all()
            and (p == width or (m[:, p] == 46).all())
            and (not signed or ((m[:, 0] == 43) | (m[:, 0] == 45)).all())):
        _weigh(digits, m, rows, p, lo, out, slow)
        return
    is_digit = digits < 10
    dot = m == 46
    n_dots = dot.sum(axis=1)
    signs = (m[:, 0] == 45) | (m[:, 0] == 43)
    bad = ~(is_digit | dot)
    bad[:, 0] &= ~signs
    ok = ~bad.any(axis=1) & (n_dots <= 1)
    slow[rows[~ok]] = True
    point = np.where(n_dots == 1, dot.argmax(axis=1), width)
    for p in np.unique(point[ok]).tolist():
        for lo in (0, 1):
            sel = ok & (point == p) & (signs == bool(lo))
            if sel.any():
                _weigh(digits[sel], m[sel], rows[sel], p, lo, out, slow)


def _weigh(digits, m, rows, p: int, lo: int, out, slow) -> None:
    """Rows of one shape: `lo` sign columns, the point at column p (width: none)."""
    if p - lo > 16:  # more whole µs than int64 ns hold
        slow[rows] = True
        return
    ns = _decimal_ns(digits[:, lo:p], digits[:, p + 1:p + 5])
    good = ns >= 0
    if lo:
        ns = np.where(m[:, 0] == 45, -ns, ns)
    if good.all():
        out[rows] = ns
    else:
        out[rows[good]] = ns[good]
        slow[rows[~good]] = True


def _decimal_ns(whole: np.ndarray, frac: np.ndarray) -> np.ndarray:
    """ns of µs digit matrices (uint8 0-9): up to 16 whole µs digits and up to 4 fractional
    digits (the 4th rounds to the nearest ns). -1 where the µs exceed what int64 ns hold.

    The digits are laid out as three groups of eight bytes (whole µs right-aligned in 16,
    then the 4 fractional digits after 4 zeros) and each group becomes its number with the
    SWAR multiply-shift reduction, in uint64 lanes: no per-digit passes."""
    n, k = whole.shape
    t = frac.shape[1]
    z = np.zeros((n, 24), np.uint8)
    z[:, 16 - k:16] = whole
    z[:, 20:20 + t] = frac
    v = z.view("<u8")  # (n, 3); the first digit of a group is its lowest byte
    v = v * np.uint64(10) + (v >> np.uint64(8))
    v = ((v & _LANES) * _MUL_HI + ((v >> np.uint64(16)) & _LANES) * _MUL_LO) >> np.uint64(32)
    v = (v & np.uint64(0xFFFFFFFF)).astype(np.int64)
    us = v[:, 0] * 10 ** 8 + v[:, 1]
    ns = us * 1000 + (v[:, 2] + 5) // 10
    return np.where(us <= _MAX_US_INT, ns, -1)


_LANES = np.uint64(0x000000FF000000FF)
_MUL_HI = np.uint64(100 + (1000000 << 32))
_MUL_LO = np.uint64(1 + (10000 << 32))


def _us_text_to_ns_general(arr) -> np.ndarray:
    n = len(arr)
    s = pc.utf8_trim(arr, characters=' \t\r\n"').fill_null("")
    m = pc.extract_regex(s, r"^(?P<sign>[-+]?)(?P<i>[0-9]*)(?:\.(?P<f>[0-9]*))?$")
    plain = pc.is_valid(m).to_numpy(zero_copy_only=False)
    m = m.fill_null({"sign": "", "i": "0", "f": ""})
    int_digits = pc.utf8_ltrim(pc.struct_field(m, "i"), characters="0")
    int_digits = pc.if_else(pc.equal(int_digits, ""), "0", int_digits)
    # More whole µs than int64 ns can hold: not a time; the float path below gives 0.
    n_digits = pc.utf8_length(int_digits)
    too_big = pc.or_(pc.greater(n_digits, len(_MAX_US)),
                     pc.and_(pc.equal(n_digits, len(_MAX_US)), pc.greater(int_digits, _MAX_US)))
    if pc.any(too_big).as_py():
        plain = plain & ~too_big.to_numpy(zero_copy_only=False)
        int_digits = pc.if_else(too_big, "0", int_digits)
    # Read 4 fractional digits and round the 4th (0.1 ns) to the nearest ns.
    frac4 = pc.utf8_slice_codeunits(pc.utf8_rpad(pc.struct_field(m, "f"), 4, "0"), 0, 4)
    ints = int_digits.cast(pa.int64()).to_numpy(zero_copy_only=False)
    fracs = frac4.cast(pa.int64()).to_numpy(zero_copy_only=False)
    ns = ints * 1000 + (fracs + 5) // 10
    neg = pc.equal(pc.struct_field(m, "sign"), "-").to_numpy(zero_copy_only=False)
    if neg.any():
        ns = np.where(neg, -ns, ns)
    if not plain.all():
        # Exponent forms or junk: float for those rows only; junk -> 0.
        bad_idx = np.nonzero(~plain)[0]
        texts = s.take(pa.array(bad_idx)).to_pylist()
        for i, t in zip(bad_idx, texts):
            try:
                ns[i] = int(round(float(t) * 1000.0))
            except (TypeError, ValueError, OverflowError):
                ns[i] = 0
    return ns.astype(np.int64)


# The largest whole µs whose ns (plus a fraction) fits an int64.
_MAX_US = str(np.iinfo(np.int64).max // 1000 - 1)
_MAX_US_INT = int(_MAX_US)


def us_columns_to_ns(columns: list) -> list[np.ndarray]:
    """`us_text_to_ns` of each of several text columns (pandas string Series or Arrow
    string arrays), parsed in one call over the columns end to end. Why: the parse has a
    fixed cost per call (one pass per text shape), which a small CSV paid once per column;
    each cell is parsed alone, so the joined parse gives every column its own result."""
    arrays = [_string_array(c) for c in columns]
    if len(arrays) < 2 or sum(a.nbytes for a in arrays) > _JOINED_BYTES:
        return [us_text_to_ns(a) for a in arrays]
    ns = us_text_to_ns(pa.concat_arrays(arrays))
    bounds = np.cumsum([0] + [len(a) for a in arrays])
    return [ns[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


_JOINED_BYTES = 1 << 30  # the joined text keeps 32-bit offsets


def _string_array(values) -> pa.Array:
    arr = _as_arrow(values)
    if arr.type != pa.string():
        arr = arr.cast(pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.string())
    return arr


def to_int64(values) -> pd.arrays.IntegerArray:
    """Numbers given as text to nullable int64 (rounded); missing, not finite or beyond the
    int64 range -> <NA> (a count or an id that large is damage, not data)."""
    v = np.round(to_float(values))
    ok = np.abs(v) < 2.0 ** 63
    out = pd.array(np.where(ok, v, 0).astype(np.int64), dtype="Int64")
    out[~ok] = pd.NA
    return out


def to_float(values) -> np.ndarray:
    """Numbers given as text ("12.5\\t", "N/A", "") to float64 (NaN for missing)."""
    s = pd.Series(values)
    if s.dtype.kind in "fiu":
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        return np.where(np.isinf(v), np.nan, v)
    s = s.astype("string")
    if may_need_trim(s):  # (the CSV reader trimmed most columns already)
        s = s.str.strip()
    v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    v[np.isinf(v)] = np.nan  # "inf" is no measurement: never part of a sum
    return v


def _decode_bytes(raw: bytes, rel_path: str) -> tuple[str, list[str]]:
    """Bytes -> text, tolerating BOM and non-UTF-8 bytes (reported as a warning)."""
    warnings: list[str] = []
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        warnings.append(f"{rel_path}: not valid UTF-8 (first bad byte at offset {exc.start});"
                        " undecodable bytes were replaced")
    return text, warnings


def read_csv(path: str, rel_path: str, required: tuple[str, ...] = (),
             max_bytes: int = 8 << 30) -> tuple[pd.DataFrame, list[str]]:
    """Read a profiler CSV into a DataFrame of text columns.

    - header names are stripped (BOM, spaces, trailing tabs);
    - every cell is text with surrounding whitespace and trailing `\t` removed; `N/A`/empty
      become <NA>;
    - quoted fields with embedded CR LF (torch_npu call stacks) are handled by the parser;
    - raises InputError naming the reason if the file is empty, unreadable, too large, or
      lacks a required column; returns (frame, warnings) otherwise.

    Arrow reads the file directly (no copy of it in Python); only a file that is not valid
    UTF-8 is read into memory to be repaired, with a warning.
    """
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}") from None
    if size == 0 or not head.strip(b"\xef\xbb\xbf \t\r\n"):
        raise InputError("file is empty")
    if size > max_bytes:
        raise InputError(f"file is {size / 2**30:.1f} GiB, larger than the {max_bytes / 2**30:.0f}"
                         " GiB limit")
    warnings: list[str] = []
    types = _text_types(head[3:] if head.startswith(b"\xef\xbb\xbf") else head)
    try:
        table = _parse_csv(path, types)
    except pa.ArrowInvalid as exc:
        if "UTF8" not in str(exc) and "utf8" not in str(exc).lower():
            raise InputError(f"not a valid CSV file: {str(exc).splitlines()[0]}") from None
        with open(path, "rb") as fh:
            raw = fh.read()
        text, w = _decode_bytes(raw, rel_path)
        warnings.extend(w)
        del raw
        try:
            table = _parse_csv(io.BytesIO(text.encode("utf-8")), types)
        except pa.ArrowInvalid as exc2:
            raise InputError(f"not a valid CSV file: {str(exc2).splitlines()[0]}") from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc}") from None
    cols = [_clean_header(c) for c in table.column_names]
    table = table.rename_columns(_dedupe(cols))
    missing = [c for c in required if c not in table.column_names]
    if missing:
        raise InputError(f"missing required column(s) {', '.join(missing)}"
                         f" (has: {', '.join(table.column_names[:12])}"
                         f"{'...' if table.num_columns > 12 else ''})")
    table = pa.table({name: _clean_text(col) for name, col in zip(table.column_names,
                                                                  table.columns)})
    table, gaps = _skip_non_numbers(table)
    if gaps:
        warnings.append(f"{rel_path}: {_gaps_text(gaps)}")
    df = table.to_pandas(types_mapper=lambda t: pd.StringDtype() if pa.types.is_string(t)
                         or pa.types.is_large_string(t) else None)
    del table
    pa.default_memory_pool().release_unused()
    return df, warnings


def _parse_csv(source, types: dict) -> pa.Table:
    if isinstance(source, str) and not source.isascii():
        try:
            source.encode("utf-8")
        except UnicodeEncodeError:  # a non-UTF-8 file name: Arrow opens UTF-8 names only
            with open(source, "rb") as fh:
                return _parse_csv(fh, types)
    table = _arrow_read_csv(source, types, _block_bytes(source))
    return pa.table({name: _as_text(col) for name, col in zip(table.column_names,
                                                             table.columns)})


# Arrow's block size: 4 MiB blocks parse a large file fastest here (several blocks at once
# in Arrow's threads, each small enough for the caches). But where a block ends right after
# a CR byte, Arrow (26.0) drops the LF of a quoted CR LF (torch_npu's shapes and call stacks),
# so the cells would depend on where the blocks end: `_block_bytes` picks a size at which
# no block does.
_BLOCK_BYTES = 4 << 20
_BLOCK_TRIES = 4096


def _block_bytes(source) -> int:
    """Arrow's block size for this file: from `_BLOCK_BYTES` up, the first at which no block
    ends right after a CR byte (blocks are read at multiples of the size: a check of one
    byte per block, no scan of the file); one block for the whole file when none is found
    within `_BLOCK_TRIES` sizes."""
    try:
        if isinstance(source, str):
            size = os.path.getsize(source)
            if size <= _BLOCK_BYTES:
                return _BLOCK_BYTES
            with open(source, "rb") as fh, mmap.mmap(fh.fileno(), 0,
                                                     access=mmap.ACCESS_READ) as mm:
                # (no CR, the usual case outside torch_npu: found by memchr)
                return _BLOCK_BYTES if mm.find(b"\r") < 0 else _cr_safe_block(mm)
        view = source.getbuffer()  # an in-memory file (repaired text)
        try:
            return _BLOCK_BYTES if len(view) <= _BLOCK_BYTES else _cr_safe_block(view)
        finally:
            view.release()
    except (OSError, ValueError, AttributeError):
        return _BLOCK_BYTES


def _cr_safe_block(buf) -> int:
    """`_block_bytes` of a buffer larger than `_BLOCK_BYTES` (its numpy view is gone when
    this returns, so the caller may close or release the buffer)."""
    data = np.frombuffer(buf, np.uint8)
    size = len(data)
    for block in range(_BLOCK_BYTES, _BLOCK_BYTES + _BLOCK_TRIES):
        if not (data[block - 1:size - 1:block] == 13).any():  # the last byte of each block
            return block
    return size + 1


def _arrow_read_csv(source, types: dict, block_size: int) -> pa.Table:
    return pacsv.read_csv(
        source,
        read_options=pacsv.ReadOptions(block_size=block_size),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=types, strings_can_be_null=True, null_values=NULL_TOKENS,
            auto_dict_encode=False, quoted_strings_can_be_null=True))


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


def _text_cells(arr: pa.Array):
    """(data bytes, starts, ends, valid mask or None) of a string / large_string /
    binary array, read in place from its buffers (a sliced array's own cells only)."""
    n = len(arr)
    wide = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    _, offsets, data = arr.buffers()
    item = np.int64 if wide else np.int32
    off = np.frombuffer(offsets, item, n + 1, arr.offset * np.dtype(item).itemsize)
    buf = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    return buf, off[:-1], off[1:], valid


def _chunks(col) -> list:
    return col.chunks if isinstance(col, pa.ChunkedArray) else [col]


def has_padded_cells(col) -> bool:
    r"""Whether a cell of a text column starts or ends with whitespace (RE2's `\s`), i.e.
    `pc.any(pc.match_substring_regex(col, r"^\s|\s$"))`, read from the first and last byte
    of each cell. Why: the regex scans every byte of every text column of a large CSV;
    these bytes are ASCII, so a cell's first / last byte is its first / last character."""
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


def _boundary_bytes_in(col, chars, side: int) -> bool:
    """Whether a present, non-empty cell's first (side 0) or last (-1) byte is one of
    `chars` (bytes, or a 256-entry bool table)."""
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
    for arr in _chunks(col):
        if len(arr) == 0:
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


def _text_types(data: bytes) -> dict:
    """Read every column as text: inferring float64 first would lose the ns digits of
    16+3-digit µs timestamps (casting the double back to text cannot restore them)."""
    import csv

    end = data.find(b"\n")
    line = data[: end if end >= 0 else len(data)].decode("utf-8", "replace").rstrip("\r")
    try:
        names = next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return {}
    return {n: pa.string() for n in names}


def _as_text(col: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        return col
    if pa.types.is_null(col.type):
        return pa.chunked_array([pa.nulls(len(col), pa.string())])
    return pc.cast(col, pa.string())


_HEADER_JUNK = re.compile(r"^[\ufeff\s]+|[\s\t]+$")


def _clean_header(name: str) -> str:
    return _HEADER_JUNK.sub("", name)


def _dedupe(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            out.append(f"{n}.{seen[n]}")
        else:
            seen[n] = 0
            out.append(n)
    return out


def read_json_file(path: str, max_bytes: int = 256 << 20):
    """Small JSON documents (profiler_info, communication.json): parsed with msgspec.

    Raises InputError with the reason (empty, truncated, invalid at byte N, too large).
    """
    import msgspec

    try:
        size = os.path.getsize(path)
        if size == 0:
            raise InputError("file is empty")
        if size > max_bytes:
            raise InputError(f"file is {size / 2**20:.0f} MiB, larger than the"
                             f" {max_bytes / 2**20:.0f} MiB limit for this kind of file")
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if not raw.strip():
        raise InputError("file is empty")
    try:
        return msgspec.json.decode(raw)
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply") from None
    except msgspec.DecodeError as exc:
        fixed = re.sub(rb'(?<!")N/A(?!")', b'"N/A"', raw)
        try:
            return msgspec.json.decode(fixed)
        except msgspec.DecodeError:
            raise InputError(f"invalid JSON: {exc}") from None
