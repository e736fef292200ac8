"""dynamic_shape: every operator ran with dynamic shapes (op_summary's `OP State`: no op is
static), as msprof-analyze's dynamic-shape checker. Needs the OP State column in the kernel
table; no time estimate.
"""
from __future__ import annotations

from ..core import NotApplicable, Rule

ADVICE = ("Put torch_npu.npu.set_compile_mode(jit_compile=False) and "
          "torch_npu.npu.config.allow_internal_format = False at the top of the script so ops "
          "take the binary path instead of compiling per shape.")


def check(ctx):
    ctx.require_npu()
    ctx.require_kernels()
    k = ctx.kernels
    col = next((c for c in ("OP State", "op_state") if c in k.columns), None)
    if col is None:
        raise NotApplicable("the kernel table has no OP State column")
    state = k[col].astype(str).str.strip().str.lower()
    known = state.isin(["static", "dynamic"])
    if not known.any():
        raise NotApplicable("OP State is empty for every kernel")
    if (state[known] == "static").any():
        return []
    evidence = {"kernels": int(known.sum()), "dynamic": int(known.sum())}
    return [ctx.finding("dynamic_shape", "dynamic_shape", "All operators are dynamic-shape",
                        f"All {int(known.sum())} operators with an OP State ran as dynamic shape.",
                        ADVICE, None, evidence, [ctx.link("kernels")], severity="medium")]


RULE = Rule("dynamic_shape", "Dynamic-shape operators", check)
