"""host_dispatch: the device idles because the host does not dispatch ops fast enough.

Input: the host dispatch path of `analysis.dispatch` (torch_npu's task queue): the gaps
between consecutive `Dequeue@<op>` events of one step, the launch delay (device task start -
CANN launch) and the device idle time of each step, with the part of it spent waiting for a
launch (dispatch-bound idle). A Dequeue gap longer than `dispatch_gap_us` is a dispatch stall;
the rule fires when the stalls add up to at least `dispatch_min_gap_pct` of the step time.
Impact: the stalled time per step, at most what the device idled waiting for the host per
step (dispatch-bound idle), and at most the steps' Free time (the device can only gain what it
idles). Links: the worst gap in the timeline, the Dispatch view, the overview.

Without such stalls the task-queue thread itself may be the bottleneck (slow CANN launches: the
queue backs up, Dequeue events follow each other without gaps, and still the device waits):
the rule then fires when the dispatch-bound idle time is at least `dispatch_bound_idle_pct` of
the step time: key `launch_bound` when the median queue wait is over
`dispatch_queue_backlog_us` (ops back up in the queue: launching is the bottleneck), else
`enqueue_bound` (the queue runs dry: the main thread is; its gaps are under
`dispatch_gap_us`). Impact: that idle time per step. Links: the step with the most of it in
the timeline, the Dispatch view.
"""
from __future__ import annotations

import numpy as np

from ...analysis import dispatch
from ..core import NotApplicable, Rule, us

ADVICE = ("Make dispatch cheaper than execution: raise the batch size so each op does more work; "
          "bind the process to CPU cores (taskset / numactl) and set the CPU to performance mode; "
          "use NPU affinity APIs and fused optimizers (torch_npu.optim.NpuFused*) and fused "
          "operators to launch fewer ops.")
LAUNCH_ADVICE = ("Make each launch cheaper: use the aclnn operators rather than aclop ones that "
                 "compile (torch_npu.npu.set_compile_mode(jit_compile=False)), keep the aclnn "
                 "cache large enough (ACLNN_CACHE_LIMIT), try TASK_QUEUE_ENABLE=2 (the second-"
                 "level pipeline), bind the task-queue thread to its own CPU cores, and launch "
                 "fewer, larger (fused) operators.")


def _num(v):
    if v is None:
        return None
    f = float(v)
    return None if np.isnan(f) else f


