"""GPU (kineto) step time breakdown, as torch-tb-profiler's Overview computes it.

`step_breakdown(profile) -> DataFrame` returns the `steps` table (step, start_ns, end_ns,
total_ns, bd_<category>...) for a kineto profile; derive.py calls it when the reader left
`steps` empty. Pure function of the normalized tables, no I/O.

Reference: pytorch/kineto `tb_plugin/torch_tb_profiler/profiler/event_parser.py`
(`StepParser`, `ProfileRole`) and `overall_parser.py` (`OverallParser.Statistics`):

* Activities (role ranges), by lowercased slice cat / kernel core_type:
  kernel       device events with core_type "kernel" not launched by a collective;
  memcpy, memset;
  communication kernels launched by an NCCL/Gloo op (kernels.comm) and host ops named
               `nccl:*`/`gloo:*` (broadcast, reduce, all_reduce, all_gather, reduce_scatter);
  runtime      cats runtime / cuda_runtime / mtia_runtime / glow_runtime / xpu_runtime /
               privateuse1_runtime;
  dataloader   operator/user_annotation slices named `enumerate(DataLoader)#*.__next__` or
               `enumerate(DataPipe)#*`;
  cpu_exec     other cpu_op / operator / python slices (not ProfilerStep); user_annotation
               slices (record_function ranges) are not CPU exec: torch-tb-profiler drops
               them, so the part of them no op covers is Other;
  other        the rest of the step window.
* Each instant of a step is attributed to the highest-priority activity active then:
  kernel > memcpy > memset > communication > runtime > dataloader > cpu_exec > other.
* Steps: `ProfilerStep#N` slices (cpu_op/operator/user_annotation). Without any, one step
  "0" spanning the host ops (python/operator/ProfilerStep slices). When device events exist,
  each window is extended to the device side like upstream `_find_device_steps` /
  `_update_steps_duration`: a step ends at max(host end, last end of device events launched
  by runtime calls lying entirely inside the host step), starts at max(host start, previous
  step end); and trailing steps that launched no device event (or the last one if it
  launched < 80 % of the previous step's count) are dropped.
* total_ns = end_ns - start_ns; the bd_ columns sum to it.

Checked against torch-tb-profiler 0.4.3's own answers on the real traces (tests/exactness/);
docs/exactness.md lists the definitions and the deliberate differences.

Deliberate deviation: `gpu_user_annotation` slices (GPU-side copies of record_function
ranges in newer kineto) are ignored; upstream maps them like host user annotations, which
would count GPU time as cpu_exec and duplicate ProfilerStep windows.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..model import Profile
from ..step_categories import GPU_STEP_CATEGORIES, category_names

CATEGORIES = category_names(GPU_STEP_CATEGORIES)  # priority order, highest first
RUNTIME_CATS = {"runtime", "cuda_runtime", "mtia_runtime", "glow_runtime", "xpu_runtime",
                "privateuse1_runtime"}
OPERATOR_CATS = {"cpu_op", "operator"}
COMM_OPS = {"nccl:broadcast", "nccl:reduce", "nccl:all_reduce", "nccl:all_gather",
            "nccl:reduce_scatter", "gloo:broadcast", "gloo:reduce", "gloo:all_reduce",
            "gloo:all_gather", "gloo:reduce_scatter"}
_STEP = re.compile(r"^ProfilerStep#(\d+)")
_DATALOADER = re.compile(r"^(enumerate\(DataLoader\)#.*\.__next__|enumerate\(DataPipe\)#.*)$",
                         re.S)


def _merge(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as sorted disjoint (start, end) arrays."""
    if len(s) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    o = np.argsort(s, kind="stable")
    s, e = s[o].astype(np.int64), e[o].astype(np.int64)
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > run_end[:-1]
    starts = s[new]
    grp = np.cumsum(new) - 1
    ends = np.zeros(len(starts), np.int64)
    np.maximum.at(ends, grp, e)
    ends = np.maximum(ends, starts)
    keep = ends > starts
    return starts[keep], ends[keep]


