"""Graph-mode step phases: the gap before forward, forward + backward, the tail, and the
gradient-reduction segments of every step, and their averages and shares as MindInsight's
step-trace summary shows them (docs/formats.md §2.21, §2.23; ascend_tools_reference §5).

Definitions:
- The `step_phases` table (schema.SCHEMAS) holds one row per phase of a step; readers fill
  it from step_trace_raw (MindSpore <= 2.3) or msprof step_trace_*.csv; `from_trace` makes
  the same rows from a trace's Step Trace slices (`Iteration n`, `FP_BP Time n`,
  `Iteration Refresh n`, `Reduce_n_k`) when no reader did (derive.py calls it).
- iteration_interval = FP start - step start (data wait / host gap; msprof's Data Aug
  Bound when iterations are back to back), fp_and_bp = BP end - FP start, tail = step end -
  BP end; a step's total is their sum. Reduce segments overlap fp_and_bp / tail and are not
  part of the total.
- Averages: the producer's own average row (step AVERAGE_STEP) when it wrote one, else the
  arithmetic mean over steps; a reduce segment's average is over the steps that have it,
  its offset the mean of (segment start - step start). Shares are a phase's average as a
  percentage of the average total, rounded to 2 decimals like MindInsight.
All times in the answer are microseconds.
"""
from __future__ import annotations

import re

import numpy as np

from ..lazy import pd
from ..model import Profile
from ..schema import AVERAGE_STEP
from . import name_text

MAIN_PHASES = ("iteration_interval", "fp_and_bp", "tail")
PHASE_LABELS = {"iteration_interval": "Iteration interval (data wait)",
                "fp_and_bp": "Forward + backward", "tail": "Tail", "reduce": "Reduce"}
_TRACE_NAME = re.compile(r"^(Iteration|FP_BP Time|Iteration Refresh) (\d+)$|^Reduce_(\d+)_(\d+)$")
# An iteration's own slice: without one a trace has no step phases (`from_trace`).
_ITERATION_NAME = re.compile(r"^Iteration \d+$")
# Steps beyond this are not listed one by one (the averages still cover all of them).
MAX_STEPS = 2000


def may_be_in_trace(names) -> bool:
    """Whether a trace's slice names (an Arrow column) include `Iteration n`, without which
    `from_trace` finds nothing: tested on the distinct names only, before the slices are
    loaded as a frame."""
    _, values = name_text.dictionary_parts(names)
    if len(values) == 0:
        return False
    import pyarrow.compute as pc

    return bool(pc.any(pc.match_substring_regex(values, _ITERATION_NAME.pattern)).as_py())


def from_trace(slices: pd.DataFrame) -> pd.DataFrame | None:
    """step_phases rows from Step Trace slices of a trace (msprof / CANN timelines), or
    None when it has no `Iteration n` slices with their `FP_BP Time n`."""
    if len(slices) == 0:
        return None
    names = slices["name"]
    if isinstance(names.dtype, pd.CategoricalDtype) and \
            pd.api.types.is_string_dtype(names.cat.categories.dtype):
        # Every pattern alternative is anchored (^): search finds what match does. The
        # categories are tested at Arrow speed (hundreds of thousands of trace names).
        cats = names.cat.categories
        hit = name_text.category_mask(cats, _TRACE_NAME.pattern)
        wanted = [str(c) for c in name_text.text(cats).filter(hit).to_pylist()]
        codes = names.cat.codes.to_numpy()
        rows = np.where(codes >= 0, hit[np.maximum(codes, 0)] if len(hit) else False, False)
    else:
        cats = names.cat.categories if hasattr(names, "cat") else pd.Index(names.unique())
        wanted = [c for c in cats if isinstance(c, str) and _TRACE_NAME.match(c)]
        rows = None
    if not any(_ITERATION_NAME.match(c) for c in wanted):
        return None
    sub = slices[names.isin(wanted).to_numpy() if rows is None else rows]
    by: dict[int, dict] = {}
    reduces = []
    for name, start, dur in zip(sub["name"].astype(str), sub["start_ns"].to_numpy(),
                                sub["dur_ns"].to_numpy()):
        m = _TRACE_NAME.match(name)
        if m.group(1):
            by.setdefault(int(m.group(2)), {}).setdefault(m.group(1), (int(start), int(dur)))
        else:
            reduces.append((int(m.group(3)), f"Reduce {m.group(4)}", int(start), int(dur)))
    rows = []
    for step, parts in sorted(by.items()):
        it, fpbp = parts.get("Iteration"), parts.get("FP_BP Time")
        if it is None or fpbp is None:
            continue
        start, end = it[0], it[0] + it[1]
        fp, bp = fpbp[0], fpbp[0] + fpbp[1]
        rows += [(step, "iteration_interval", "", start, max(fp - start, 0)),
                 (step, "fp_and_bp", "", fp, fpbp[1]),
                 (step, "tail", "", bp, max(end - bp, 0))]
    steps = {r[0] for r in rows}
    rows += [(s, "reduce", n, st, d) for s, n, st, d in reduces if s in steps]
    if not rows:
        return None
    df = pd.DataFrame(rows, columns=["step", "phase", "name", "start_ns", "dur_ns"])
    return df.sort_values(["step", "start_ns"], kind="stable").reset_index(drop=True)


