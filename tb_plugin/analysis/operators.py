"""Operator view: framework operator statistics grouped by name (and input shapes), and the
call stacks of one group.

Definitions:
- One *call* is one row of the `operators` table: one framework operator instance, at every
  nesting level (an op called inside another op is counted in both names' groups). For
  kineto the reader builds these rows as torch-tb-profiler 0.4.3 does (same-name nested
  calls are one call, launch calls are not self time; docs/exactness.md).
- host_self_us / host_total_us: summed host (CPU) self / total time of the calls; self time
  excludes child operators, total includes them. As in the PyTorch profiler, a total time is
  summed over every call, so an op that recursively calls itself counts nested time twice.
- device_self_us / device_total_us: summed device (kernel) time launched by the calls,
  without / with children (filled by the readers or by `analysis.derive`).
- group_by "name" groups by operator name; "name_shape" by (name, input_shapes), where an
  empty input_shapes string is a group of its own ("no shapes recorded").
- Default order: device_self_us descending when the profile has any device time, else
  host_self_us descending; ties by name, then input shapes, ascending.
- Stacks: the calls of one group, grouped by identical call stack text (frames separated by
  "\\n"; "" = no stack recorded), most calls first.
All times in microseconds (ns / 1000).
"""
from __future__ import annotations

import numpy as np
import pyarrow.compute as pc

from ..lazy import pd
from ..model import Profile
from .tables import key_codes

GROUPS = ("name", "name_shape")
TIME_COLUMNS = ("host_self", "host_total", "device_self", "device_total")


def columns(group_by: str) -> list[str]:
    """Output columns of `table(profile, group_by)`."""
    _check_group(group_by)
    keys = ["name", "input_shapes"] if group_by == "name_shape" else ["name"]
    return keys + ["calls"] + [f"{c}_us" for c in TIME_COLUMNS]


def _check_group(group_by: str) -> None:
    if group_by not in GROUPS:
        raise ValueError(f"unknown group_by {group_by!r}; valid: {', '.join(GROUPS)}")


def has_device_time(profile: Profile) -> bool:
    """Whether any operator call has device time. Two columns, read from the cache file
    alone (`arrow_column`): the operator view asks it of every span it opens, and the
    whole table (call stacks included) was ~4 ms of TensorBoard's first answer there."""
    if not profile.has("operators"):
        return False
    for col in ("device_self_ns", "device_total_ns"):
        # (the largest value, NaN and nulls aside: comparing with a Python 0 would make an
        # Arrow scalar of it, for which pyarrow imports pandas: lazy.py)
        top = pc.max(profile.arrow_column("operators", col)).as_py()
        if top is not None and top > 0:
            return True
    return False


def default_sort(profile: Profile) -> str:
    """The default sort of the operator table, as a `tables.apply` sort string."""
    return "-device_self_us" if has_device_time(profile) else "-host_self_us"


def _aggregate(ops: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Calls and summed times per group of `keys`, the groups in the order of their first
    call (as pandas' `groupby(sort=False)` gives them), with numpy on the key codes: one
    stable sort and segment sums (exact int64), no groupby (~2 ms a table)."""
    codes, labels = zip(*(key_codes(ops[key]) for key in keys))
    width = len(labels[1]) if len(keys) > 1 else 1
    group = codes[0] * width + (codes[1] if len(keys) > 1 else 0)
    order = np.argsort(group, kind="stable")
    sorted_group = group[order]
    starts = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]])
    by_first_call = np.argsort(order[starts], kind="stable")  # (a run's first row: its first call)
    starts_in_order = starts[by_first_call]
    ids = sorted_group[starts_in_order]
    ends = np.r_[starts[1:], len(sorted_group)][by_first_call]
    out = {}
    for i, key in enumerate(keys):
        level = ids // width if i == 0 else ids % width
        out[key] = pd.array(labels[i][level].astype(str), dtype="string")
    out["calls"] = (ends - starts_in_order).astype(np.int64)
    for c in TIME_COLUMNS:
        sums = np.add.reduceat(ops[f"{c}_ns"].to_numpy(dtype=np.int64)[order], starts)
        out[f"{c}_us"] = sums[by_first_call] / 1000.0
    return pd.DataFrame(out)


def _filtered(profile: Profile, step: int | None) -> pd.DataFrame:
    ops = profile.table("operators")
    if step is not None and len(ops):
        ops = ops[ops["step"].eq(int(step)).fillna(False).to_numpy(dtype=bool)]
    return ops


def table(profile: Profile, group_by: str = "name", step: int | None = None) -> pd.DataFrame:
    """Operator statistics grouped by "name" or "name_shape".

    Columns: [name, (input_shapes,) calls, host_self_us, host_total_us, device_self_us,
    device_total_us], in the default order (see module docstring).
    """
    _check_group(group_by)
    keys = ["name", "input_shapes"] if group_by == "name_shape" else ["name"]
    ops = _filtered(profile, step)
    if len(ops) == 0:
        return pd.DataFrame({
            **{k: pd.array([], dtype="string") for k in keys},
            "calls": np.zeros(0, dtype=np.int64),
            **{f"{c}_us": np.zeros(0) for c in TIME_COLUMNS},
        })
    out = _aggregate(ops, keys)
    first = "device_self_us" if has_device_time(profile) else "host_self_us"
    return out.sort_values([first] + keys, ascending=[False] + [True] * len(keys),
                           kind="stable").reset_index(drop=True)


def _equals(series: pd.Series, value: str) -> np.ndarray:
    """Mask of rows whose text equals `value` (missing counts as ""), via the codes."""
    codes, labels = key_codes(series)
    hit = np.flatnonzero(labels == value)
    if len(hit) == 0:
        return np.zeros(len(series), dtype=bool)
    return np.isin(codes, hit)


def stacks(profile: Profile, name: str, input_shapes: str | None = None,
           step: int | None = None) -> list[dict]:
    """Call stacks of the operator group `name` (and `input_shapes` when given).

    Returns [{"stack": str, "calls": int, "host_self_us": float, "device_self_us": float}],
    grouped by distinct stack text, most calls first (ties: more host self time first, then
    stack text). Empty list when no call matches.
    """
    ops = _filtered(profile, step)
    if len(ops) == 0:
        return []
    mask = _equals(ops["name"], name)
    if input_shapes is not None:
        mask = mask & _equals(ops["input_shapes"], input_shapes)
    sel = ops[mask]
    if len(sel) == 0:
        return []
    agg = _aggregate(sel, ["call_stack"])
    agg = agg.sort_values(["calls", "host_self_us", "call_stack"],
                          ascending=[False, False, True], kind="stable")
    return [
        {"stack": str(s), "calls": int(c), "host_self_us": float(h), "device_self_us": float(d)}
        for s, c, h, d in zip(agg["call_stack"], agg["calls"], agg["host_self_us"],
                              agg["device_self_us"])
    ]
