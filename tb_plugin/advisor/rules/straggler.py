"""straggler (run level): the rank the others wait for, from the distributed view's analysis
(`analysis.distributed_findings.straggler_findings`: the vote over collectives, else the
computing time excess). Impact: what the other ranks wait for it per step (their median wait
minus its own), else its computing excess per step.
"""
from __future__ import annotations

from ...analysis import distributed_findings
from ..core import NotApplicable, Rule

ADVICE = ("Find out why this rank is slower: compare its kernels and host time with a fast rank "
          "(the compare view), check its host (CPU binding, other processes, thermal throttling "
          "of its NPU / GPU) and its share of the work (uneven data or pipeline stages).")


def check(ctx):
    if len(ctx.summaries) < 2:
        raise NotApplicable("needs at least two ranks")
    out = []
    by_rank = {s["rank"]: s for s in ctx.summaries}
    for f in distributed_findings.straggler_findings(ctx.stats, ctx.summaries, ctx.t):
        ev = f["evidence"]
        s = by_rank.get(f["rank"], {})
        impact = None
        if ev.get("others_median_wait_us") is not None and ev.get("rank_wait_us") is not None:
            impact = max(ev["others_median_wait_us"] - ev["rank_wait_us"], 0.0)
        if not impact:
            impact = max(ev["excess_us"], 0.0)
        out.append(ctx.finding("straggler", f"rank{f['rank']}", f"Straggler: rank {f['rank']}",
                               f["message"], ADVICE, impact, ev,
                               [ctx.link("distributed"),
                                ctx.link("overview", worker=s.get("worker"), span=s.get("span"))],
                               rank=f["rank"], worker=s.get("worker"), span=s.get("span")))
    return out


RULE = Rule("straggler", "Straggler rank", check, scope="run")
