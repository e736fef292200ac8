"""Overview: the step time breakdown and the key figures of one profile.

Definitions:
- A step is one row of the `steps` table; its time (`total_us`) is the producer's step
  time (`total_ns`), its breakdown the `bd_<category>` columns, in the order of
  `profile.step_categories()`. A category whose column is missing, or whose value is
  missing for a step, counts 0 for that step. Breakdown categories may overlap or leave
  gaps, depending on the producer's definitions; the overview does not rescale them.
- Average step time and average breakdown are arithmetic means over all steps.
- avg_breakdown_pct: a category's average time as a percentage of the average step time
  (null when the average step time is 0).
All times in microseconds (ns / 1000).
"""
from __future__ import annotations

import numpy as np

from ..lazy import pd
from ..model import Profile
from ..step_categories import step_category_label
from . import step_phases
from .kernels import view_rows


def _steps_frame(profile: Profile) -> tuple[pd.DataFrame, list[str]]:
    steps = profile.table("steps")
    cats = profile.step_categories()
    if len(steps) > 1:
        steps = steps.sort_values("step", kind="stable")
    return steps, cats


def _category_ns(steps: pd.DataFrame, cat: str) -> np.ndarray:
    col = f"bd_{cat}"
    if col not in steps.columns:
        return np.zeros(len(steps), dtype=np.float64)
    values = pd.to_numeric(steps[col], errors="coerce").astype("float64").to_numpy()
    return np.nan_to_num(values, nan=0.0)


def steps(profile: Profile) -> dict:
    """{"categories": [...], "steps": [{"step", "total_us", "breakdown": {cat: us}}]} by step."""
    frame, cats = _steps_frame(profile)
    step_ids = frame["step"].to_numpy().tolist()
    totals = (frame["total_ns"].to_numpy(dtype=np.float64) / 1000.0).tolist()
    per_cat = {c: (_category_ns(frame, c) / 1000.0).tolist() for c in cats}
    out = []
    for i, (sid, total) in enumerate(zip(step_ids, totals)):
        out.append({
            "step": int(sid),
            "total_us": float(total),
            "breakdown": {c: float(per_cat[c][i]) for c in cats},
        })
    return {"categories": list(cats), "steps": out}


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


def summary(profile: Profile) -> dict:
    """Key figures of the profile.

    {"producer", "device", "rank", "world_size", "device_id", "step_count",
     "avg_step_us", "min_step_us", "max_step_us", "categories",
     "category_labels": {cat: display label},
     "avg_breakdown_us": {cat: us}, "avg_breakdown_pct": {cat: pct},
     "kernel_count", "kernel_total_us", "operator_count", "phases", "flops"}
    phases: graph-mode step phases, per step and averaged (`step_phases.summary`); flops:
    `meta.flops` (FLOPs, FLOPS, FLOPS_Utilization[, scopes]).
    kernel_count / kernel_total_us count what the kernel view counts (GPU memcpy / memset
    excluded, see `analysis.kernels`).
    Missing values are None (no steps: averages are None).
    """
    frame, cats = _steps_frame(profile)
    meta = profile.meta
    n = len(frame)
    avg_step = min_step = max_step = None
    avg_bd: dict[str, float | None] = {c: None for c in cats}
    pct: dict[str, float | None] = {c: None for c in cats}
    if n:
        totals = frame["total_ns"].to_numpy(dtype=np.float64) / 1000.0
        avg_step = float(totals.mean())
        min_step = float(totals.min())
        max_step = float(totals.max())
        for c in cats:
            avg_bd[c] = float(_category_ns(frame, c).mean() / 1000.0)
            pct[c] = float(avg_bd[c] / avg_step * 100.0) if avg_step > 0 else None
    kernels = view_rows(profile)
    return {
        "producer": meta.producer,
        "device": meta.device,
        "rank": _py(meta.rank),
        "world_size": _py(meta.world_size),
        "device_id": _py(meta.device_id),
        "step_count": int(n),
        "avg_step_us": avg_step,
        "min_step_us": min_step,
        "max_step_us": max_step,
        "categories": list(cats),
        "category_labels": {c: step_category_label(c) for c in cats},
        "avg_breakdown_us": avg_bd,
        "avg_breakdown_pct": pct,
        "kernel_count": int(len(kernels)),
        "kernel_total_us": float(kernels["dur_ns"].to_numpy(dtype=np.int64).sum() / 1000.0),
        "operator_count": int(len(profile.table("operators"))),
        # Graph-mode step phases (analysis.step_phases.summary), None without them.
        "phases": step_phases.summary(profile),
        # FLOPs as the producer summed them (meta.flops), None when it wrote none.
        "flops": meta.flops,
    }
