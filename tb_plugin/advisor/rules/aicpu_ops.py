"""aicpu_ops: kernels that run on the AI CPU (slow, general-purpose cores) for longer than
`aicpu_min_us` (msprof-analyze's AICPU checker). One finding per kernel name, with advice for
the op patterns msprof-analyze knows (nonzero, masked_select, index / index_put, argmin) and
for DOUBLE inputs. Impact: the op's time per step (an AI Core equivalent takes a fraction).
"""
from __future__ import annotations

import re

import numpy as np

from ..core import Rule, matching_codes, us

_OP_ADVICE = [
    (r"nonzero", "NonZero produces a data-dependent shape: avoid torch.nonzero / x[mask] indexing "
                 "in the training loop; keep masks as tensors (torch.where, multiply by the mask)."),
    (r"masked_?select|maskedscatter", "Masked select / scatter run on the AI CPU: use torch.where "
                                      "or multiplication by a mask with a fixed shape instead."),
    (r"indexput|index_put", "index_put (x[idx] = v) runs on the AI CPU for these inputs: use "
                            "scatter / index_copy, or int32 indices kept on the device."),
    (r"(^|_)index", "Advanced indexing runs on the AI CPU: use index_select / gather with int32 "
                    "indices kept on the device."),
    (r"argmin", "ArgMin runs on the AI CPU on older CANN versions: upgrade CANN, or compute it "
                "with min(dim) on the AI Core."),
]
_GENERIC = ("This op has no AI Core implementation for these inputs: check its dtypes and shapes "
            "against the supported ones, or rewrite the code so it is not needed.")


def advice_for(name: str, dtypes: str) -> str:
    parts = [text for pat, text in _OP_ADVICE if re.search(pat, name, re.I)][:1] or [_GENERIC]
    if re.search(r"double|float64", dtypes or "", re.I):
        parts.append("Its inputs are DOUBLE: change them to float32, which the AI Core supports.")
    return " ".join(parts)


def check(ctx):
    ctx.require_npu()
    ctx.require_kernels()
    k = ctx.kernels
    cpu = matching_codes(k["core_type"], r"^AI_CPU$")
    if not cpu.any():
        return []
    k = k[cpu]
    dur = k["dur_ns"].to_numpy(dtype=np.int64)
    long = dur > ctx.t["aicpu_min_us"] * 1000
    if not long.any():
        return []
    k = k[long]
    out = []
    names = k["name"].astype(str).to_numpy()
    for name in sorted(set(names), key=lambda n: -int(k["dur_ns"].to_numpy()[names == n].sum()))[:10]:
        sel = names == name
        d = k["dur_ns"].to_numpy(dtype=np.int64)[sel]
        dtypes = ";".join(sorted(set(k["input_dtypes"].astype(str).to_numpy()[sel])))
        typ = str(k["type"].astype(str).to_numpy()[sel][0])
        total = ctx.per_step(us(d.sum()))
        evidence = {"name": name, "type": typ, "count": int(sel.sum()), "total_us": us(d.sum()),
                    "per_step_us": total, "max_us": us(d.max()), "avg_us": us(d.mean()),
                    "input_dtypes": dtypes, "threshold_us": ctx.t["aicpu_min_us"]}
        msg = (f"{name} runs on the AI CPU {int(sel.sum())} times for {us(d.sum()):,.0f} µs "
               f"(up to {us(d.max()):,.0f} µs per call, {total:,.0f} µs per step).")
        out.append(ctx.finding("aicpu_ops", name, f"AI CPU op {typ or name}", msg,
                               advice_for(f"{name} {typ}", dtypes), total, evidence,
                               [ctx.link("kernels", search=name)]))
    return out


RULE = Rule("aicpu_ops", "AI CPU operators", check)
