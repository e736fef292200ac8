"""task_wait: Task Wait Time spikes (the task waited for the host before it could start).

A spike is a wait above `task_wait_ratio` x the profile's median wait and at least
`task_wait_min_us`. Each spike gets the likely cause the data shows: `ai_cpu` (the previous
task on the stream ran on the AI CPU), `compilation` (an op compilation event ends inside the
wait, needs the trace), `allocation` (a device memory allocation, `aclMallocMemInner`,
ends inside it), `iteration_start` (first task of a step: the data and host work of
the step start, normally expected), else `unknown`. The rule fires when the spikes that are
not iteration starts add up to `task_wait_min_pct` of the step. Impact: those waits per step.
"""
from __future__ import annotations

import numpy as np

from ...lazy import pd
from ..core import Rule, matching_codes, us

ADVICE = {
    "compilation": "Ops are compiled while the model runs: use the binary aclnn path "
                   "(torch_npu.npu.set_compile_mode(jit_compile=False)) so nothing is compiled online.",
    "allocation": "The host allocates device memory before the launch: set "
                  "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True and keep the allocator's cache "
                  "(no torch.npu.empty_cache() in the loop).",
    "ai_cpu": "The task waits for an AI CPU task before it: remove the AI CPU op (see aicpu_ops).",
    "unknown": "Find what the host does during the wait (timeline): a synchronization, Python "
               "work or data preparation between ops.",
}


def check(ctx):
    ctx.require_npu()
    ctx.require_kernels()
    k = ctx.kernels.sort_values("start_ns", kind="stable")
    wait = k["wait_ns"].to_numpy(dtype=np.int64)
    if not (wait > 0).any():
        return []
    median = float(np.median(wait))
    limit = max(ctx.t["task_wait_ratio"] * median, ctx.t["task_wait_min_us"] * 1000)
    spike = wait > limit
    if not spike.any():
        return []
    start = k["start_ns"].to_numpy(dtype=np.int64)
    cpu = matching_codes(k["core_type"], r"^AI_CPU$")
    stream = k["stream_id"].to_numpy(dtype=np.float64, na_value=-1)
    step = k["step"].to_numpy(dtype=np.float64, na_value=np.nan)
    def ends(pattern):
        if not ctx.profile.has("slices") or ctx.trace_pending:
            return np.zeros(0, dtype=np.int64)
        c = ctx.slices_matching(pattern)
        return np.sort(c["start_ns"].to_numpy(dtype=np.int64) + c["dur_ns"].to_numpy(dtype=np.int64))

    def inside(sorted_ends, lo, hi):
        return len(sorted_ends) and np.searchsorted(sorted_ends, hi, "right") > \
            np.searchsorted(sorted_ends, lo, "left")

    comp_end = ends(r"aclopCompile|opCompile")
    alloc_end = ends(r"^AscendCL@aclMallocMemInner$")
    # previous task on the same stream (rows are in start order)
    prev_same = pd.Series(np.arange(len(k))).groupby(stream).shift(1).to_numpy()
    causes = []
    idx = np.flatnonzero(spike)
    for i in idx:
        p = None if np.isnan(prev_same[i]) else int(prev_same[i])
        first_of_step = p is None or (not np.isnan(step[i]) and step[p] != step[i])
        lo, hi = start[i] - wait[i], start[i]
        if inside(comp_end, lo, hi):
            causes.append("compilation")
        elif inside(alloc_end, lo, hi):
            causes.append("allocation")
        elif p is not None and cpu[p] and not first_of_step:
            causes.append("ai_cpu")
        elif first_of_step:
            causes.append("iteration_start")
        else:
            causes.append("unknown")
    causes = np.array(causes)
    avoid = causes != "iteration_start"
    total = ctx.per_step(us(wait[idx][avoid].sum()))
    pct = total / ctx.avg_step_us * 100.0 if ctx.avg_step_us else None
    if not avoid.any() or pct is None or pct < ctx.t["task_wait_min_pct"]:
        return []
    names = k["name"].astype(str).to_numpy()
    by_cause = {str(c): {"count": int((causes == c).sum()), "total_us": us(wait[idx][causes == c].sum())}
                for c in sorted(set(causes))}
    worst = idx[avoid][np.argsort(-wait[idx][avoid], kind="stable")][:10]
    cause_of = dict(zip(idx.tolist(), causes.tolist()))
    top = [{"name": str(names[i]), "wait_us": us(wait[i]), "start_us": us(start[i]),
            "cause": str(cause_of[int(i)])}
           for i in worst]
    main = max((c for c in by_cause if c != "iteration_start"), key=lambda c: by_cause[c]["total_us"])
    evidence = {"median_wait_us": us(median), "spike_threshold_us": us(limit),
                "spikes": int(spike.sum()), "avoidable_spikes": int(avoid.sum()),
                "avoidable_wait_per_step_us": total, "by_cause": by_cause, "worst": top,
                "likely_cause": str(main)}
    msg = (f"{int(avoid.sum())} tasks wait more than {us(limit):,.0f} µs before they start "
           f"({total:,.0f} µs per step; median wait {us(median):,.1f} µs); likely cause: "
           f"{main.replace('_', ' ')}.")
    w = top[0]
    return [ctx.finding("task_wait", "task_wait", "Scheduling waits before tasks", msg,
                        ADVICE[main], total, evidence,
                        [ctx.link("kernels", search=w["name"], sort="-avg_wait_us"),
                         ctx.link("trace", start_us=w["start_us"] - w["wait_us"],
                                  end_us=w["start_us"] + 1)])]


RULE = Rule("task_wait", "Task wait spikes", check)
