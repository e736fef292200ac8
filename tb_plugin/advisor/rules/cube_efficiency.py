"""cube_efficiency: MatMul kernels with headroom on the cube (msprof-analyze's AI Core
Performance checker, cube part). Per MatMul kernel name on AI_CORE / MIX_AIC taking at least
`core_perf_min_pct` of device time (msprof-analyze selects by memory size per shape; the
plugin by time): duration-weighted mean mac and mte2 ratios. mac >= `cube_mac_ratio` (0.8) is
cube-bound, mte2 >= `cube_mte2_ratio` (0.95) is memory-bound; otherwise the headroom is
max(0.8 - mac, 0.95 - mte2). One finding with the kernels with headroom (top 5).
Informational (impact null).
"""
from __future__ import annotations

import numpy as np

from ..core import Rule, matching_codes, us
from . import operator_no_bound

ADVICE = ("The listed MatMul kernels leave the cube idle: check that their shapes are "
          "affine (inner axis a multiple of 256 for ND format), use larger or fused matmuls, "
          "and keep the inputs in the format the cube reads without conversion.")
_CORES = r"^(AI_CORE|MIX_AIC)$"


def weighted(values: np.ndarray, dur: np.ndarray) -> float | None:
    ok = np.isfinite(values)
    w = dur[ok].astype(np.float64)
    if not ok.any() or w.sum() <= 0:
        return None
    return float((values[ok] * w).sum() / w.sum())


def candidates(ctx, core_pattern: str, name_pattern: str | None = None):
    """[(name, calls mask)] of the kernels on `core_pattern` cores (and `name_pattern` name
    or type) taking at least core_perf_min_pct of device time, and the pipe ratios."""
    k, ratios = operator_no_bound.pipe_table(ctx)
    mask = matching_codes(k["core_type"], core_pattern)
    if name_pattern is not None:
        mask &= matching_codes(k["name"], name_pattern) | matching_codes(k["type"], name_pattern)
    dur = k["dur_ns"].to_numpy(dtype=np.int64)
    names = k["name"].astype(str).to_numpy()
    out = []
    for name in sorted(set(names[mask])):
        sel = mask & (names == name)
        share = float(dur[sel].sum()) / ctx.device_ns * 100.0 if ctx.device_ns else 0.0
        if share >= ctx.t["core_perf_min_pct"]:
            out.append((name, sel, share))
    return k, ratios, dur, out


def check(ctx):
    k, ratios, dur, cands = candidates(ctx, _CORES, r"matmul")
    pipes = {p: i for i, p in enumerate(operator_no_bound.kc.BOUND_PIPES)}
    rows = []
    for name, sel, share in cands:
        mac = weighted(ratios[sel, pipes["mac"]], dur[sel])
        mte2 = weighted(ratios[sel, pipes["mte2"]], dur[sel])
        if mac is None or mte2 is None:
            continue
        if mac >= ctx.t["cube_mac_ratio"] or mte2 >= ctx.t["cube_mte2_ratio"]:
            continue
        rows.append({"name": name, "calls": int(sel.sum()), "total_us": us(dur[sel].sum()),
                     "share_of_device_pct": share, "mac_ratio": mac, "mte2_ratio": mte2,
                     "headroom": max(ctx.t["cube_mac_ratio"] - mac,
                                     ctx.t["cube_mte2_ratio"] - mte2)})
    if not rows:
        return []
    rows.sort(key=lambda r: (-r["total_us"], r["name"]))
    top = rows[0]
    evidence = {"kernels": rows[:5], "mac_threshold": ctx.t["cube_mac_ratio"],
                "mte2_threshold": ctx.t["cube_mte2_ratio"]}
    msg = (f"{len(rows)} MatMul kernel(s) are neither cube- nor memory-bound; {top['name']} "
           f"({top['share_of_device_pct']:.1f}% of device time) reaches mac "
           f"{top['mac_ratio']:.0%} and mte2 {top['mte2_ratio']:.0%} (headroom "
           f"{top['headroom']:.0%}).")
    return [ctx.finding("cube_efficiency", "cube", "MatMul kernels below the cube's capacity",
                        msg, ADVICE, None, evidence,
                        [ctx.link("kernels", search=top["name"])], severity="low")]


RULE = Rule("cube_efficiency", "Cube (MatMul) efficiency", check)
