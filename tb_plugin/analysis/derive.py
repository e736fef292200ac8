"""Load-time derivations: numbers a producer did not write but the views need.

Runs once per profile right after its reader (in the reader process), so the results are
cached with the tables and requests never recompute them:
- step windows (`step_windows.step_windows`: the producer's, else `ProfilerStep#N` slices);
- the step breakdown when the reader had none: NPU overlap analysis
  (`npu_overlap.steps_from_overlap`) or torch-tb-profiler's GPU priority rule
  (`gpu_breakdown.step_breakdown`);
- the step of each kernel (and operator) from the windows, when the files did not say;
- per-step rows for a whole-run `steps` row when the trace has step windows, and the step
  phases of a trace's Step Trace slices (`step_phases`).
"""
from __future__ import annotations

import numpy as np

from ..lazy import pd
from ..model import Profile
from ..step_categories import NPU_STEP_CATEGORIES, category_names
from ..step_windows import step_windows
from . import step_phases

def assign_steps(starts: np.ndarray, windows: pd.DataFrame) -> pd.array:
    """Step id of each start time (NA outside every window); windows sorted by start."""
    starts = np.asarray(starts)
    if len(windows) == 0 or len(starts) == 0:
        return pd.arrays.IntegerArray(np.zeros(len(starts), np.int64),
                                      np.ones(len(starts), dtype=bool))
    w = windows.sort_values("start_ns")
    ws = w["start_ns"].to_numpy()
    we = w["end_ns"].to_numpy()
    ids = w["step"].to_numpy()
    idx = np.searchsorted(ws, starts, side="right") - 1
    valid = idx >= 0
    inside = np.zeros(len(starts), dtype=bool)
    inside[valid] = starts[valid] < we[idx[valid]]
    vals = np.where(inside, ids[np.clip(idx, 0, None)], 0)
    if vals.dtype.kind not in "iu":  # step ids with NA or as floats: pandas converts them
        out = pd.array(vals, dtype="Int64")
        out[~inside] = pd.NA
        return out
    # Int64 from the values and the NA mask directly (one NA object per row costs seconds
    # on a trace's millions of slices).
    return pd.arrays.IntegerArray(vals.astype(np.int64, copy=False), ~inside)


def complete(profile: Profile) -> None:
    windows = step_windows(profile)
    device = profile.meta.device
    if not profile.has("steps"):
        steps = None
        if device == "npu":
            try:
                from . import npu_overlap
                steps = npu_overlap.steps_from_overlap(
                    profile.table("slices"), profile.table("tracks"),
                    step_windows=windows if len(windows) else None,
                    flows=profile.table("flows"))
            except (ImportError, AttributeError):
                steps = None
            if steps is not None and len(steps):
                if profile.meta.step_categories is None:
                    profile.meta.step_categories = category_names(NPU_STEP_CATEGORIES)
        else:
            try:
                from . import gpu_breakdown
                steps = gpu_breakdown.step_breakdown(profile)
            except (ImportError, AttributeError):
                steps = None
        if steps is not None and len(steps):
            profile.set("steps", steps, keep_extra=True)
    elif (per_step := step_phases.split_whole_run_steps(profile, windows)) is not None:
        profile.set("steps", per_step, keep_extra=True)  # one bar per step of the trace
    elif len(windows):
        steps = profile.table("steps").copy()  # cached tables are read-only memory maps
        missing = (steps["start_ns"] == 0) & (steps["end_ns"] == 0)
        if missing.any():
            w = windows.set_index("step")
            m = steps["step"].map(w["start_ns"])
            e = steps["step"].map(w["end_ns"])
            steps.loc[missing & m.notna(), "start_ns"] = m[missing & m.notna()].astype(np.int64)
            steps.loc[missing & e.notna(), "end_ns"] = e[missing & e.notna()].astype(np.int64)
            profile.set("steps", steps, keep_extra=True)
    if not profile.has("step_phases") and profile.has("slices") \
            and step_phases.may_be_in_trace(profile.arrow_column("slices", "name")):
        phases = step_phases.from_trace(profile.table("slices"))
        if phases is not None:
            profile.set("step_phases", phases)
    if profile.meta.step_categories is None and profile.has("steps"):
        profile.meta.step_categories = [c[3:] for c in profile.table("steps").columns
                                        if c.startswith("bd_")]
    # Steps of kernels / operators the files did not tag: the steps' own windows (device
    # side, as the breakdown defines them) when known, else the host ProfilerStep windows.
    if profile.has("steps"):
        st = profile.table("steps")
        known = st.loc[st["end_ns"] > st["start_ns"], ["step", "start_ns", "end_ns"]]
        if len(known):
            windows = known
    for table in ("kernels", "operators"):
        # (the step column read alone first: on a 1 GB profile loading both tables to find
        # their steps already known was ~0.4 s of the timeline stage)
        if profile.has(table) and len(windows) and _all_missing(profile, table, "step"):
            df = profile.table(table)
            if (df["start_ns"] != 0).any():
                df = df.copy()
                df["step"] = assign_steps(df["start_ns"].to_numpy(), windows)
                profile.set(table, df, keep_extra=True)
    profile.meta.steps_known = [int(s) for s in profile.table("steps")["step"].tolist()] \
        if profile.has("steps") else [int(s) for s in windows["step"].tolist()]


def _all_missing(profile: Profile, table: str, column: str) -> bool:
    """Whether every cell of `column` is missing (read alone: `Profile.arrow_column`)."""
    col = profile.arrow_column(table, column)
    return col.null_count == len(col)


def complete_trace(profile: Profile) -> None:
    """Second load stage (after the views are served): the timeline index.

    Runs in a reader process on the cached entry once the trace tables are there (read in
    the first stage, or now for producers whose views did not need the trace).
    """
    windows = step_windows(profile)
    if len(windows) and profile.has("steps"):
        steps = profile.table("steps")
        if ((steps["start_ns"] == 0) & (steps["end_ns"] == 0)).any():
            complete(profile)  # fills the windows the first stage could not know
    from . import trace_index
    trace_index.build(profile, step_windows(profile))
