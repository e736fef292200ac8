"""iteration_gap: the device idles between steps (data loading, host work between
iterations). The gap before a step is the time from the last compute kernel of the previous
step to the first of this one (consecutive step ids). Fires when the mean gap is at least
`iteration_gap_pct` of the mean step time. Impact: the mean gap (prefetching data and
moving host work off the critical path hides it).
"""
from __future__ import annotations

import numpy as np

from ...lazy import pd
from ..core import NotApplicable, Rule, us
from . import data_pipeline

ADVICE = ("Overlap input preparation with device work: more DataLoader workers "
          "(num_workers), pin_memory=True and prefetching; for MindSpore raise "
          "num_parallel_workers or use dataset sink mode; move logging, metrics and .item() "
          "synchronizations out of the step boundary.")


def check(ctx):
    ctx.require_kernels()
    k = ctx.compute_kernels
    valid = k["step"].notna().to_numpy(dtype=bool)
    if valid.sum() == 0:
        raise NotApplicable("kernels are not attributed to steps")
    df = pd.DataFrame({"step": k["step"].to_numpy(dtype=np.float64, na_value=np.nan)[valid],
                       "s": k["start_ns"].to_numpy(dtype=np.int64)[valid],
                       "e": (k["start_ns"].to_numpy(dtype=np.int64) + k["dur_ns"].to_numpy(dtype=np.int64))[valid]})
    g = df.groupby("step").agg(s=("s", "min"), e=("e", "max")).sort_index()
    ids = g.index.to_numpy(dtype=np.int64)
    cons = np.flatnonzero(np.diff(ids) == 1)
    if len(cons) == 0:
        raise NotApplicable("needs at least two consecutive steps")
    gaps = g["s"].to_numpy()[cons + 1] - g["e"].to_numpy()[cons]
    gaps = np.maximum(gaps, 0)
    mean_gap = us(gaps.mean())
    if not ctx.avg_step_us:
        raise NotApplicable("no step times")
    pct = mean_gap / ctx.avg_step_us * 100.0
    if pct < ctx.t["iteration_gap_pct"]:
        return []
    w = int(np.argmax(gaps))
    a, b = int(g["e"].to_numpy()[cons[w]]), int(g["s"].to_numpy()[cons[w] + 1])
    evidence = {"mean_gap_us": mean_gap, "max_gap_us": us(gaps.max()), "gap_pct_of_step": pct,
                "avg_step_us": ctx.avg_step_us, "threshold_pct": ctx.t["iteration_gap_pct"],
                "gaps": [{"before_step": int(ids[i + 1]), "gap_us": us(x)} for i, x in zip(cons, gaps)],
                "worst_gap_start_us": us(a), "worst_gap_end_us": us(b)}
    pipeline = data_pipeline.evidence(ctx)  # MindSpore: what the data pipeline says about the gap
    if pipeline is not None:
        evidence["data_pipeline"] = pipeline
    msg = (f"The device idles {mean_gap:,.0f} µs between steps on average ({pct:.1f}% of the "
           f"step time, up to {us(gaps.max()):,.0f} µs before step {int(ids[cons[w] + 1])}).")
    return [ctx.finding("iteration_gap", "iteration_gap", "Long gaps between steps", msg, ADVICE,
                        mean_gap, evidence,
                        [ctx.link("trace", start_us=us(a), end_us=us(b)), ctx.link("overview")])]


RULE = Rule("iteration_gap", "Gaps between iterations", check)
