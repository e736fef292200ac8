"""communication (GPU / kineto): communication (NCCL / Gloo, not hidden behind kernels) above
`communication_pct` of the step, torch-tb-profiler's rule. Impact: that time per step.
"""
from __future__ import annotations

from ..core import NotApplicable, Rule

ADVICE = ("Overlap communication with computation: DistributedDataParallel with a tuned "
          "bucket_cap_mb, gradient accumulation (no_sync) to communicate less often, and "
          "gradient compression where accuracy allows; check the interconnect (NCCL_DEBUG=INFO).")


def check(ctx):
    ctx.require_gpu()
    pct = ctx.category_pct("communication")
    if pct is None:
        raise NotApplicable("no step breakdown with a communication category")
    if pct <= ctx.t["communication_pct"]:
        return []
    per_step = pct / 100.0 * ctx.avg_step_us
    evidence = {"communication_per_step_us": per_step, "share_of_step_pct": pct,
                "threshold_pct": ctx.t["communication_pct"], "avg_step_us": ctx.avg_step_us}
    msg = f"Communication that is not overlapped takes {pct:.1f}% of the step ({per_step:,.0f} µs)."
    return [ctx.finding("communication", "communication", "Communication-bound steps", msg, ADVICE,
                        per_step, evidence, [ctx.link("overview"), ctx.link("distributed")])]


RULE = Rule("communication", "Communication time", check)
