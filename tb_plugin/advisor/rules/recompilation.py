"""recompilation: ops compiled again and again while the model runs (the aclop path).

Input: CANN / host events named `...aclopCompileAndExecute` or `...opCompile` (msprof-analyze
counts `AscendCL@aclopCompileAndExecute`); fires at `recompile_min_count` events. Evidence
adds the kernels that are not on the binary aclnn path (names without the `aclnn` prefix).
Impact: the compile events' time per step.
"""
from __future__ import annotations

import numpy as np

from ..core import Rule, matching_codes, us

ADVICE = ("Move ops to the binary aclnn path so nothing is compiled while training: call "
          "torch_npu.npu.set_compile_mode(jit_compile=False) and set "
          "torch_npu.npu.config.allow_internal_format = False at the top of the script "
          "(PaddlePaddle: export FLAGS_npu_jit_compile=false); keep shapes static where you can.")


def check(ctx):
    ctx.require_npu()
    ctx.require_trace()
    c = ctx.slices_matching(r"aclopCompileAndExecute|opCompile")
    n = int(len(c))
    if n < ctx.t["recompile_min_count"]:
        return []
    d = c["dur_ns"].to_numpy(dtype=np.int64)
    k = ctx.compute_kernels
    aclop = k[~matching_codes(k["name"], r"^aclnn") & ~matching_codes(k["core_type"], r"^AI_CPU$")]
    names = aclop["name"].astype(str).value_counts()
    per_step = ctx.per_step(us(d.sum()))
    evidence = {"compile_events": n, "threshold": ctx.t["recompile_min_count"],
                "compile_total_us": us(d.sum()), "compile_per_step_us": per_step,
                "longest_compile_us": us(d.max()),
                "aclop_kernels": [{"name": x, "count": int(v)} for x, v in names.head(10).items()]}
    msg = (f"{n} op compilations (aclopCompileAndExecute) during the profile, "
           f"{per_step:,.0f} µs per step: ops take the aclop path and are recompiled.")
    i = int(np.argmax(d))
    s0 = int(c["start_ns"].to_numpy()[i])
    return [ctx.finding("recompilation", "recompilation", "Ops compiled at run time", msg, ADVICE,
                        per_step, evidence,
                        [ctx.link("trace", start_us=us(s0), end_us=us(s0 + int(d[i]))),
                         ctx.link("kernels")])]


RULE = Rule("recompilation", "Repeated op compilation", check)
