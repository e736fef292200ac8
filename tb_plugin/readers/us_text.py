"""Numbers given as text, to numbers: microsecond times and durations to exact int64 ns
(`us_text_to_ns`; `us_spans_to_ns` over the texts of one byte buffer; `us_columns_to_ns` for
several columns in one call), and other numbers to float64 / nullable Int64 (`to_float`,
`to_int64`).

Separate from reading files (`tolerant`) because every source of text uses it: CSV columns,
the raw JSON values of trace chunks (`trace_builder`), the µs values of SQLite exports. Its core
is the exact decimal parse: a 16+3-digit µs timestamp does not fit a float64, so its digits are
weighed as integers, all texts of one shape at once.

Everything here is vectorized (pyarrow / numpy); no per-row Python on large inputs.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .text_cells import _as_arrow, may_need_trim

from .native import helpers as _native

_native_us_to_ns = _native.us_to_ns if _native is not None else None


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
    string array's data or the raw JSON values of a trace chunk).

    With the readers' compiled helpers (`_native.us_to_ns`), plain decimals are parsed there
    in one pass and only the other texts here; without them, all here
    (`_us_spans_numpy`): the same numbers either way."""
    if _native_us_to_ns is None or len(starts) == 0 or len(buf) == 0:
        return _us_spans_numpy(buf, starts, ends)
    starts = np.ascontiguousarray(starts, np.int64)
    ends = np.ascontiguousarray(ends, np.int64)
    ns, slow = _native_us_to_ns(np.ascontiguousarray(buf, np.uint8), starts, ends)
    out = np.frombuffer(ns, np.int64)
    rows = np.flatnonzero(np.frombuffer(slow, np.bool_))
    if len(rows):
        out[rows] = _us_spans_numpy(buf, starts[rows], ends[rows])
    return out


def _us_spans_numpy(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """`us_spans_to_ns` in numpy, vectorized per text shape.

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


def float_to_int64(values, scale: float = 1.0) -> np.ndarray:
    """Numbers (float; NaN for missing) times `scale`, rounded to int64; missing, not finite
    or beyond int64 -> 0 (no count, no time: damage such as 1e300). numpy's own cast gives
    int64's minimum for those, without a word."""
    x = np.asarray(values, np.float64) * scale
    ok = np.isfinite(x) & (np.abs(x) < 2.0 ** 63)
    return np.where(ok, np.round(np.where(ok, x, 0.0)), 0.0).astype(np.int64)


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
