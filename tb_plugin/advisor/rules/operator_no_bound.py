"""operator_no_bound: kernels bound by no pipe (msprof-analyze's Operator No Bound checker).

A call counts when it lasts longer than `no_bound_min_us` (20 µs) and has PipeUtilization
counters, and none of its mac / vec / scalar / mte1 / mte2 / mte3 ratios (the larger of the
aic_* and aiv_* value) is above `operator_bound_ratio` (0.8): no unit of the core is busy most
of the time, so latency, synchronisation or a poor tiling limits the kernel. msprof-analyze
skips the check on dynamic-shape profiles; the plugin does not keep `OP State`, so it always
checks. One finding listing the kernels by their time in such calls. Informational (impact
null, severity low): how much tuning saves is not known from the counters.
"""
from __future__ import annotations

import numpy as np

from ...analysis import kernel_counters as kc
from ..core import NotApplicable, Rule, us

ADVICE = ("Tune the listed operators with AOE (operator tuning, `aoe --job_type=2`): their "
          "counters show no saturated unit. Check their shapes (small or unaligned tiles), "
          "Block Num and whether a fused operator covers them.")


def pipe_table(ctx):
    """Per compute call: the six bound pipes' ratios; NotApplicable without counters."""
    ctx.require_npu()
    ctx.require_kernels()
    k = ctx.compute_kernels
    if not kc.has_pipe_ratios(k):
        raise NotApplicable("no PipeUtilization counters (profile with "
                            "aic_metrics=PipeUtilization)")
    return k, kc.pipe_ratios(k)[[f"{p}_ratio" for p in kc.BOUND_PIPES]].to_numpy()


def check(ctx):
    k, ratios = pipe_table(ctx)
    dur = k["dur_ns"].to_numpy(dtype=np.int64)
    measured = np.isfinite(ratios).any(axis=1)
    with np.errstate(invalid="ignore"):
        over = (np.nan_to_num(ratios, nan=-1.0) > ctx.t["operator_bound_ratio"]).any(axis=1)
    hit = measured & ~over & (dur > ctx.t["no_bound_min_us"] * 1000)
    if not hit.any():
        return []
    names = k["name"].astype(str).to_numpy()
    types = k["type"].astype(str).to_numpy()
    rows = []
    for name in set(names[hit]):
        sel = hit & (names == name)
        r = ratios[sel]
        w = dur[sel].astype(np.float64)
        means = {p: float(np.nansum(r[:, i] * w) / w[np.isfinite(r[:, i])].sum())
                 if np.isfinite(r[:, i]).any() and w[np.isfinite(r[:, i])].sum() > 0 else None
                 for i, p in enumerate(kc.BOUND_PIPES)}
        rows.append({"name": name, "type": str(types[sel][0]), "calls": int(sel.sum()),
                     "total_us": us(dur[sel].sum()), "max_us": us(dur[sel].max()),
                     **{f"{p}_ratio": v for p, v in means.items()}})
    rows.sort(key=lambda r: (-r["total_us"], r["name"]))
    share = float(dur[hit].sum()) / ctx.device_ns * 100.0 if ctx.device_ns else 0.0
    evidence = {"calls": int(hit.sum()), "kernels": len(rows), "share_of_device_pct": share,
                "bound_ratio": ctx.t["operator_bound_ratio"],
                "min_duration_us": ctx.t["no_bound_min_us"], "operators": rows[:10]}
    top = rows[0]
    msg = (f"{len(rows)} kernel(s) are bound by no pipe (no ratio above "
           f"{ctx.t['operator_bound_ratio']:.0%}) in {int(hit.sum())} calls longer than "
           f"{ctx.t['no_bound_min_us']:.0f} µs ({share:.1f}% of device time); the largest is "
           f"{top['name']} ({top['total_us']:,.0f} µs).")
    return [ctx.finding("operator_no_bound", "no_bound", "Operators bound by no pipe", msg,
                        ADVICE, None, evidence,
                        [ctx.link("kernels", search=top["name"], bound="none")],
                        severity="low")]


RULE = Rule("operator_no_bound", "Operators bound by no pipe", check)
