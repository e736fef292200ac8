"""host_dispatch: the device idles because the host does not dispatch ops fast enough.

Input: the task-queue thread's `Dequeue@<op>` events (torch_npu's task queue) and the steps'
Free time. A gap between consecutive Dequeue events of one step longer than
`dispatch_gap_us` is a dispatch stall; the rule fires when the stalls add up to at least
`dispatch_min_gap_pct` of the step time. Impact: the stalled time per step, at most the
device's Free time per step (the device can only gain what it idles).
"""
from __future__ import annotations

import numpy as np

from ...analysis.derive import assign_steps
from ..core import NotApplicable, Rule, us

ADVICE = ("Make dispatch cheaper than execution: raise the batch size so each op does more work; "
          "bind the process to CPU cores (taskset / numactl) and set the CPU to performance mode; "
          "use NPU affinity APIs and fused optimizers (torch_npu.optim.NpuFused*) and fused "
          "operators to launch fewer ops.")


def check(ctx):
    ctx.require_npu()
    ctx.require_trace()
    deq = ctx.slices_matching(r"^Dequeue@", kinds=("host",))
    if len(deq) < 2:
        raise NotApplicable("no task-queue Dequeue events (task queue off, or Level0 trace)")
    order = np.argsort(deq["start_ns"].to_numpy(), kind="stable")
    start = deq["start_ns"].to_numpy(dtype=np.int64)[order]
    end = start + deq["dur_ns"].to_numpy(dtype=np.int64)[order]
    if ctx.step_count and (ctx.steps["end_ns"] > ctx.steps["start_ns"]).any():
        w = ctx.steps.loc[ctx.steps["end_ns"] > ctx.steps["start_ns"], ["step", "start_ns", "end_ns"]]
        step = assign_steps(start, w).to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        step = np.zeros(len(start))
    run_end = np.maximum.accumulate(end)
    gap = start[1:] - run_end[:-1]
    same = (step[1:] == step[:-1]) & ~np.isnan(step[1:])
    big = same & (gap > ctx.t["dispatch_gap_us"] * 1000)
    steps_n = max(ctx.step_count, 1)
    total_gap_us = us(gap[big].sum())
    per_step_us = total_gap_us / steps_n
    pct = per_step_us / ctx.avg_step_us * 100.0 if ctx.avg_step_us else None
    free = ctx.category_ns("free")
    free_per_step_us = float(free.mean() / 1000.0) if free is not None else None
    free_pct = [round(float(f) / float(t) * 100.0, 2) if t else None
                for f, t in zip(free, ctx.steps["total_ns"].to_numpy())] if free is not None else None
    if not big.any() or pct is None or pct < ctx.t["dispatch_min_gap_pct"]:
        return []
    worst = int(np.flatnonzero(big)[np.argmax(gap[big])])
    w0, w1 = int(run_end[worst]), int(start[worst + 1])
    impact = per_step_us if free_per_step_us is None else min(per_step_us, free_per_step_us)
    evidence = {"gap_threshold_us": ctx.t["dispatch_gap_us"], "gap_count": int(big.sum()),
                "gaps_per_step": float(big.sum()) / steps_n, "total_gap_us": total_gap_us,
                "gap_per_step_us": per_step_us, "gap_pct_of_step": pct,
                "worst_gap_us": us(w1 - w0), "worst_gap_start_us": us(w0),
                "worst_gap_end_us": us(w1), "dequeue_events": int(len(deq)),
                "free_per_step_us": free_per_step_us, "free_pct_per_step": free_pct}
    msg = (f"{int(big.sum())} gaps over {ctx.t['dispatch_gap_us']:,.0f} µs between task-queue "
           f"Dequeue events ({per_step_us:,.0f} µs per step, {pct:.1f}% of the step); the worst "
           f"is {us(w1 - w0):,.0f} µs. The device waits for the host to dispatch ops.")
    margin = max((w1 - w0) // 2, 1000)
    return [ctx.finding("host_dispatch", "dequeue_gaps", "Dispatch-bound steps (host too slow)",
                        msg, ADVICE, impact, evidence,
                        [ctx.link("trace", start_us=us(w0 - margin), end_us=us(w1 + margin)),
                         ctx.link("overview")])]


RULE = Rule("host_dispatch", "Host dispatch stalls (Dequeue gaps)", check)
