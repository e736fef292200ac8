"""Numbers as the producers write them in their JSON documents (profiler_info, the
communication documents, msprof's and the cluster analysis' JSON), one value at a time:
these documents are small (kilobytes to a few MB), so a scalar helper per value is the
whole cost; tables of numbers go through `us_text` (vectorized) instead.
"""
from __future__ import annotations

import math


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
