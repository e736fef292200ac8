"""Aggregate CSVs and AI CPU task CSVs shared by the torch_npu / MindSpore and msprof readers:
op_statistic (§2.9) -> `op_statistic`, api_statistic (§2.10) -> `api_statistic`,
data_preprocess.csv / msprof aicpu_*.csv (§2.13) -> AI CPU rows for `kernels`.

Times are µs text (exact ns); the older AI CPU files write `(ms)` headers, so the unit is
taken from the header. A file of several devices keeps the span's device (else all rows).
The statistics tables are made in Arrow (a pyarrow Table for `Profile.set`): a file of a
few dozen rows cost ~10 ms through pandas, mostly per-operation overhead.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import columns as C
from .text_cells import may_need_trim
from .tolerant import text_series
from .us_text import float_to_int64, to_float, to_int64, us_text_to_ns


def _table(data) -> pa.Table:
    """The file's cells as an Arrow table of text: `ReadContext.csv_table`'s, or a frame of
    text columns (`ReadContext.csvs` of several files) converted once."""
    if isinstance(data, pa.Table):
        return data
    return pa.table({str(c): pa.array(data[c], from_pandas=True) for c in data.columns})


def _text(t: pa.Table, c: dict, key: str, strip: bool = False) -> pa.Array:
    """A text column: missing cells as "" (stripped of surrounding whitespace)."""
    col = pc.fill_null(t.column(c[key]).cast(pa.string()), "")
    if strip and may_need_trim(col):
        col = pc.utf8_trim_whitespace(col)
    return col


def _numbers(col) -> np.ndarray:
    """Text -> float64 (NaN for missing or not a number), as `to_float` parses it."""
    return C.parse_numbers(col, to_float)


def _counts(t: pa.Table, c: dict, key: str = "calls") -> np.ndarray:
    if key not in c:
        return np.zeros(t.num_rows, np.int64)
    return float_to_int64(_numbers(t.column(c[key])))


def _ns(t: pa.Table, c: dict, key: str) -> np.ndarray:
    if key not in c:
        return np.zeros(t.num_rows, np.int64)
    return us_text_to_ns(t.column(c[key]))  # (a missing cell is 0 ns)


def _ms_ns(t: pa.Table, c: dict, key: str) -> np.ndarray:
    v = _numbers(t.column(c[key])) if key in c else np.zeros(t.num_rows)
    return float_to_int64(v, 1e6)


def _device(t: pa.Table, device_id) -> pa.Table:
    h = C.find_header(t, "Device_id")
    if h is None or device_id is None:
        return t
    mine = _numbers(t.column(h)) == int(device_id)  # a bad cell (NaN) is not ours
    return t.filter(pa.array(mine)) if mine.any() else t


def op_statistic(data, device_id=None) -> pa.Table:
    """op_statistic rows (model schema) of an op_statistic CSV."""
    t = _device(_table(data), device_id)
    c = C.resolve(t, C.OP_STATISTIC)
    cols = {"type": _text(t, c, "type", strip=True)}
    if "core_type" in c:
        cols["core_type"] = _text(t, c, "core_type", strip=True)
    cols.update({"calls": _counts(t, c), "total_ns": _ns(t, c, "total"),
                 "min_ns": _ns(t, c, "min"), "avg_ns": _ns(t, c, "avg"),
                 "max_ns": _ns(t, c, "max")})
    if "ratio" in c:
        cols["ratio_pct"] = _numbers(t.column(c["ratio"]))
    return pa.table(cols)


def api_statistic(data) -> pa.Table:
    """api_statistic rows (model schema) of an api_statistic CSV (host and device rows)."""
    t = _table(data)
    c = C.resolve(t, C.API_STATISTIC)
    cols = {"level": _text(t, c, "level")} if "level" in c else {}
    cols.update({"name": _text(t, c, "name", strip=True), "calls": _counts(t, c),
                 "total_ns": _ns(t, c, "total"), "avg_ns": _ns(t, c, "avg"),
                 "min_ns": _ns(t, c, "min"), "max_ns": _ns(t, c, "max")})
    return pa.table(cols)


def aicpu_kernels(data, device_id=None) -> pd.DataFrame:
    """AI CPU tasks as kernels rows: name = type = Node, core_type AI_CPU, start =
    Timestamp, dur = Compute_time (the op's own execution; Total_time when absent)."""
    t = _device(_table(data), device_id)
    c = C.resolve(t, C.AICPU_TASKS)
    if "compute_us" in c:
        dur = _ns(t, c, "compute_us")
    elif "compute_ms" in c:
        dur = _ms_ns(t, c, "compute_ms")
    elif "total_us" in c:
        dur = _ns(t, c, "total_us")
    else:
        dur = _ms_ns(t, c, "total_ms")
    name = _text(t, c, "name", strip=True).to_numpy(zero_copy_only=False)
    stream = to_int64(text_series(t.column(c["stream"]))) if "stream" in c \
        else pd.array([pd.NA] * t.num_rows, dtype="Int64")
    return pd.DataFrame({"name": name, "type": name, "core_type": "AI_CPU",
                         "start_ns": _ns(t, c, "start"), "dur_ns": dur,
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
