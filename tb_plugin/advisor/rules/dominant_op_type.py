"""dominant_op_type: one op type takes more than `dominant_op_pct` of device compute time
(op_statistic's Ratio, here from the kernel table). In the Paddle + msprof guide this points
to repeated compilation of that op. No time estimate (impact null): it is a lead, not a fix.
"""
from __future__ import annotations

import numpy as np

from ...lazy import pd
from ..core import Rule, us

ADVICE = ("Check whether this op type is compiled again and again (see the recompilation and "
          "task_wait findings): PyTorch: torch_npu.npu.set_compile_mode(jit_compile=False); "
          "PaddlePaddle: export FLAGS_npu_jit_compile=false. Otherwise it is the op to optimize "
          "first (shapes, dtypes, a fused replacement).")


def check(ctx):
    ctx.require_npu()
    ctx.require_kernels()
    k = ctx.compute_kernels
    if len(k) == 0 or ctx.device_ns <= 0:
        return []
    typ = k["type"].astype(str)
    key = typ.where(typ != "", k["name"].astype(str))
    g = pd.DataFrame({"t": key.to_numpy(), "d": k["dur_ns"].to_numpy(dtype=np.int64)}) \
        .groupby("t")["d"].agg(["sum", "count"]).sort_values("sum", ascending=False)
    top, row = g.index[0], g.iloc[0]
    share = float(row["sum"]) / ctx.device_ns * 100.0
    if share <= ctx.t["dominant_op_pct"]:
        return []
    evidence = {"op_type": str(top), "share_of_device_pct": share, "total_us": us(row["sum"]),
                "count": int(row["count"]), "threshold_pct": ctx.t["dominant_op_pct"],
                "next": [{"op_type": str(n), "share_pct": float(v) / ctx.device_ns * 100.0}
                         for n, v in g["sum"].iloc[1:4].items()]}
    msg = f"Op type {top} takes {share:.1f}% of device compute time ({int(row['count'])} calls)."
    return [ctx.finding("dominant_op_type", str(top), f"Dominant op type {top}", msg, ADVICE,
                        None, evidence, [ctx.link("kernels", group_by="type", search=str(top))],
                        severity="low")]


RULE = Rule("dominant_op_type", "Dominant op type", check)
