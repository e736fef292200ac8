"""Kernel view: device kernel (task) statistics grouped by name, type or core type.

Definitions:
- One *call* is one row of the `kernels` table: one kernel_details / op_summary row on
  Ascend NPU (communication tasks, core_type COMMUNICATION / HCCL, included), one kineto
  kernel event on GPU.
- On GPU profiles (meta device "gpu" or producer "kineto") the view shows real kernels
  only: rows whose core_type is a memory copy or memset (kineto's gpu_memcpy / gpu_memset,
  "Memcpy HtoD", "Memset", ...) are excluded. Communication kernels (NCCL) are kernels and
  stay.
- Per group: calls; total / avg / min / max of the kernel duration; wait_us is the total
  wait time (the NPU "Wait Time", the gap the task waited before starting; 0 when the
  producer has none) and avg_wait_us = wait_us / calls.
- `step` keeps only kernels the reader attributed to that step.
- With AI Core PMU counters, `kernel_counters.table_with_counters` adds each group's counter columns
  (analysis/kernel_counters.py: weighted mean ratios, pipe ratios, bound, Block Num waste).
All times in microseconds (ns / 1000).
"""
from __future__ import annotations

import numpy as np

from ..lazy import pd
from ..model import Profile
from .tables import key_codes

GROUP_KEYS = {"name": "name", "type": "type", "core": "core_type"}
COLUMNS_AFTER_KEY = ["calls", "total_us", "avg_us", "min_us", "max_us", "wait_us", "avg_wait_us"]


def columns(group_by: str) -> list[str]:
    """Output columns of `table(profile, group_by)`."""
    _check_group(group_by)
    return [group_by] + COLUMNS_AFTER_KEY


def _check_group(group_by: str) -> None:
    if group_by not in GROUP_KEYS:
        raise ValueError(f"unknown group_by {group_by!r}; valid: {', '.join(GROUP_KEYS)}")


def is_gpu(profile: Profile) -> bool:
    return profile.meta.device == "gpu" or profile.meta.producer == "kineto"


def _not_memory_op(core_type: pd.Series) -> np.ndarray:
    """Mask of rows whose core_type is not a memcpy / memset (checked on the categories)."""
    if isinstance(core_type.dtype, pd.CategoricalDtype):
        cats = core_type.cat.categories.astype(str).str.lower()
        is_mem = np.asarray(cats.str.contains("memcpy") | cats.str.contains("memset"), dtype=bool)
        codes = core_type.cat.codes.to_numpy()
        return ~np.where(codes >= 0, is_mem[np.maximum(codes, 0)] if len(is_mem) else False, False)
    low = core_type.astype("string").str.lower()
    mem = (low.str.contains("memcpy", regex=False) | low.str.contains("memset", regex=False))
    return ~mem.fillna(False).to_numpy(dtype=bool)


def _step_mask(step_col: pd.Series, step: int) -> np.ndarray:
    return step_col.eq(int(step)).fillna(False).to_numpy(dtype=bool)


def view_rows(profile: Profile, step: int | None = None) -> pd.DataFrame:
    """The kernels table rows the view counts (GPU memory ops removed, step filter applied)."""
    k = profile.table("kernels")
    mask = None
    if is_gpu(profile) and len(k):
        mask = _not_memory_op(k["core_type"])
    if step is not None and len(k):
        sm = _step_mask(k["step"], step)
        mask = sm if mask is None else (mask & sm)
    if mask is not None and not mask.all():
        k = k[mask]
    return k


def table(profile: Profile, group_by: str = "name", step: int | None = None) -> pd.DataFrame:
    """Kernel statistics grouped by `group_by` ("name" | "type" | "core").

    Columns: [<group_by>, calls, total_us, avg_us, min_us, max_us, wait_us, avg_wait_us],
    ordered by total_us descending (ties by key ascending).
    """
    return grouped(profile, group_by, step)[0]


def grouped(profile: Profile, group_by: str = "name", step: int | None = None):
    """`table`, with what it was made from for a caller that adds columns per group
    (kernel_counters.table_with_counters): (table, the group code of each of its rows, the
    view rows, their group codes, the labels of the codes)."""
    _check_group(group_by)
    key = GROUP_KEYS[group_by]
    k = view_rows(profile, step)
    if len(k) == 0:
        return _empty(group_by), np.zeros(0, np.int64), k, np.zeros(0, np.int64), \
            np.zeros(0, dtype=object)
    codes, cats = key_codes(k[key])
    dur = k["dur_ns"].to_numpy(dtype=np.int64)
    wait = k["wait_ns"].to_numpy(dtype=np.int64)
    # Group with numpy on the category codes: one stable sort, then segment reductions
    # (exact int64 sums, no per-row Python).
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
    uniq = sc[starts]
    calls = np.diff(np.r_[starts, len(sc)])
    sd = dur[order]
    total = np.add.reduceat(sd, starts)
    mins = np.minimum.reduceat(sd, starts)
    maxs = np.maximum.reduceat(sd, starts)
    wait_total = np.add.reduceat(wait[order], starts)
    labels = cats[uniq]
    out = pd.DataFrame({
        group_by: pd.array(labels.astype(str), dtype="string"),
        "calls": calls.astype(np.int64),
        "total_us": total / 1000.0,
        "avg_us": total / 1000.0 / calls,
        "min_us": mins / 1000.0,
        "max_us": maxs / 1000.0,
        "wait_us": wait_total / 1000.0,
        "avg_wait_us": wait_total / 1000.0 / calls,
    })
    out = out.sort_values(["total_us", group_by], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True), uniq[out.index.to_numpy()], k, codes, cats


def _empty(group_by: str) -> pd.DataFrame:
    return pd.DataFrame({
        group_by: pd.array([], dtype="string"),
        "calls": np.zeros(0, dtype=np.int64),
        **{c: np.zeros(0, dtype=np.float64) for c in COLUMNS_AFTER_KEY[1:]},
    })


def top(profile: Profile, by: str = "name", n: int = 10, step: int | None = None,
        value: str = "total_us") -> pd.DataFrame:
    """Top-`n` groups by `value` (default total_us) plus one "Other" row for the rest.

    Columns: [<by>, calls, <value>]; "Other" (present only when more than n groups exist)
    sums calls and value of the remaining groups. For pie charts.
    """
    t = table(profile, by, step)
    return top_of(t, by, n, value)


def top_of(t: pd.DataFrame, key: str, n: int, value: str = "total_us",
           other_label: str = "Other") -> pd.DataFrame:
    """Top-`n` rows of an aggregated table `t` by `value` plus an `other_label` row."""
    if n < 0:
        raise ValueError("n must be >= 0")
    cols = [key, "calls", value] if "calls" in t.columns and value != "calls" else [key, value]
    t = t.sort_values(value, ascending=False, kind="stable")
    head = t.iloc[:n][cols]
    rest = t.iloc[n:]
    if len(rest) == 0:
        return head.reset_index(drop=True)
    other = {key: other_label, value: float(rest[value].sum())}
    if "calls" in cols:
        other["calls"] = int(rest["calls"].sum())
    tail = pd.DataFrame([other])[cols]
    out = pd.concat([head, tail], ignore_index=True)
    out[key] = out[key].astype("string")
    return out
