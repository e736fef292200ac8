"""fused_optimizer: a framework optimizer step that launches many small kernels.

Input: host `Optimizer.step#<Class>.step` events and the kernel launches inside them
(framework -> device flows `torch_to_npu` / `mindspore_to_npu` starting in the step, else the
task queue's `Enqueue@` events). Fires for an optimizer class with a fused NPU replacement
that launches at least `fused_optimizer_min_kernels` kernels per step. Impact (estimate):
`fused_optimizer_saving` of the optimizer's time per step.
"""
from __future__ import annotations

import re

import numpy as np

from ..core import NotApplicable, Rule, matching_codes, us

# Framework optimizer -> fused replacement (torch_npu, and apex's NPU build).
FUSED = {name: f"torch_npu.optim.NpuFused{name}" for name in
         ("AdamW", "Adam", "SGD", "Adadelta", "Lamb", "AdamP", "BertAdam", "RMSprop", "RMSpropTF")}
_CLASS = re.compile(r"^Optimizer\.step#([A-Za-z0-9_]+)\.step")


def _launches(ctx, start, end) -> np.ndarray:
    """Kernel launches per optimizer event (flows from the framework, else Enqueue events)."""
    flows = ctx.profile.table("flows")
    if len(flows):
        m = matching_codes(flows["name"], r"^(torch|mindspore)_to_npu$") & \
            matching_codes(flows["phase"], r"^s$", 0)
        ts = np.sort(flows["ts_ns"].to_numpy(dtype=np.int64)[m])
        if len(ts):
            return np.searchsorted(ts, end, "right") - np.searchsorted(ts, start, "left")
    enq = ctx.slices_matching(r"^Enqueue@", kinds=("host",))
    ts = np.sort(enq["start_ns"].to_numpy(dtype=np.int64))
    return np.searchsorted(ts, end, "right") - np.searchsorted(ts, start, "left")


def check(ctx):
    ctx.require_npu()
    ctx.require_trace()
    opt = ctx.slices_matching(r"^Optimizer\.step#", kinds=("host",))
    if len(opt) == 0:
        raise NotApplicable("no Optimizer.step events in the trace")
    names = opt["name"].astype(str).to_numpy()
    start = opt["start_ns"].to_numpy(dtype=np.int64)
    end = start + opt["dur_ns"].to_numpy(dtype=np.int64)
    launches = _launches(ctx, start, end)
    out = []
    for cls in sorted({m.group(1) for m in map(_CLASS.match, names) if m}):
        if cls not in FUSED:
            continue
        sel = np.array([n.startswith(f"Optimizer.step#{cls}.") for n in names])
        calls = int(sel.sum())
        per_call = float(launches[sel].mean())
        time_per_step = ctx.per_step(us((end - start)[sel].sum()))
        if per_call < ctx.t["fused_optimizer_min_kernels"]:
            continue
        share = time_per_step / ctx.avg_step_us * 100.0 if ctx.avg_step_us else None
        fused = FUSED[cls]
        evidence = {"optimizer": f"Optimizer.step#{cls}.step", "calls": calls,
                    "time_per_step_us": time_per_step, "share_of_step_pct": share,
                    "kernels_per_step": per_call, "kernel_threshold": ctx.t["fused_optimizer_min_kernels"],
                    "fused_replacement": fused}
        msg = (f"Optimizer.step#{cls}.step launches {per_call:,.0f} kernels per step and takes "
               f"{time_per_step:,.0f} µs per step: the optimizer runs element-wise kernels per "
               f"parameter instead of one fused kernel.")
        advice = (f"Replace torch.optim.{cls} with {fused} (or apex.optimizers.NpuFused{cls}); "
                  f"it updates all parameters in a few fused kernels.")
        w = int(np.flatnonzero(sel)[0])
        out.append(ctx.finding("fused_optimizer", cls, f"Unfused optimizer {cls}", msg, advice,
                               time_per_step * ctx.t["fused_optimizer_saving"], evidence,
                               [ctx.link("trace", start_us=us(start[w]), end_us=us(end[w])),
                                ctx.link("operators", search="Optimizer.step")]))
    return out


RULE = Rule("fused_optimizer", "Unfused framework optimizer", check)
