"""Numbers as the producers write them in their JSON documents (profiler_info, the
communication documents, msprof's and the cluster analysis' JSON), one value at a time:
these documents are small (kilobytes to a few MB), so a scalar helper per value is the
whole cost; tables of numbers go through `us_text` (vectorized) instead.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

import msgspec


def int_or_none(v) -> int | None:
    """An integer given as a number or text ("3", " 3 "); None when it is none."""
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def int64_or_none(v) -> int | None:
    """`int_or_none`, and None beyond the int64 range too (an id that large is damage)."""
    i = int_or_none(v)
    return i if i is not None and -(1 << 63) <= i < (1 << 63) else None


def ms_to_ns(v) -> int:
    """Milliseconds (number or text) to int ns; 0 when missing, not a number or beyond int64
    (no time: damage such as 1e308 ms)."""
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):  # (an integer beyond float's range)
        return 0
    ns = f * 1e6
    if not math.isfinite(ns) or abs(ns) >= 2.0 ** 63:  # no time: damage (1e308 ms)
        return 0
    return int(round(ns))


def number(v) -> float:
    """A number (or its text) as float; NaN when it is none."""
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


# Number tokens that are valid where producers write them but that msgspec cannot decode:
# a bare N/A where a number belongs (some CANN versions), and a number beyond float's range
# (1e400: valid JSON; Python's json gives inf, msgspec refuses it). Quoted, each reads as
# text, which every reader's text-to-number path already takes (no time, not an id) -
# instead of the whole document or chunk failing to decode.
_BARE_NA = re.compile(rb'(?<!")N/A(?!")')
_OUT_OF_RANGE = re.compile(
    rb'(?:^|(?<=[:,\[]))(\s*)(-?(?:\d+(?:\.\d*)?[eE]\+?\d{3,}|\d{309,}\.\d*))'
    rb'(?=\s*(?:[,}\]]|$))')  # (a value of an object or array, or a value alone)


def quote_unreadable_numbers(data: bytes) -> bytes | None:
    """`data` with its bare N/A and out-of-range number tokens quoted; None if it has none."""
    fixed, n_na = _BARE_NA.subn(b'"N/A"', data) if b"N/A" in data else (data, 0)
    n_big = 0

    def quote(m: re.Match) -> bytes:
        nonlocal n_big
        if not math.isinf(float(m.group(2))):  # (1e300 is a float: left as it is)
            return m.group(0)
        n_big += 1
        return m.group(1) + b'"' + m.group(2) + b'"'

    fixed = _OUT_OF_RANGE.sub(quote, fixed)
    return fixed if n_na or n_big else None


def decode_json(decode: Callable[[bytes], Any], data: bytes) -> Any:
    """`decode(data)` (a msgspec decoder's decode); when that fails, once more with the
    unreadable number tokens quoted (`quote_unreadable_numbers`). The first error is raised
    when there is nothing to quote; the second when the quoted text fails too (the damage
    that is left, e.g. the file ends early)."""
    try:
        return decode(data)
    except msgspec.DecodeError:  # (ValidationError included: "Number out of range")
        fixed = quote_unreadable_numbers(data)
        if fixed is None:
            raise
    return decode(fixed)
