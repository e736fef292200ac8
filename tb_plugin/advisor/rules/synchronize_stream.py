"""synchronize_stream: op launches immediately followed by a stream synchronization
(`Node@launch` then `AscendCL@aclrtSynchronizeStream` on the same CANN thread), as
msprof-analyze checks; fires above `sync_stream_ratio` of the launches (usually
ASCEND_LAUNCH_BLOCKING=1 or explicit syncs). Impact: the synchronization time per step.
"""
from __future__ import annotations

import numpy as np

from ..core import NotApplicable, Rule, matching_codes, us

ADVICE = ("Unset ASCEND_LAUNCH_BLOCKING and remove explicit synchronizations "
          "(torch.npu.synchronize(), .item(), .cpu() inside the step); follow the call stacks "
          "in the timeline to the code.")


def check(ctx):
    ctx.require_npu()
    ctx.require_trace()
    s = ctx.slices_matching(r"^(Node@launch|AscendCL@aclrtSynchronizeStream)$", kinds=("cann",))
    launch = matching_codes(s["name"], r"^Node@launch$")
    if not launch.any():
        raise NotApplicable("no Node@launch events (CANN layer not in the trace)")
    s = s.assign(_l=launch).sort_values(["track_id", "start_ns"], kind="stable")
    is_l = s["_l"].to_numpy()
    same = s["track_id"].to_numpy()[1:] == s["track_id"].to_numpy()[:-1]
    followed = np.r_[is_l[:-1] & ~is_l[1:] & same, False]
    n_launch = int(is_l.sum())
    ratio = float(followed.sum()) / n_launch
    if ratio <= ctx.t["sync_stream_ratio"]:
        return []
    sync = s[~is_l]
    total = ctx.per_step(us(sync["dur_ns"].to_numpy(dtype=np.int64).sum()))
    evidence = {"launches": n_launch, "followed_by_sync": int(followed.sum()), "ratio": ratio,
                "threshold": ctx.t["sync_stream_ratio"], "sync_per_step_us": total}
    msg = (f"{ratio * 100:.0f}% of op launches are followed by aclrtSynchronizeStream: the host "
           f"waits for every op ({total:,.0f} µs per step).")
    s0 = int(sync["start_ns"].to_numpy()[0])
    return [ctx.finding("synchronize_stream", "synchronize_stream", "Synchronous op launches",
                        msg, ADVICE, total, evidence,
                        [ctx.link("trace", start_us=us(s0) - 1000, end_us=us(s0) + 1000)])]


RULE = Rule("synchronize_stream", "Stream synchronization after launches", check)
