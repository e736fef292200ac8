"""Memory view: memory curves per device and component, peaks, and the allocations live in a
time window.

Definitions:
- A *curve* is the samples of one (device, component) of `memory_records`, in time order:
  allocated_mb (memory held by tensors) and reserved_mb (memory the allocator holds, cached
  blocks included). Components are the producer's: PTA, GE, PTA+GE, APP, WORKSPACE
  (torch_npu), MindSpore, GE, MindSpore+GE (MindSpore), PyTorch (kineto), ...
- The *total* curve of a device is the first component present of TOTAL_COMPONENTS:
  PTA+GE (torch_npu with graph-engine memory), MindSpore+GE, PTA, MindSpore, PyTorch
  (kineto's allocator), then APP (the whole process, as msprof sees it); otherwise the
  component with the highest reserved peak. The device peaks (`devices`) are the maxima of
  that curve's allocated and reserved samples (they may occur at different times). Curves
  are never summed: components overlap (PTA+GE already contains PTA and GE).
- Curve peaks are computed on every sample, before downsampling; peak_ts_us is the time of
  the first sample at the allocated peak (the reserved peak when allocated is absent).
- Downsampling for display: a curve with more than `max_points` samples is cut into equal
  count buckets and each bucket keeps its samples with the min and max allocated and the
  min and max reserved (in time order), plus the first and last sample. The global maxima
  are therefore always kept and the shape's extremes survive; at most `max_points` points.
- component_peaks: the peak reserved_mb of every (device, component) of `module_memory`
  (CANN modules, source "module") and of `memory_records` (source "records").
- Allocations in a window [start_us, end_us]: allocated at or before end_us and either not
  released inside the profile (release_us null) or released at or after start_us. Both ends
  are inclusive, so start_us == end_us selects the blocks live at that instant. The
  comparison is made on the same µs floats the API returns.
Timestamps are absolute microseconds (ns / 1000, floats); sizes MB, allocation sizes KB.
"""
from __future__ import annotations

import numpy as np

from ..lazy import pd
from ..model import Profile
from .tables import key_codes

TOTAL_COMPONENTS = ("PTA+GE", "MindSpore+GE", "PTA", "MindSpore", "PyTorch", "APP")
MIN_POINTS = 8
ALLOCATION_COLUMNS = ["name", "device", "size_kb", "alloc_us", "release_us", "duration_us"]


def _nanmax(a: np.ndarray) -> float | None:
    if len(a) == 0 or np.isnan(a).all():
        return None
    return float(np.nanmax(a))


