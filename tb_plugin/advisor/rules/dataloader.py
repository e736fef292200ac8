"""dataloader (GPU / kineto): the DataLoader share of the step (the `dataloader` category of
torch-tb-profiler's breakdown) above `dataloader_pct`. Impact: the DataLoader time per step.
"""
from __future__ import annotations

from ..core import NotApplicable, Rule

ADVICE = ("Load data in parallel with training: DataLoader(num_workers=N) with N > 0 "
          "(start with the number of CPU cores per GPU), pin_memory=True, persistent_workers=True "
          "and a prefetch_factor; check disk I/O and decoding cost.")


def check(ctx):
    ctx.require_gpu()
    pct = ctx.category_pct("dataloader")
    if pct is None:
        raise NotApplicable("no step breakdown with a DataLoader category")
    if pct <= ctx.t["dataloader_pct"]:
        return []
    per_step = pct / 100.0 * ctx.avg_step_us
    evidence = {"dataloader_per_step_us": per_step, "share_of_step_pct": pct,
                "threshold_pct": ctx.t["dataloader_pct"], "avg_step_us": ctx.avg_step_us}
    msg = f"The DataLoader takes {pct:.1f}% of the step time ({per_step:,.0f} µs per step)."
    return [ctx.finding("dataloader", "dataloader", "Input-bound steps (DataLoader)", msg, ADVICE,
                        per_step, evidence, [ctx.link("overview"),
                                             ctx.link("operators", search="DataLoader")])]


RULE = Rule("dataloader", "DataLoader time", check)
