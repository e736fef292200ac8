"""slow_link (run level): a communication link well below the median bandwidth of its
transport (`analysis.distributed_findings.slow_link_findings`). Impact: the transfer time the
link would save at the median bandwidth, per step.
"""
from __future__ import annotations

from ...analysis import distributed_findings
from ..core import NotApplicable, Rule

ADVICE = ("Check this link's hardware and configuration: the NIC / HCCS port and cable, "
          "switch congestion, RDMA traffic class (HCCL_RDMA_TC / HCCL_RDMA_SL), and whether the "
          "two ranks are placed as the parallel layout expects.")


def check(ctx):
    if len(ctx.links) == 0:
        raise NotApplicable("no communication matrix (communication_matrix.json)")
    out = []
    for f in distributed_findings.slow_link_findings(ctx.links, ctx.t):
        ev = f["evidence"]
        at_median_us = ev["size_mb"] / ev["median_bandwidth_gbps"] * 1000.0 \
            if ev["median_bandwidth_gbps"] > 0 else ev["time_us"]
        impact = max(ev["time_us"] - at_median_us, 0.0) / ctx.step_count
        src = next((s for s in ctx.summaries if s["rank"] == ev["src"]), {})
        out.append(ctx.finding("slow_link", f["link"], f"Slow link {ev['src']} → {ev['dst']}",
                               f["message"], ADVICE, impact, ev,
                               [ctx.link("distributed", link=f["link"])], rank=ev["src"],
                               worker=src.get("worker"), span=src.get("span")))
    return out


RULE = Rule("slow_link", "Slow communication link", check, scope="run")
