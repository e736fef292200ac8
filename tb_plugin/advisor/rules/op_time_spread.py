"""op_time_spread: an op type whose longest call is far above its mean (max >=
`op_spread_ratio` x mean and at least `op_spread_min_us` longer, with `op_spread_min_calls`
calls): the same op is sometimes called in a bad way (shape, layout, a sync inside).
Impact: the excess of the outlier calls over the median call, per step.
"""
from __future__ import annotations

import numpy as np

from ..core import Rule, us

ADVICE = ("Look at the slow calls of this op: compare their input shapes and formats with the "
          "fast ones and at what runs just before them (a compilation, a format conversion, a "
          "synchronization).")


def check(ctx):
    ctx.require_kernels()
    k = ctx.compute_kernels
    typ = k["type"].astype(str)
    # GPU kernels have no op type (their `type` is the activity kind): group by name there.
    key = (k["name"].astype(str) if ctx.is_gpu else typ.where(typ != "", k["name"].astype(str))).to_numpy()
    d = k["dur_ns"].to_numpy(dtype=np.int64)
    starts = k["start_ns"].to_numpy(dtype=np.int64)
    out = []
    for t in sorted(set(key)):
        sel = key == t
        if sel.sum() < ctx.t["op_spread_min_calls"]:
            continue
        v = d[sel]
        mean, mx, med = float(v.mean()), int(v.max()), float(np.median(v))
        if mean <= 0 or mx < ctx.t["op_spread_ratio"] * mean or \
                mx - mean < ctx.t["op_spread_min_us"] * 1000:
            continue
        slow = v >= ctx.t["op_spread_ratio"] * mean
        excess = ctx.per_step(us((v[slow] - med).sum()))
        i = int(np.argmax(v))
        s0 = int(starts[sel][i])
        evidence = {"op_type": t, "calls": int(sel.sum()), "mean_us": us(mean), "median_us": us(med),
                    "max_us": us(mx), "max_over_mean": mx / mean, "slow_calls": int(slow.sum()),
                    "excess_per_step_us": excess, "slowest_start_us": us(s0)}
        msg = (f"{t}: the slowest of {int(sel.sum())} calls takes {us(mx):,.0f} µs, "
               f"{mx / mean:.1f}× its mean of {us(mean):,.0f} µs.")
        out.append(ctx.finding("op_time_spread", t, f"Uneven op {t}", msg, ADVICE, excess, evidence,
                               [ctx.link("kernels", search=t, sort="-max_us"),
                                ctx.link("trace", start_us=us(s0), end_us=us(s0 + mx))]))
    out.sort(key=lambda f: -(f.impact_us or 0))
    return out[:5]


RULE = Rule("op_time_spread", "Op time spread", check)
