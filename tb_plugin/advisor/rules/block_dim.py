"""block_dim: kernels whose Block Num is not a multiple of the device's core count
(msprof-analyze's Block Dim checker). AI_CORE and MIX_AIC tasks run on `ai_core_num` AI Cores,
AI_VECTOR_CORE tasks on `aiv_num` vector cores (info.json `DeviceInfo`); with block % cores
!= 0 the last wave leaves cores idle. msprof-analyze also checks Mix Block Num of MIX_AIC tasks
and skips dynamic-shape profiles; the plugin keeps neither, so it checks Block Num only and
always. One finding with the kernels by their time (top 10). Informational (impact null).
"""
from __future__ import annotations

import math

import numpy as np

from ...analysis import kernel_counters as kc
from ..core import NotApplicable, Rule, us

ADVICE = ("Change the tiling of the listed operators so their Block Num is a multiple of the "
          "core count (or at least one full wave): the cores of a partial last wave sit idle. "
          "For built-in operators, try other shapes or report it to the operator's owner.")
CORES = {"AI_CORE": "ai_core_num", "MIX_AIC": "ai_core_num", "AI_VECTOR_CORE": "aiv_num"}


def check(ctx):
    ctx.require_npu()
    ctx.require_kernels()
    counts = {"ai_core_num": ctx.meta("ai_core_num"), "aiv_num": ctx.meta("aiv_num")}
    if counts["ai_core_num"] is None and counts["aiv_num"] is None:
        raise NotApplicable("the device's core counts are unknown (no info.json DeviceInfo)")
    k = ctx.compute_kernels
    core = k["core_type"].astype(str).to_numpy()
    # msprof-analyze checks these three task types (MIX_AIV is not among them)
    checked = np.isin(core, list(CORES))
    cores = np.where(checked, np.nan_to_num(kc.core_counts(k["core_type"], counts["ai_core_num"],
                                                           counts["aiv_num"])), 0).astype(np.int64)
    block = k["block_dim"].astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)
    ok = (cores > 0) & np.isfinite(block) & (block > 0)
    bad = ok & (np.fmod(np.where(ok, block, 0), np.where(cores > 0, cores, 1)) != 0)
    if not bad.any():
        return []
    names = k["name"].astype(str).to_numpy()
    dur = k["dur_ns"].to_numpy(dtype=np.int64)
    rows = []
    for name in set(names[bad]):
        sel = bad & (names == name)
        b = int(np.bincount(block[sel].astype(np.int64)).argmax())
        c = int(cores[sel][0])
        waves = math.ceil(b / c)
        rows.append({"name": name, "core_type": str(core[sel][0]), "calls": int(sel.sum()),
                     "total_us": us(dur[sel].sum()), "block_dim": b, "core_num": c,
                     "waves": waves, "idle_core_share": 1.0 - b / (waves * c)})
    rows.sort(key=lambda r: (-r["total_us"], r["name"]))
    top = rows[0]
    evidence = {"calls": int(bad.sum()), "kernels": len(rows), **counts,
                "operators": rows[:10]}
    msg = (f"{len(rows)} kernel(s) have a Block Num that is not a multiple of the core count "
           f"({int(bad.sum())} calls); {top['name']} runs {top['block_dim']} blocks on "
           f"{top['core_num']} cores: {top['waves']} waves, {top['idle_core_share']:.0%} of the "
           f"core slots idle.")
    return [ctx.finding("block_dim", "block_dim", "Block Num does not fill the cores", msg,
                        ADVICE, None, evidence, [ctx.link("kernels", search=top["name"])],
                        severity="low")]


RULE = Rule("block_dim", "Block Num vs core count", check)
