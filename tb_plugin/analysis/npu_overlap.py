"""Step time breakdown from the trace's `Overlap Analysis` events (NPU).

torch_npu writes step_trace_time.csv only in some setups; the trace may still carry the
msprof `Overlap Analysis` process (threads/events `Computing`, `Communication`,
`Communication(Not Overlapped)`, `Free`). This recomputes the same numbers the way
torch_npu does (docs/formats.md §2.8):

- every overlap event is attributed to the step whose device-side window contains its start;
- bd_computing / bd_communication_not_overlapped / bd_free = Σ dur of those events,
  bd_overlapped = Σ Communication − Σ Communication(Not Overlapped),
  total_ns = computing + communication_not_overlapped + free.

Device-side windows: torch_npu uses [first kernel of the step's first launching op,
max(last kernel end, host step end)]. Here the window of step N starts at the earliest device
end (`f`) of a `torch_to_npu` / `mindspore_to_npu` flow whose start lies in the host
`ProfilerStep#N` window (the host start when there is no such flow) and ends where the next
step's window starts; the last one ends at max(host end, last overlap event end). Without
ProfilerStep slices everything is one step, 0 (like step_trace_time's empty Step).

Entry point for `derive.complete(profile)`: when `not profile.has("steps")`, call
`steps_from_overlap(profile)`; it returns a steps DataFrame (empty when the trace has no
Overlap Analysis events) and, when not empty, `profile.set("steps", df, keep_extra=True)`
plus `profile.meta.step_categories = STEP_CATEGORIES` — or simply call
`fill_steps(profile)`, which does exactly that and returns True if it filled anything.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..model import Profile
from ..step_categories import NPU_STEP_CATEGORIES, category_names
from ..step_windows import profiler_step_windows

STEP_CATEGORIES = category_names(NPU_STEP_CATEGORIES)

_EVENT_NAMES = {
    "Computing": "computing",
    "Communication": "communication",
    "Communication(Not Overlapped)": "communication_not_overlapped",
    "Free": "free",
}
_DEVICE_FLOWS = ("torch_to_npu", "mindspore_to_npu")


def steps_from_overlap(slices, tracks: pd.DataFrame | None = None,
                       step_windows: pd.DataFrame | None = None,
                       flows: pd.DataFrame | None = None) -> pd.DataFrame:
    """Steps table (model schema + bd_* columns) from Overlap Analysis slices.

    Call as `steps_from_overlap(profile)` or with the tables:
    `steps_from_overlap(slices, tracks, step_windows=None, flows=None)`.
    `step_windows` (columns step, start_ns, end_ns: host windows) defaults to the
    `ProfilerStep#N` slices; `flows` refines them to device-side windows.
    Returns an empty frame when there are no overlap events.
    """
    if isinstance(slices, Profile):
        profile = slices
        slices = profile.table("slices")
        tracks = profile.table("tracks")
        flows = profile.table("flows")
    if tracks is None:
        raise TypeError("tracks are required when passing tables")
    cols = ["step", "start_ns", "end_ns", "total_ns"] + [f"bd_{c}" for c in STEP_CATEGORIES]
    empty = pd.DataFrame({c: np.zeros(0, np.int64) for c in cols})
    if len(slices) == 0 or len(tracks) == 0:
        return empty
    ov_tracks = tracks.loc[tracks["kind"].astype(str) == "overlap", "track_id"].to_numpy()
    if len(ov_tracks) == 0:
        return empty
    ev = slices[np.isin(slices["track_id"].to_numpy(), ov_tracks)]
    cat = ev["name"].astype(str).map(_EVENT_NAMES)
    ev = pd.DataFrame({"cat": cat.to_numpy(), "start": ev["start_ns"].to_numpy(np.int64),
                       "dur": ev["dur_ns"].to_numpy(np.int64)}).dropna(subset=["cat"])
    if len(ev) == 0:
        return empty
    if step_windows is None:
        step_windows = profiler_step_windows(slices)
    ev_end = int((ev["start"] + ev["dur"]).max())
    if len(step_windows) == 0:
        ids = np.zeros(1, np.int64)
        host_start = np.zeros(1, np.int64)
        host_end = np.zeros(1, np.int64)
        bounds = np.array([np.iinfo(np.int64).min], np.int64)
    else:
        w = step_windows.sort_values("start_ns").reset_index(drop=True)
        ids = w["step"].to_numpy(np.int64)
        host_start = w["start_ns"].to_numpy(np.int64)
        host_end = w["end_ns"].to_numpy(np.int64)
        bounds = _device_starts(host_start, host_end, slices, flows)
    # Window i = [bounds[i], bounds[i+1]); the last one ends at max(host end, last event end).
    last_end = max(int(host_end[-1]), ev_end) + 1 if len(step_windows) else np.iinfo(np.int64).max
    idx = np.searchsorted(bounds, ev["start"].to_numpy(), side="right") - 1
    ok = (idx >= 0) & (ev["start"].to_numpy() < last_end)
    ev = ev[ok].assign(i=idx[ok])
    sums = ev.pivot_table(index="i", columns="cat", values="dur", aggfunc="sum", fill_value=0)
    n = len(ids)
    out = pd.DataFrame({"step": ids, "start_ns": host_start, "end_ns": host_end})
    for c in ("computing", "communication", "communication_not_overlapped", "free"):
        v = np.zeros(n, np.int64)
        if c in sums.columns:
            v[sums.index.to_numpy()] = sums[c].to_numpy(np.int64)
        out[c] = v
    out["bd_computing"] = out.pop("computing")
    out["bd_communication_not_overlapped"] = out.pop("communication_not_overlapped")
    out["bd_overlapped"] = np.maximum(out["communication"] - out["bd_communication_not_overlapped"], 0)
    out["bd_free"] = out.pop("free")
    out["communication_ns"] = out.pop("communication")
    out["total_ns"] = out["bd_computing"] + out["bd_communication_not_overlapped"] + out["bd_free"]
    return out[cols + ["communication_ns"]].sort_values("step", kind="stable").reset_index(drop=True)


def fill_steps(profile) -> bool:
    """Set `profile`'s steps from overlap events when it has none. True if it filled them."""
    if profile.has("steps"):
        return False
    df = steps_from_overlap(profile)
    if len(df) == 0:
        return False
    profile.set("steps", df, keep_extra=True)
    profile.meta.step_categories = list(STEP_CATEGORIES)
    return True