def _pct(part: float, total: float) -> float | None:
    return round(part / total * 100.0, 2) if total > 0 else None


def summary(profile: Profile) -> dict | None:
    """The overview's `phases`: None without step_phases, else
    {"labels": {phase: label}, "steps": [{"step", "total_us", "start_us",
      "phases": [{"phase", "name", "offset_us", "dur_us"}]}], "steps_total": n,
     "average": {"total_us", "iteration_interval_us", "fp_and_bp_us", "tail_us",
       "iteration_interval_pct", "fp_and_bp_pct", "tail_pct",
       "reduce": [{"name", "offset_us", "dur_us", "steps"}]}, "average_source":
       "producer" | "computed"}
    offset_us is a phase's start relative to its step's start."""
    if not profile.has("step_phases"):
        return None
    t = profile.table("step_phases")
    step = t["step"].to_numpy(np.int64)
    phase = t["phase"].astype(str).to_numpy()
    name = t["name"].astype(str).to_numpy()
    start = t["start_ns"].to_numpy(np.int64)
    dur = t["dur_ns"].to_numpy(np.int64)
    df = pd.DataFrame({"step": step, "phase": phase, "name": name, "start": start, "dur": dur})
    main = df[df["phase"].isin(MAIN_PHASES)]
    step_start = main.groupby("step")["start"].min()
    step_total = main.groupby("step")["dur"].sum()
    df["offset"] = df["start"] - df["step"].map(step_start).fillna(0).astype(np.int64)
    real = df[df["step"] != AVERAGE_STEP]
    avg_rows = df[df["step"] == AVERAGE_STEP]
    source = "producer" if len(avg_rows) else "computed"
    basis = avg_rows if len(avg_rows) else real
    n_steps = int(real["step"].nunique())
    per_phase = basis[basis["phase"].isin(MAIN_PHASES)].groupby(["step", "phase"])["dur"].sum()
    per_phase = per_phase.unstack("phase").reindex(columns=list(MAIN_PHASES)).fillna(0)
    means = {p: float(per_phase[p].mean()) / 1000.0 if len(per_phase) else 0.0
             for p in MAIN_PHASES}
    total = float(sum(means.values()))
    red = basis[basis["phase"] == "reduce"].groupby("name", sort=False).agg(
        offset=("offset", "mean"), dur=("dur", "mean"), steps=("step", "nunique"))
    red = red.sort_values("offset", kind="stable")
    average = {"total_us": total, **{f"{p}_us": means[p] for p in MAIN_PHASES},
               **{f"{p}_pct": _pct(means[p], total) for p in MAIN_PHASES},
               "reduce": [{"name": str(n), "offset_us": float(r.offset) / 1000.0,
                           "dur_us": float(r.dur) / 1000.0, "steps": int(r.steps)}
                          for n, r in red.iterrows()]}
    out_steps = []
    for sid, g in real.groupby("step", sort=True):
        if len(out_steps) >= MAX_STEPS:
            break
        out_steps.append({
            "step": int(sid), "total_us": float(step_total.get(sid, 0)) / 1000.0,
            "start_us": float(step_start.get(sid, 0)) / 1000.0,
            "phases": [{"phase": p, "name": n, "offset_us": float(o) / 1000.0,
                        "dur_us": float(d) / 1000.0}
                       for p, n, o, d in zip(g["phase"], g["name"], g["offset"], g["dur"])]})
    return {"labels": dict(PHASE_LABELS), "steps": out_steps, "steps_total": n_steps,
            "average": average, "average_source": source}


def split_whole_run_steps(profile: Profile, windows: pd.DataFrame) -> pd.DataFrame | None:
    """Per-step rows for a `steps` table that is one whole-run row (MindSpore 2.x graph mode
    writes step_trace_time.csv with a single Step 0 row) when the trace has windows of two or
    more steps: the same NPU breakdown computed per step from the trace's Overlap Analysis
    events (npu_overlap). None when that does not apply."""
    if not profile.has("steps") or len(windows) < 2:
        return None
    steps = profile.table("steps")
    if len(steps) != 1 or int(steps["step"].iloc[0]) != 0:
        return None
    from . import npu_overlap
    try:
        per_step = npu_overlap.steps_from_overlap(
            profile.table("slices"), profile.table("tracks"), step_windows=windows,
            flows=profile.table("flows"))
    except (KeyError, ValueError):
        return None
    if per_step is None or len(per_step) < 2:
        return None
    return per_step
