"""transdata: format-conversion kernels (TransData, trans_TransData_*).

Input: the kernels; the framework ops that caused them through the framework -> device flows
(`torch_to_npu`: the flow ends at the kernel's start, begins at the op's start) and the op's
call stack from the operators table when recorded. Fires when they take at least
`transdata_min_pct` of device time. Impact: their time per step (converting once, or keeping
framework formats, removes most of them).
"""
from __future__ import annotations

import numpy as np

from ...lazy import pd
from ..core import Rule, matching_codes, us

ADVICE = ("Keep tensors in framework formats so the NPU does not convert them back and forth: "
          "set torch_npu.npu.config.allow_internal_format = False (and "
          "torch_npu.npu.set_compile_mode(jit_compile=False)); where a private format is wanted, "
          "convert once (npu_format_cast) instead of per step. Follow the op's call stack to the "
          "line that triggers the conversion.")


def _causes(ctx, kernel_starts: np.ndarray, limit: int = 5) -> list[dict]:
    """Framework ops whose flows end at these kernels: [{"op", "kernels", "call_stack"}]."""
    flows = ctx.profile.table("flows")
    if len(flows) == 0 or not ctx.profile.has("slices"):
        return []
    fw = matching_codes(flows["name"], r"^(torch|mindspore)_to_npu$")
    f = flows[fw]
    phase = f["phase"].astype(str).to_numpy()
    ends = f[phase == "f"]
    begins = f[phase == "s"]
    hit = ends[np.isin(ends["ts_ns"].to_numpy(dtype=np.int64), kernel_starts)]
    if len(hit) == 0:
        return []
    src = begins[begins["flow_id"].astype(str).isin(set(hit["flow_id"].astype(str)))]
    s = ctx.slices
    on_tracks = s[np.isin(s["track_id"].to_numpy(), src["track_id"].unique())]
    # The op a flow starts from: the innermost slice starting at the flow's time on its track.
    cand = pd.DataFrame({"track_id": on_tracks["track_id"].to_numpy(),
                         "ts_ns": on_tracks["start_ns"].to_numpy(dtype=np.int64),
                         "depth": on_tracks["depth"].to_numpy(),
                         "name": on_tracks["name"].astype(str).to_numpy()})
    cand = cand.sort_values("depth", kind="stable").drop_duplicates(["track_id", "ts_ns"],
                                                                     keep="last")
    ends_at = pd.DataFrame({"track_id": src["track_id"].to_numpy(),
                            "ts_ns": src["ts_ns"].to_numpy(dtype=np.int64)})
    ops_hit = ends_at.merge(cand, on=["track_id", "ts_ns"], how="inner")
    counts = ops_hit["name"].value_counts().to_dict()
    ops = ctx.profile.table("operators")
    out = []
    for name, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:limit]:
        stack = ""
        if len(ops):
            rows = ops[(ops["name"].astype(str) == name) & (ops["call_stack"].astype(str) != "")]
            if len(rows):
                stack = str(rows["call_stack"].iloc[0])
        out.append({"op": name, "kernels": n, "call_stack": stack})
    return out


def check(ctx):
    ctx.require_npu()
    ctx.require_kernels()
    k = ctx.compute_kernels
    m = matching_codes(k["name"], r"transdata") | matching_codes(k["type"], r"^transdata$")
    if not m.any() or ctx.device_ns <= 0:
        return []
    tk = k[m]
    total_ns = int(tk["dur_ns"].to_numpy(dtype=np.int64).sum())
    share = total_ns / ctx.device_ns * 100.0
    if share < ctx.t["transdata_min_pct"]:
        return []
    causes = _causes(ctx, tk["start_ns"].to_numpy(dtype=np.int64))
    names = tk["name"].astype(str).value_counts()
    evidence = {"count": int(m.sum()), "total_us": us(total_ns),
                "per_step_us": ctx.per_step(us(total_ns)), "share_of_device_pct": share,
                "kernels": [{"name": n, "count": int(c)} for n, c in names.head(10).items()],
                "caused_by": causes}
    msg = (f"{int(m.sum())} format-conversion (TransData) kernels take {share:.1f}% of device "
           f"time ({ctx.per_step(us(total_ns)):,.0f} µs per step)")
    msg += (f"; most are launched by {causes[0]['op']}." if causes else ".")
    links = [ctx.link("kernels", search="TransData")]
    if causes:
        links.append(ctx.link("operators", search=causes[0]["op"]))
    return [ctx.finding("transdata", "transdata", "Format conversions (TransData)", msg, ADVICE,
                        ctx.per_step(us(total_ns)), evidence, links)]


RULE = Rule("transdata", "Format-conversion kernels", check)
