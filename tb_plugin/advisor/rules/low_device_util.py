"""low_device_util (GPU / kineto): kernels keep the GPU busy less than `low_device_util_pct`
of the step (torch-tb-profiler's GPU utilization: the `kernel` category of the breakdown).
Impact: the idle time per step down to the threshold (what a busier device would gain).
"""
from __future__ import annotations

from ..core import NotApplicable, Rule

ADVICE = ("The GPU waits for the host: raise the batch size, remove synchronizations "
          "(.item(), .cpu(), torch.cuda.synchronize()) from the step, use CUDA graphs or "
          "torch.compile to launch fewer kernels, and make the input pipeline faster.")


def check(ctx):
    ctx.require_gpu()
    pct = ctx.category_pct("kernel")
    if pct is None:
        raise NotApplicable("no step breakdown with a kernel category")
    if pct >= ctx.t["low_device_util_pct"]:
        return []
    gain = (ctx.t["low_device_util_pct"] - pct) / 100.0 * ctx.avg_step_us
    evidence = {"kernel_share_pct": pct, "threshold_pct": ctx.t["low_device_util_pct"],
                "idle_per_step_us": (100.0 - pct) / 100.0 * ctx.avg_step_us,
                "avg_step_us": ctx.avg_step_us}
    msg = f"Kernels run during only {pct:.1f}% of the step time."
    return [ctx.finding("low_device_util", "low_device_util", "Low GPU utilization", msg, ADVICE,
                        gain, evidence, [ctx.link("overview"), ctx.link("trace")])]


RULE = Rule("low_device_util", "Device utilization", check)