def check(ctx):
    ctx.require_npu()
    ctx.require_trace()
    gap_ns = int(ctx.t["dispatch_gap_us"] * 1000)
    a = dispatch.analyze(ctx.profile, gap_ns)
    n_deq = a["dequeue_count"] if a["kind"] == "task_queue" else 0
    if a["kind"] != "task_queue" or n_deq < 2:
        raise NotApplicable("no task-queue Dequeue events (task queue off, or Level0 trace)")
    gaps, steps = a["gaps"], a["steps"]
    steps_n = max(ctx.step_count, 1)
    total_gap_us = us(gaps["gap_ns"].sum())
    per_step_us = total_gap_us / steps_n
    pct = per_step_us / ctx.avg_step_us * 100.0 if ctx.avg_step_us else None
    free = ctx.category_ns("free")
    free_per_step_us = float(free.mean() / 1000.0) if free is not None else None
    free_pct = [round(float(f) / float(t) * 100.0, 2) if t else None
                for f, t in zip(free, ctx.steps["total_ns"].to_numpy())] if free is not None else None
    if len(gaps) == 0 or pct is None or pct < ctx.t["dispatch_min_gap_pct"]:
        return _launch_bound(ctx, a, n_deq)
    worst = gaps.iloc[0]
    w0, w1 = int(worst["start_ns"]), int(worst["end_ns"])
    delay = a["launches"]["delay_ns"].to_numpy(np.float64)
    idle_ns = float(steps["device_idle_ns"].sum()) if len(steps) else 0.0
    bound_ns = float(steps["dispatch_bound_idle_ns"].sum()) if len(steps) else 0.0
    bound_per_step_us = us(bound_ns) / max(len(steps), 1) if len(steps) else None
    impact = per_step_us
    for cap in (free_per_step_us, bound_per_step_us):
        if cap is not None:
            impact = min(impact, cap)
    evidence = {"gap_threshold_us": ctx.t["dispatch_gap_us"], "gap_count": int(len(gaps)),
                "gaps_per_step": float(len(gaps)) / steps_n, "total_gap_us": total_gap_us,
                "gap_per_step_us": per_step_us, "gap_pct_of_step": pct,
                "worst_gap_us": us(w1 - w0), "worst_gap_start_us": us(w0),
                "worst_gap_end_us": us(w1), "worst_gap_before": str(worst["before"]),
                "worst_gap_after": str(worst["after"]), "dequeue_events": n_deq,
                "launch_delay_p50_us": _num(us(np.percentile(delay, 50))) if len(delay) else None,
                "launch_delay_p95_us": _num(us(np.percentile(delay, 95))) if len(delay) else None,
                "device_idle_per_step_us": us(idle_ns) / max(len(steps), 1),
                "dispatch_bound_idle_per_step_us": bound_per_step_us,
                "dispatch_bound_idle_pct": bound_ns / idle_ns * 100.0 if idle_ns > 0 else None,
                "free_per_step_us": free_per_step_us, "free_pct_per_step": free_pct}
    share = evidence["dispatch_bound_idle_pct"]
    msg = (f"{len(gaps)} gaps over {ctx.t['dispatch_gap_us']:,.0f} µs between task-queue "
           f"Dequeue events ({per_step_us:,.0f} µs per step, {pct:.1f}% of the step); the worst "
           f"is {us(w1 - w0):,.0f} µs. The device waits for the host to dispatch ops"
           + (f": {share:.0f}% of its idle time is spent before the next task was launched."
              if share is not None else "."))
    margin = max((w1 - w0) // 2, 1000)
    return [ctx.finding("host_dispatch", "dequeue_gaps", "Dispatch-bound steps (host too slow)",
                        msg, ADVICE, impact, evidence,
                        [ctx.link("trace", start_us=us(w0 - margin), end_us=us(w1 + margin)),
                         ctx.link("dispatch"), ctx.link("overview")])]


def _launch_bound(ctx, a, n_deq):
    """The device waits for launches although the task queue never runs dry."""
    steps = a["steps"]
    if len(steps) == 0:
        return []
    span = (steps["end_ns"] - steps["start_ns"]).to_numpy(np.float64)
    bound = steps["dispatch_bound_idle_ns"].to_numpy(np.float64)
    if span.sum() <= 0:
        return []
    pct = float(bound.sum() / span.sum() * 100.0)
    if pct < ctx.t["dispatch_bound_idle_pct"]:
        return []
    worst = int(np.argmax(bound))
    delay = a["launches"]["delay_ns"].to_numpy(np.float64)
    wait = a["calls"]["queue_wait_ns"].to_numpy(np.float64)
    wait = wait[~np.isnan(wait)]
    per_step_us = us(bound.sum()) / len(steps)
    evidence = {"dispatch_bound_idle_pct_of_step": pct,
                "dispatch_bound_idle_per_step_us": per_step_us,
                "device_idle_per_step_us": us(steps["device_idle_ns"].sum()) / len(steps),
                "dequeue_gap_count": int(len(a["gaps"])), "dequeue_events": n_deq,
                "queue_wait_p50_us": us(np.percentile(wait, 50)) if len(wait) else None,
                "queue_wait_p95_us": us(np.percentile(wait, 95)) if len(wait) else None,
                "launch_delay_p50_us": us(np.percentile(delay, 50)) if len(delay) else None,
                "launch_delay_p95_us": us(np.percentile(delay, 95)) if len(delay) else None,
                "worst_step": None if not a["has_steps"] else int(steps["step"].iloc[worst]),
                "worst_step_dispatch_bound_us": us(bound[worst])}
    backlog = bool(len(wait)) and evidence["queue_wait_p50_us"] > ctx.t["dispatch_queue_backlog_us"]
    head = (f"The device idles {pct:.1f}% of the step ({per_step_us:,.0f} µs per step) waiting "
            f"for the next launch")
    if backlog:
        key, title, advice = "launch_bound", "Launch-bound steps (task queue too slow)", LAUNCH_ADVICE
        msg = (f"{head}, while ops wait {evidence['queue_wait_p50_us']:,.0f} µs (median) in the "
               f"task queue: the task-queue thread launches them too slowly.")
    else:
        key, title, advice = "enqueue_bound", "Dispatch-bound steps (host too slow)", ADVICE
        msg = (f"{head}; the task queue runs dry (median wait "
               f"{evidence['queue_wait_p50_us'] or 0:,.0f} µs) in many gaps shorter than "
               f"{ctx.t['dispatch_gap_us']:,.0f} µs: the main thread enqueues ops too slowly.")
    s0, s1 = int(steps["start_ns"].iloc[worst]), int(steps["end_ns"].iloc[worst])
    return [ctx.finding("host_dispatch", key, title, msg, advice, per_step_us, evidence,
                        [ctx.link("trace", start_us=us(s0), end_us=us(s1)),
                         ctx.link("dispatch"), ctx.link("overview")])]


RULE = Rule("host_dispatch", "Host dispatch stalls (Dequeue gaps)", check)
