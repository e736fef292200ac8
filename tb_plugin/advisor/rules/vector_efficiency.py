"""vector_efficiency: vector kernels with headroom (msprof-analyze's AI Core Performance
checker, vector part). Per kernel name on AI_VECTOR_CORE / MIX_AIV taking at least
`core_perf_min_pct` (1%) of device time: duration-weighted mean vec, mte2, mte3 ratios.
vec + mte2 + mte3 >= `vector_sum_ratio` (0.9), or any one >= `vector_pipe_ratio` (0.7), is
bound; otherwise the headroom is the largest 0.7 - ratio. One finding with the kernels with
headroom (top 5). Informational (impact null).
"""
from __future__ import annotations

from ..core import Rule, us
from . import cube_efficiency, operator_no_bound

ADVICE = ("The listed vector kernels use neither the vector unit nor the memory pipes to "
          "capacity: check for small or unaligned shapes, scalar-heavy code paths and "
          "per-element launches that a fused operator (or a larger batch) would cover.")
_CORES = r"^(AI_VECTOR_CORE|MIX_AIV)$"


def check(ctx):
    k, ratios, dur, cands = cube_efficiency.candidates(ctx, _CORES)
    pipes = {p: i for i, p in enumerate(operator_no_bound.kc.BOUND_PIPES)}
    limit = ctx.t["vector_pipe_ratio"]
    rows = []
    for name, sel, share in cands:
        r = {p: cube_efficiency.weighted(ratios[sel, pipes[p]], dur[sel])
             for p in ("vec", "mte2", "mte3")}
        if any(v is None for v in r.values()):
            continue
        if sum(r.values()) >= ctx.t["vector_sum_ratio"] or max(r.values()) >= limit:
            continue
        rows.append({"name": name, "calls": int(sel.sum()), "total_us": us(dur[sel].sum()),
                     "share_of_device_pct": share, **{f"{p}_ratio": v for p, v in r.items()},
                     "headroom": max(limit - v for v in r.values())})
    if not rows:
        return []
    rows.sort(key=lambda r: (-r["total_us"], r["name"]))
    top = rows[0]
    evidence = {"kernels": rows[:5], "sum_threshold": ctx.t["vector_sum_ratio"],
                "pipe_threshold": limit}
    msg = (f"{len(rows)} vector kernel(s) are bound by neither the vector unit nor memory; "
           f"{top['name']} ({top['share_of_device_pct']:.1f}% of device time) reaches vec "
           f"{top['vec_ratio']:.0%}, mte2 {top['mte2_ratio']:.0%}, mte3 "
           f"{top['mte3_ratio']:.0%}.")
    return [ctx.finding("vector_efficiency", "vector", "Vector kernels below capacity", msg,
                        ADVICE, None, evidence, [ctx.link("kernels", search=top["name"])],
                        severity="low")]


RULE = Rule("vector_efficiency", "Vector efficiency", check)