def _covered(bounds: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """For elementary segments [bounds[i], bounds[i+1]): covered by the merged intervals?"""
    left = bounds[:-1]
    if len(s) == 0:
        return np.zeros(len(left), bool)
    idx = np.searchsorted(s, left, side="right") - 1
    ok = idx >= 0
    out = np.zeros(len(left), bool)
    out[ok] = e[idx[ok]] > left[ok]
    return out


def _steps(names: np.ndarray, cats: np.ndarray, start: np.ndarray, end: np.ndarray):
    is_step_cat = np.isin(cats, list(OPERATOR_CATS | {"user_annotation"}))
    rows = []
    for i in np.nonzero(is_step_cat)[0]:
        m = _STEP.match(names[i])
        if m and int(m.group(1)) < 1 << 63:  # (a step number past int64 is no step: damage)
            rows.append((int(start[i]), int(end[i]), int(m.group(1))))
    rows = sorted(set(rows))
    return rows


def step_breakdown(profile: Profile) -> pd.DataFrame:
    cols = ["step", "start_ns", "end_ns", "total_ns"] + [f"bd_{c}" for c in CATEGORIES]
    slices = profile.table("slices")
    kernels = profile.table("kernels")
    if len(slices) == 0 and len(kernels) == 0:
        return pd.DataFrame({c: np.zeros(0, np.int64) for c in cols})
    names = slices["name"].astype("string").fillna("").to_numpy(dtype=object)
    cats = slices["cat"].astype("string").fillna("").str.lower().to_numpy(dtype=object)
    s_start = slices["start_ns"].to_numpy(np.int64)
    s_end = s_start + slices["dur_ns"].to_numpy(np.int64)

    is_rt = np.isin(cats, list(RUNTIME_CATS))
    is_hostop = np.isin(cats, list(OPERATOR_CATS | {"user_annotation", "python"}))
    is_stepname = np.array([n.startswith("ProfilerStep#") for n in names], dtype=bool)
    is_opish = np.isin(cats, list(OPERATOR_CATS | {"user_annotation"}))
    is_dl = is_opish & np.array([bool(_DATALOADER.match(n)) for n in names], dtype=bool)
    is_step = is_opish & is_stepname
    is_comm_op = is_hostop & ~is_dl & ~is_step & np.isin(names, list(COMM_OPS))
    # torch-tb-profiler drops user annotations (record_function ranges such as
    # `Optimizer.step#SGD.step`) except ProfilerStep, collectives and the DataLoader: the
    # ops inside them are CPU exec, the rest of their time is Other.
    is_annotation = cats == "user_annotation"
    is_cpu = is_hostop & ~is_dl & ~is_step & ~is_comm_op & ~is_annotation

    k_type = kernels["core_type"].astype("string").fillna("").to_numpy(dtype=object)
    k_start = kernels["start_ns"].to_numpy(np.int64)
    k_end = k_start + kernels["dur_ns"].to_numpy(np.int64)
    k_comm = (kernels["comm"].fillna(False).to_numpy(bool) if "comm" in kernels.columns
              else np.array(["nccl" in str(n).lower() for n in kernels["name"]], dtype=bool))
    is_kernel = (k_type == "kernel") & ~k_comm
    is_kcomm = (k_type == "kernel") & k_comm

    roles = {
        "kernel": (k_start[is_kernel], k_end[is_kernel]),
        "memcpy": (k_start[k_type == "memcpy"], k_end[k_type == "memcpy"]),
        "memset": (k_start[k_type == "memset"], k_end[k_type == "memset"]),
        "communication": (np.concatenate([k_start[is_kcomm], s_start[is_comm_op]]),
                          np.concatenate([k_end[is_kcomm], s_end[is_comm_op]])),
        "runtime": (s_start[is_rt], s_end[is_rt]),
        "dataloader": (s_start[is_dl], s_end[is_dl]),
        "cpu_exec": (s_start[is_cpu], s_end[is_cpu]),
    }

    # --- step windows (host side)
    steps = _steps(names, cats, s_start, s_end)
    if not steps:
        host = np.isin(cats, list(OPERATOR_CATS | {"python"})) | is_step
        if not host.any():
            return pd.DataFrame({c: np.zeros(0, np.int64) for c in cols})
        steps = [(int(s_start[host].min()), int(s_end[host].max()), 0)]
    steps = _device_adjust(steps, slices, is_rt, s_start, s_end, kernels, k_start, k_end)

    # --- priority attribution on elementary segments
    st_s = np.array([s for s, _, _ in steps], np.int64)
    st_e = np.array([e for _, e, _ in steps], np.int64)
    merged = {k: _merge(*v) for k, v in roles.items()}
    parts = [st_s, st_e] + [a for se in merged.values() for a in se]
    bounds = np.unique(np.concatenate(parts))
    seg_len = np.diff(bounds)
    owner = np.full(len(seg_len), len(CATEGORIES) - 1, np.int8)  # other
    free = np.ones(len(seg_len), bool)
    for ci, cat in enumerate(CATEGORIES[:-1]):
        cov = _covered(bounds, *merged[cat]) & free
        owner[cov] = ci
        free &= ~cov
    # Prefix sums per category over segments.
    csum = np.zeros((len(CATEGORIES), len(seg_len) + 1), np.int64)
    for ci in range(len(CATEGORIES)):
        csum[ci, 1:] = np.cumsum(np.where(owner == ci, seg_len, 0))
    rows = []
    for (s, e, step) in steps:
        a = np.searchsorted(bounds, s)
        b = np.searchsorted(bounds, e)
        row = {"step": step, "start_ns": s, "end_ns": e, "total_ns": e - s}
        for ci, cat in enumerate(CATEGORIES):
            row[f"bd_{cat}"] = int(csum[ci, b] - csum[ci, a]) if b > a else 0
        rows.append(row)
    out = pd.DataFrame(rows, columns=cols)
    for c in cols:
        out[c] = out[c].astype(np.int64)
    return out


def _device_adjust(steps, slices, is_rt, s_start, s_end, kernels, k_start, k_end):
    """Upstream `_find_device_steps` + `_update_steps_duration`."""
    if len(kernels) == 0 or "correlation" not in slices.columns or \
            "correlation" not in kernels.columns or not is_rt.any():
        return steps
    rt_corr = slices["correlation"].to_numpy(dtype=object)[is_rt]
    rt_s, rt_e = s_start[is_rt], s_end[is_rt]
    k_corr = kernels["correlation"]
    dev_by_corr: dict[int, list[int]] = {}
    for i, c in enumerate(k_corr):
        if c is not pd.NA and c is not None:
            dev_by_corr.setdefault(int(c), []).append(i)
    n_steps = len(steps)
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    dev_min = [big] * n_steps
    dev_max = [small] * n_steps
    matched_count = [0] * n_steps
    matched = np.zeros(len(kernels), bool)
    ss = np.array([s for s, _, _ in steps], np.int64)
    order = np.argsort(rt_s, kind="stable")
    for j in order:
        c = rt_corr[j]
        if c is pd.NA or c is None:
            continue
        nodes = dev_by_corr.get(int(c))
        if not nodes:
            continue
        i = int(np.searchsorted(ss, rt_s[j], side="right")) - 1
        if i < 0 or rt_e[j] > steps[i][1]:
            continue
        for k in nodes:
            dev_min[i] = min(dev_min[i], int(k_start[k]))
            dev_max[i] = max(dev_max[i], int(k_end[k]))
            matched[k] = True
            matched_count[i] += 1
    if not matched.any():
        return steps
    prev_end = steps[0][0]
    if dev_min[0] != big:
        um = ~matched & (k_end < dev_min[0])
        if um.any():
            prev_end = max(prev_end, int(k_end[um].max()))
    new = []
    for i, (s, e, step) in enumerate(steps):
        start = max(prev_end, s)
        if dev_min[i] == big:
            end = max(e, start)
        else:
            end = max(e, dev_max[i])
            if end < start:
                end = start
        new.append((start, end, step))
        prev_end = end
    if len(new) > 1:
        i = len(new) - 1
        while i >= 0 and matched_count[i] == 0:
            i -= 1
        if i >= 0:
            keep = i + 1
            if i > 0 and matched_count[i - 1] * 0.8 > matched_count[i]:
                keep = i
            new = new[:keep]
    return new
