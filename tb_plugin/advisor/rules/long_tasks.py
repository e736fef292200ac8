"""long_tasks: device tasks whose duration exceeds `long_task_us` (1000 µs in the Paddle +
msprof guide): names, counts and their share of device time. Informational (impact null):
a long task may be fine (a big matmul) or a badly called op; the evidence says which ones.
"""
from __future__ import annotations

import numpy as np

from ..core import Rule, us

ADVICE = ("Review the listed ops, longest first: check how the model calls them (shapes, "
          "dtypes, the adapter logic) and whether a fused or better-shaped variant exists.")


def check(ctx):
    ctx.require_kernels()
    k = ctx.compute_kernels
    d = k["dur_ns"].to_numpy(dtype=np.int64)
    long = d > ctx.t["long_task_us"] * 1000
    if not long.any() or ctx.device_ns <= 0:
        return []
    lk = k[long]
    names = lk["name"].astype(str).to_numpy()
    ld = d[long]
    rows = []
    for n in set(names):
        sel = names == n
        rows.append({"name": n, "count": int(sel.sum()), "total_us": us(ld[sel].sum()),
                     "max_us": us(ld[sel].max())})
    rows.sort(key=lambda r: -r["total_us"])
    share = float(ld.sum()) / ctx.device_ns * 100.0
    evidence = {"count": int(long.sum()), "share_of_device_pct": share,
                "threshold_us": ctx.t["long_task_us"], "tasks": rows[:10]}
    msg = (f"{int(long.sum())} tasks run longer than {ctx.t['long_task_us']:,.0f} µs "
           f"({share:.1f}% of device time); the longest is {rows[0]['name']} "
           f"({max(r['max_us'] for r in rows):,.0f} µs).")
    return [ctx.finding("long_tasks", "long_tasks", "Long device tasks", msg, ADVICE, None,
                        evidence, [ctx.link("kernels", search=rows[0]["name"], sort="-max_us")],
                        severity="medium" if share >= 50 else "low")]


RULE = Rule("long_tasks", "Long device tasks", check)
