"""communication (GPU / kineto): communication not hidden behind computation above
`communication_pct` of the step, torch-tb-profiler's rule. The time is the distributed view's
`communication_not_overlapped` per step (NCCL / Gloo kernels outside the union of the other
kernels, `analysis.rank_summary.step_breakdown`), so a trace whose collectives have no
`nccl:*` host op still counts. Impact: that time per step.
"""
from __future__ import annotations

import numpy as np

from ...analysis import rank_summary
from ..core import NotApplicable, Rule

ADVICE = ("Overlap communication with computation: DistributedDataParallel with a tuned "
          "bucket_cap_mb, gradient accumulation (no_sync) to communicate less often, and "
          "gradient compression where accuracy allows; check the interconnect (NCCL_DEBUG=INFO).")


def check(ctx):
    ctx.require_gpu()
    steps = [s for s in rank_summary.step_breakdown(ctx.profile) if s["breakdown"]]
    if not steps:
        raise NotApplicable("no steps with device kernels")
    comm = float(np.mean([s["breakdown"]["communication_not_overlapped"] for s in steps]))
    total = float(np.mean([s["total_us"] for s in steps]))
    if total <= 0 or comm <= 0:
        return []
    pct = comm / total * 100.0
    if pct <= ctx.t["communication_pct"]:
        return []
    evidence = {"communication_per_step_us": comm, "share_of_step_pct": pct,
                "threshold_pct": ctx.t["communication_pct"], "avg_step_us": total,
                "steps": len(steps)}
    msg = f"Communication that is not overlapped takes {pct:.1f}% of the step ({comm:,.0f} µs)."
    return [ctx.finding("communication", "communication", "Communication-bound steps", msg, ADVICE,
                        comm, evidence, [ctx.link("overview"), ctx.link("kernels", search="nccl")])]


RULE = Rule("communication", "Communication time", check)