def _device_starts(host_start, host_end, slices, flows) -> np.ndarray:
    """Start of each step's device-side window (sorted windows in, monotonic bounds out)."""
    starts = host_start.copy()
    if flows is not None and len(flows):
        f = flows[flows["name"].astype(str).isin(_DEVICE_FLOWS)]
        if len(f):
            ids = f["flow_id"].astype(str).to_numpy()
            ph = f["phase"].astype(str).to_numpy()
            ts = f["ts_ns"].to_numpy(np.int64)
            s = pd.DataFrame({"id": ids[ph == "s"], "s_ts": ts[ph == "s"]})
            e = pd.DataFrame({"id": ids[ph == "f"], "f_ts": ts[ph == "f"]})
            pairs = s.merge(e, on="id")
            if len(pairs):
                k = np.searchsorted(host_start, pairs["s_ts"].to_numpy(), side="right") - 1
                inside = (k >= 0) & (pairs["s_ts"].to_numpy() < host_end[np.maximum(k, 0)])
                if inside.any():
                    first = pd.Series(pairs["f_ts"].to_numpy()[inside]).groupby(k[inside]).min()
                    starts[first.index.to_numpy()] = np.minimum(
                        first.to_numpy(), np.iinfo(np.int64).max)
    # Keep bounds monotonic so each event falls in exactly one window.
    return np.maximum.accumulate(starts)
