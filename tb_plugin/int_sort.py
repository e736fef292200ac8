"""`lexsort`: numpy's `np.lexsort` for integer keys, the same permutation, faster on trace data.

Why: the trace's slices are sorted by (track, start, -duration) and the timeline index by
(track, depth, start); `np.lexsort` makes one stable pass per key over all rows (0.35 s for
the 1.1M slices of a 300 MB trace, 1.5 s at 1 GB). Here the leading keys that fit together
in 63 bits are packed into one int64 (each shifted to start at 0: an order-preserving
encoding of the tuple) and sorted by one stable argsort, which is timsort for int64: the
events of a trace come nearly in time order, so it finds long runs (0.02 s for the same 1.1M
slices). Rows whose packed keys tie are then ordered by the remaining keys alone. Both sorts
are stable, so the result is exactly `np.lexsort(keys)`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

_PACK_BITS = 63


def lexsort(keys: Sequence[np.ndarray]) -> np.ndarray:
    """`np.lexsort(keys)`: the indices sorting by the last key, then the one before, ...
    (stable). Keys that are not integers, or too wide to pack, go to `np.lexsort`."""
    keys = [np.asarray(k) for k in keys]
    if not keys or len(keys[0]) < 2:
        return np.lexsort(keys) if keys else np.zeros(0, np.intp)
    packed = None
    bits = 0
    used = 0
    for key in reversed(keys):  # the primary key first
        if key.dtype.kind not in "iu":
            break
        lo, hi = int(key.min()), int(key.max())
        width = (hi - lo).bit_length()
        if bits + width > _PACK_BITS or hi >= 1 << 63:
            break
        # key - lo is in [0, 2^63): exact in int64 arithmetic even where key - lo would
        # overflow on the way (two's complement gives the representable true result)
        part = key.astype(np.int64) - np.int64(lo)
        packed = part if packed is None else (packed << np.int64(width)) | part
        bits += width
        used += 1
    if used == 0:
        return np.lexsort(keys)
    order = np.argsort(packed, kind="stable")
    rest = keys[:len(keys) - used]
    if not rest:
        return order
    ordered = packed[order]
    tied = np.flatnonzero(ordered[1:] == ordered[:-1])
    if len(tied) == 0:
        return order
    in_tie = np.zeros(len(order), bool)
    in_tie[tied] = True
    in_tie[tied + 1] = True
    pos = np.flatnonzero(in_tie)
    # equal packed values are adjacent in sorted order: a new group where the value changes
    group = np.r_[0, np.cumsum(ordered[pos[1:]] != ordered[pos[:-1]])]
    rows = order[pos]
    sub = np.lexsort([k[rows] for k in rest] + [group])
    order[pos] = rows[sub]
    return order