def downsample_indices(alloc: np.ndarray, reserved: np.ndarray, max_points: int) -> np.ndarray:
    """Sorted indices of the samples kept (see module docstring); len <= max_points."""
    n = len(alloc)
    if max_points < MIN_POINTS:
        raise ValueError(f"max_points must be >= {MIN_POINTS}")
    if n <= max_points:
        return np.arange(n)
    buckets = (max_points - 2) // 4
    size = -(-n // buckets)  # ceil
    nb = -(-n // size)
    pad = nb * size - n
    keep = [np.array([0, n - 1])]
    base = np.arange(nb) * size
    for values in (alloc, reserved):
        v = np.asarray(values, dtype=np.float64)
        hi = np.where(np.isnan(v), -np.inf, v)
        lo = np.where(np.isnan(v), np.inf, v)
        hi = np.concatenate([hi, np.full(pad, -np.inf)]).reshape(nb, size)
        lo = np.concatenate([lo, np.full(pad, np.inf)]).reshape(nb, size)
        keep.append(base + hi.argmax(axis=1))
        keep.append(base + lo.argmin(axis=1))
    idx = np.unique(np.concatenate(keep))
    return idx[idx < n]


def _points(ts_us: np.ndarray, alloc: np.ndarray, reserved: np.ndarray) -> list[list]:
    """[[ts_us, allocated_mb, reserved_mb], ...] of three float64 arrays, a value that is
    not finite as None. (One `tolist` of the three as columns: a list per point built in
    Python cost ~0.4 ms per thousand points.)"""
    points = np.column_stack((ts_us, alloc, reserved)).astype(np.float64, copy=False).tolist()
    for col, arr in ((1, alloc), (2, reserved)):
        for i in np.flatnonzero(~np.isfinite(arr)):
            points[i][col] = None
    return points


def _total_component(components: dict[str, float | None]) -> str:
    for c in TOTAL_COMPONENTS:
        if c in components:
            return c
    return max(components, key=lambda c: (components[c] is not None, components[c] or 0.0))


def summary(profile: Profile, max_points: int = 2000) -> dict:
    """Curves (downsampled), device peaks and component peaks.

    {"devices": [{"device", "component", "peak_allocated_mb", "peak_reserved_mb",
                  "peak_ts_us"}],
     "curves": [{"device", "component", "points": [[ts_us, allocated_mb, reserved_mb]],
                 "samples", "peak_allocated_mb", "peak_reserved_mb", "peak_ts_us"}],
     "component_peaks": [{"device", "component", "source", "peak_reserved_mb"}],
     "start_us": first timestamp or None}
    `component` in devices names the total curve the peaks come from; `samples` is the
    curve's sample count before downsampling. Missing values are None.
    """
    if max_points < MIN_POINTS:
        raise ValueError(f"max_points must be >= {MIN_POINTS}")
    rec = profile.table("memory_records")
    mod = profile.table("module_memory")
    curves = []
    per_device: dict[str, dict[str, dict]] = {}
    component_peaks = []
    if len(rec):
        dcode, dlab = key_codes(rec["device"])
        ccode, clab = key_codes(rec["component"])
        ts_all = rec["ts_ns"].to_numpy(dtype=np.int64)
        # Sort by (device label, component label, time) on integer ranks, then split.
        drank = np.argsort(np.argsort(dlab.astype(str), kind="stable"), kind="stable")
        crank = np.argsort(np.argsort(clab.astype(str), kind="stable"), kind="stable")
        key = drank[dcode] * (len(clab) + 1) + crank[ccode]
        order = np.lexsort((ts_all, key))
        skey = key[order]
        starts = np.flatnonzero(np.r_[True, skey[1:] != skey[:-1]])
        ends = np.r_[starts[1:], len(skey)]
        alloc_all = rec["allocated_mb"].to_numpy(dtype=np.float64)[order]
        res_all = rec["reserved_mb"].to_numpy(dtype=np.float64)[order]
        ts_sorted = ts_all[order]
        for s0, s1 in zip(starts, ends):
            first = order[s0]
            d = dlab[dcode[first]]
            c = clab[ccode[first]]
            ts = ts_sorted[s0:s1]
            alloc = alloc_all[s0:s1]
            res = res_all[s0:s1]
            peak_a = _nanmax(alloc)
            peak_r = _nanmax(res)
            if peak_a is not None:
                peak_ts = ts[int(np.nanargmax(alloc))] / 1000.0
            elif peak_r is not None:
                peak_ts = ts[int(np.nanargmax(res))] / 1000.0
            else:
                peak_ts = None
            idx = downsample_indices(alloc, res, max_points)
            curve = {
                "device": str(d),
                "component": str(c),
                "points": _points(ts[idx] / 1000.0, alloc[idx], res[idx]),
                "samples": int(len(ts)),
                "peak_allocated_mb": peak_a,
                "peak_reserved_mb": peak_r,
                "peak_ts_us": None if peak_ts is None else float(peak_ts),
            }
            curves.append(curve)
            per_device.setdefault(str(d), {})[str(c)] = curve
            component_peaks.append({"device": str(d), "component": str(c),
                                    "source": "records", "peak_reserved_mb": peak_r})
    devices = []
    for d in sorted(per_device):
        comps = per_device[d]
        total = _total_component({c: v["peak_reserved_mb"] for c, v in comps.items()})
        devices.append({
            "device": d,
            "component": total,
            "peak_allocated_mb": comps[total]["peak_allocated_mb"],
            "peak_reserved_mb": comps[total]["peak_reserved_mb"],
            "peak_ts_us": comps[total]["peak_ts_us"],
        })
    if len(mod):
        dcode, dlab = key_codes(mod["device"])
        ccode, clab = key_codes(mod["component"])
        m = pd.DataFrame({"d": dcode, "c": ccode,
                          "reserved_mb": mod["reserved_mb"].to_numpy(dtype=np.float64)})
        peaks = m.groupby(["d", "c"], sort=False)["reserved_mb"].max()
        for (d, c), v in peaks.items():
            component_peaks.append({"device": str(dlab[d]), "component": str(clab[c]),
                                    "source": "module",
                                    "peak_reserved_mb": None if pd.isna(v) else float(v)})
    component_peaks.sort(key=lambda p: (p["device"], -(p["peak_reserved_mb"] or 0.0),
                                        p["component"]))
    start = None
    for name, col in (("memory_records", "ts_ns"), ("memory_allocations", "alloc_ns"),
                      ("module_memory", "ts_ns")):
        # (the allocations' frame, thousands of named rows, is made only when no record has
        # a time: a reader making this view's first answer needs none of it otherwise)
        table = profile.table(name)
        if len(table):
            start = float(table[col].to_numpy(dtype=np.int64).min() / 1000.0)
            break
    return {"devices": devices, "curves": curves, "component_peaks": component_peaks,
            "start_us": start}


def allocations(profile: Profile, start_us: float | None = None,
                end_us: float | None = None) -> pd.DataFrame:
    """Operator memory allocations overlapping [start_us, end_us] (either end optional).

    Columns: [name, device, size_kb, alloc_us, release_us, duration_us]; release_us and
    duration_us are NaN for blocks not released inside the profile. Ordered by alloc_us.
    """
    a = profile.table("memory_allocations")
    alloc_ns = a["alloc_ns"].to_numpy(dtype=np.int64)
    release_ns = a["release_ns"].to_numpy(dtype=np.int64)
    released = release_ns >= 0
    alloc_us = alloc_ns / 1000.0
    release_us = np.where(released, release_ns / 1000.0, np.nan)
    dur_ns = a["duration_ns"].to_numpy(dtype=np.int64)
    # Prefer the producer's duration; derive it when the producer left it empty (0).
    dur_ns = np.where(dur_ns > 0, dur_ns, release_ns - alloc_ns)
    duration_us = np.where(released, dur_ns / 1000.0, np.nan)
    mask = np.ones(len(a), dtype=bool)
    if end_us is not None:
        mask &= alloc_us <= float(end_us)
    if start_us is not None:
        mask &= ~released | (release_us >= float(start_us))
    sel = a if mask.all() else a[mask]
    out = pd.DataFrame({
        "name": sel["name"].astype("string").fillna("").reset_index(drop=True),
        "device": sel["device"].astype("string").fillna("").reset_index(drop=True),
        "size_kb": sel["size_kb"].to_numpy(dtype=np.float64),
        "alloc_us": alloc_us[mask],
        "release_us": release_us[mask],
        "duration_us": duration_us[mask],
    })
    return out.sort_values("alloc_us", kind="stable").reset_index(drop=True)
