"""gc: Python garbage-collection pauses of at least `gc_min_us` (events with category GC or
on torch_npu's `Python GC` process; recorded with experimental_config gc_detect_threshold).
Impact: the pauses' time per step.
"""
from __future__ import annotations

import numpy as np

from ..core import Rule, matching_codes, us

ADVICE = ("Python's garbage collector stops the training loop: free large Python object graphs "
          "explicitly, tune gc.set_threshold(), or call gc.disable() in the loop and gc.collect() "
          "at safe points.")


def check(ctx):
    ctx.require_trace()
    s = ctx.slices
    t = ctx.tracks
    gc_tracks = t.loc[t["process"].astype(str).str.fullmatch(r"Python GC"), "track_id"].to_numpy() \
        if len(t) else np.zeros(0)
    m = matching_codes(s["cat"], r"^GC$", 0) | np.isin(s["track_id"].to_numpy(), gc_tracks)
    ev = s[m]
    d = ev["dur_ns"].to_numpy(dtype=np.int64)
    long = d >= ctx.t["gc_min_us"] * 1000
    if not long.any():
        return []
    total = ctx.per_step(us(d[long].sum()))
    i = int(np.argmax(d))
    s0 = int(ev["start_ns"].to_numpy()[i])
    evidence = {"pauses": int(long.sum()), "total_us": us(d[long].sum()), "per_step_us": total,
                "longest_us": us(d.max()), "threshold_us": ctx.t["gc_min_us"]}
    msg = (f"{int(long.sum())} garbage-collection pauses of at least {ctx.t['gc_min_us']:,.0f} µs "
           f"({total:,.0f} µs per step, the longest {us(d.max()):,.0f} µs).")
    return [ctx.finding("gc", "gc", "Python GC pauses", msg, ADVICE, total, evidence,
                        [ctx.link("trace", start_us=us(s0), end_us=us(s0 + int(d[i])))])]


RULE = Rule("gc", "Garbage collection", check)
