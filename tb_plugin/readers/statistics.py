"""Aggregate CSVs and AI CPU task CSVs shared by the torch_npu / MindSpore and msprof readers:
op_statistic (§2.9) -> `op_statistic`, api_statistic (§2.10) -> `api_statistic`,
data_preprocess.csv / msprof aicpu_*.csv (§2.13) -> AI CPU rows for `kernels`.

Times are µs text (exact ns); the older AI CPU files write `(ms)` headers, so the unit is
taken from the header. A file of several devices keeps the span's device (else all rows).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import columns as C
from .us_text import to_float, us_text_to_ns


def _ns(df: pd.DataFrame, c: dict, key: str) -> np.ndarray:
    if key not in c:
        return np.zeros(len(df), np.int64)
    return us_text_to_ns(df[c[key]].fillna("").astype(str).to_numpy(dtype=object))


def _ms_ns(df: pd.DataFrame, c: dict, key: str) -> np.ndarray:
    v = to_float(df[c[key]]) if key in c else np.zeros(len(df))
    return np.round(np.nan_to_num(v) * 1e6).astype(np.int64)


def _device(df: pd.DataFrame, device_id) -> pd.DataFrame:
    h = C.find_header(df, "Device_id")
    if h is None or device_id is None:
        return df
    dev = pd.to_numeric(df[h], errors="coerce")
    mine = (dev == int(device_id)).fillna(False).to_numpy(dtype=bool)  # a bad cell is not ours
    return df[mine].reset_index(drop=True) if mine.any() else df


def op_statistic(df: pd.DataFrame, device_id=None) -> pd.DataFrame:
    """op_statistic rows (model schema) of an op_statistic CSV."""
    df = _device(df, device_id)
    c = C.resolve(df, C.OP_STATISTIC)
    calls = pd.to_numeric(df[c["calls"]], errors="coerce").fillna(0).astype(np.int64) \
        .to_numpy() if "calls" in c else np.zeros(len(df), np.int64)
    return pd.DataFrame({
        "type": df[c["type"]].fillna("").astype(str).str.strip().to_numpy(),
        "core_type": df[c["core_type"]].fillna("").astype(str).str.strip().to_numpy()
        if "core_type" in c else "",
        "calls": calls, "total_ns": _ns(df, c, "total"), "min_ns": _ns(df, c, "min"),
        "avg_ns": _ns(df, c, "avg"), "max_ns": _ns(df, c, "max"),
        "ratio_pct": to_float(df[c["ratio"]]) if "ratio" in c else np.nan,
    })


def api_statistic(df: pd.DataFrame) -> pd.DataFrame:
    """api_statistic rows (model schema) of an api_statistic CSV (host and device rows)."""
    c = C.resolve(df, C.API_STATISTIC)
    calls = pd.to_numeric(df[c["calls"]], errors="coerce").fillna(0).astype(np.int64) \
        .to_numpy() if "calls" in c else np.zeros(len(df), np.int64)
    return pd.DataFrame({
        "level": df[c["level"]].fillna("").astype(str).to_numpy() if "level" in c else "",
        "name": df[c["name"]].fillna("").astype(str).str.strip().to_numpy(),
        "calls": calls, "total_ns": _ns(df, c, "total"), "avg_ns": _ns(df, c, "avg"),
        "min_ns": _ns(df, c, "min"), "max_ns": _ns(df, c, "max"),
    })


def aicpu_kernels(df: pd.DataFrame, device_id=None) -> pd.DataFrame:
    """AI CPU tasks as kernels rows: name = type = Node, core_type AI_CPU, start =
    Timestamp, dur = Compute_time (the op's own execution; Total_time when absent)."""
    df = _device(df, device_id)
    c = C.resolve(df, C.AICPU_TASKS)
    if "compute_us" in c:
        dur = _ns(df, c, "compute_us")
    elif "compute_ms" in c:
        dur = _ms_ns(df, c, "compute_ms")
    elif "total_us" in c:
        dur = _ns(df, c, "total_us")
    else:
        dur = _ms_ns(df, c, "total_ms")
    name = df[c["name"]].fillna("").astype(str).str.strip().to_numpy()
    stream = pd.to_numeric(df[c["stream"]], errors="coerce").astype("Int64") \
        if "stream" in c else pd.array([pd.NA] * len(df), dtype="Int64")
    return pd.DataFrame({"name": name, "type": name, "core_type": "AI_CPU",
                         "start_ns": _ns(df, c, "start"), "dur_ns": dur,
                         "stream_id": stream})


def add_aicpu(kernels: pd.DataFrame | None, tasks: pd.DataFrame) -> pd.DataFrame:
    """Kernels plus the AI CPU tasks the kernel file lacks. kernel_details / op_summary list
    AI CPU ops too, with their own start times, so a task whose name is already an AI_CPU
    kernel is not added (that would count it twice); tasks of other names (the dataset's
    GetNext, ...) are."""
    if kernels is None or len(kernels) == 0:
        return tasks
    cpu = kernels["core_type"].astype(str) == "AI_CPU"
    have = set(kernels.loc[cpu.to_numpy(), "name"].astype(str))
    new = ~tasks["name"].astype(str).isin(have).to_numpy()
    if not new.any():
        return kernels
    out = pd.concat([kernels, tasks[new]], ignore_index=True)
    return out.sort_values("start_ns", kind="stable").reset_index(drop=True)
