"""memory_operators: time spent in device memory allocation and release
(`AscendCL@aclMallocMemInner`, `AscendCL@aclrtFree`, `AscendCL@aclrtFreePhysical`); fires at
`memory_ops_min_us` in total (msprof-analyze's memory checker). Impact: their time per step.
"""
from __future__ import annotations

import numpy as np

from ..core import Rule, us

ADVICE = ("The allocator goes to the driver during training. For malloc: set "
          "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True. For free: check device memory use "
          "(npu-smi), reduce the batch size, and remove torch.npu.empty_cache() calls.")


def check(ctx):
    ctx.require_npu()
    ctx.require_trace()
    ev = ctx.slices_matching(r"^AscendCL@(aclMallocMemInner|aclrtFree|aclrtFreePhysical)$")
    d = ev["dur_ns"].to_numpy(dtype=np.int64)
    if us(d.sum()) < ctx.t["memory_ops_min_us"]:
        return []
    names = ev["name"].astype(str).to_numpy()
    by = {n: {"count": int((names == n).sum()), "total_us": us(d[names == n].sum())} for n in set(names)}
    total = ctx.per_step(us(d.sum()))
    evidence = {"total_us": us(d.sum()), "per_step_us": total, "by_api": by,
                "threshold_us": ctx.t["memory_ops_min_us"]}
    msg = f"Device memory allocation / release takes {us(d.sum()):,.0f} µs ({total:,.0f} µs per step)."
    i = int(np.argmax(d))
    s0 = int(ev["start_ns"].to_numpy()[i])
    return [ctx.finding("memory_operators", "memory_operators", "Memory allocation at run time",
                        msg, ADVICE, total, evidence,
                        [ctx.link("trace", start_us=us(s0), end_us=us(s0 + int(d[i]))),
                         ctx.link("memory")])]


RULE = Rule("memory_operators", "Memory operators", check)
