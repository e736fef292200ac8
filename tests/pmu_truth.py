"""AI Core PMU truth computed from a kernel_details.csv with the stdlib csv module only (for
the kernel counter tests; independent of the plugin's readers and analysis)."""
from __future__ import annotations

import csv
import math

PIPES = ("mac", "vec", "scalar", "mte1", "mte2", "mte3", "fixpipe")
BOUND_PIPES = ("mac", "vec", "scalar", "mte1", "mte2", "mte3")
CLASS = {"mac": "cube", "vec": "vector", "mte1": "memory", "mte2": "memory", "mte3": "mte3",
         "scalar": "scalar"}


def read(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def num(cell):
    try:
        v = float(str(cell).strip())
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def dur(row):
    return float(row["Duration(us)"].strip())


def pipe(row, p):
    vals = [num(row.get(f"{core}_{p}_ratio")) for core in ("aic", "aiv")]
    vals = [v for v in vals if v is not None]
    return max(vals) if vals else None


def weighted(rows, value):
    """Duration-weighted mean of value(row) over the rows where it is a number."""
    pairs = [(value(r), dur(r)) for r in rows]
    pairs = [(v, d) for v, d in pairs if v is not None]
    if not pairs:
        return None
    return sum(v * d for v, d in pairs) / sum(d for _, d in pairs)


def by_name(rows):
    out = {}
    for r in rows:
        out.setdefault(r["Name"], []).append(r)
    return out


def bound(rows, ratio=0.8):
    means = {p: weighted(rows, lambda r, p=p: pipe(r, p)) for p in BOUND_PIPES}
    means = {p: v for p, v in means.items() if v is not None}
    if not means:
        return None
    classes = {CLASS[p] for p, v in means.items() if v > ratio}
    if not classes:
        return "none"
    return classes.pop() if len(classes) == 1 else "mixed"
