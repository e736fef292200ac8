"""MindSpore <=2.3 (MindInsight era) flat `profiler*` directory -> `Profile`
(docs/formats.md §1.3, §2.23).

One span = one device id `{id}`; every file carries the id in its name.

- steps: `step_trace_raw_{id}_detail_time.csv`. Values are 10 ns ticks (MindInsight divides
  by 1e5 to get ms), so ns = ticks * 10. The last (average) row, step_num `-` (older `0`),
  is dropped. Breakdown `bd_iteration_interval` (data/host gap before FP), `bd_fp_and_bp`
  (forward + backward), `bd_tail` (after BP: gradient aggregation and update); `total_ns` =
  `total`. These ticks are on a different clock than the timeline: they are not aligned.
- kernels: `output_timeline_data_{id}.txt`, one row per kernel execution (`op_name,
  stream_id, start_time(ms), duration(ms)`). `name` = last path component of op_name
  (`Mul-op29`), `type` = that without the `-opN` suffix (`Mul`); `core_type` AI_CORE when the
  full name is in `aicore_intermediate_{id}_detail.csv` or the type in `..._type.csv`, AI_CPU when it (or its short name /
  type) is in `aicpu_intermediate_{id}.csv`, else OTHER. `step` is left NA.
  Without the txt, kernels stay empty.
- trace: `timeline_display_{id}.json` or `ascend_timeline_display_{id}.json` through
  `read_traces`; tracks with numeric tids (streams) are kind "device", others "other".
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..model import MINDSPORE_LEGACY_STEP_CATEGORIES, Profile, ProfileMeta, category_names
from . import SpanSource
from . import columns as C
from . import minddata
from .context import ReadContext, read_trace, run_steps
from .tolerant import us_text_to_ns

_OP_SUFFIX = re.compile(r"-op\d+$")
TICK_NS = 10


class _Ctx(ReadContext):
    def __init__(self, span: SpanSource, work_dir: str | None):
        self.id = span.device_id if span.device_id is not None else 0
        super().__init__(span, work_dir, Profile(meta=ProfileMeta(
            producer="mindspore_legacy", device="npu", device_id=self.id, rank=span.rank)))


def read(span: SpanSource, work_dir: str | None = None) -> Profile:
    return run_steps(_Ctx(span, work_dir), [_read_trace, _read_kernels, _read_steps,
                                            minddata.read_legacy, _check_any_data])


def _check_any_data(ctx: _Ctx) -> None:
    p = ctx.profile
    if not p.errors and not any(p.has(t) for t in p.table_names()):
        ctx.error(ctx.span.root, f"no readable profiler files for device {ctx.id}")


def _ticks(s: pd.Series) -> np.ndarray:
    v = pd.to_numeric(s, errors="coerce").fillna(0).to_numpy(dtype=np.float64)
    return np.round(v).astype(np.int64) * TICK_NS


def _read_steps(ctx: _Ctx) -> None:
    df = ctx.csv(f"step_trace_raw_{ctx.id}_detail_time.csv", required=C.required(C.STEP_TRACE_RAW))
    if df is None:
        return
    c = C.resolve(df, C.STEP_TRACE_RAW)
    num = pd.to_numeric(df[c["step"]], errors="coerce")
    # The last row is the average (step_num `-`, older files `0`).
    keep = (num.notna() & (num != 0)).to_numpy()
    df = df[keep].reset_index(drop=True)
    out = pd.DataFrame({"step": num[keep].astype(np.int64).to_numpy()})
    for name in ("start_ns", "end_ns", "total_ns", "bd_iteration_interval", "bd_fp_and_bp",
                 "bd_tail"):
        out[name] = _ticks(df[c[name]])
    out = out.sort_values("step", kind="stable").reset_index(drop=True)
    ctx.profile.set("steps", out, keep_extra=True)
    if len(out):
        ctx.profile.meta.step_categories = category_names(MINDSPORE_LEGACY_STEP_CATEGORIES)


def _names(df: pd.DataFrame | None, table: C.Table) -> set:
    """The op names of an intermediate file (its one column of the table)."""
    if df is None:
        return set()
    c = next(iter(C.resolve(df, table).values()), None)
    return set(df[c].dropna().astype(str)) if c else set()


_PLAIN = re.compile(r"^[-+]?[0-9]*(?:\.[0-9]*)?$")


def _ms_text_to_ns(s: pd.Series) -> np.ndarray:
    """Millisecond decimal text -> int64 ns exactly (the point moved 3 places, then µs->ns)."""
    t = s.fillna("").astype(str).str.strip()
    plain = t.str.fullmatch(_PLAIN.pattern)
    parts = t.str.split(".", n=1, expand=True)
    if parts.shape[1] == 1:
        parts[1] = ""
    i = parts[0].fillna("")
    f = parts[1].fillna("").str.pad(3, side="right", fillchar="0")
    us = i + f.str.slice(0, 3) + "." + f.str.slice(3)
    # Exponent forms or junk: keep the text, us_text_to_ns reads it as a float (µs) -> fix below.
    us = us.where(plain, "")
    ns = us_text_to_ns(us.to_numpy(dtype=object))
    if not plain.all():
        f64 = pd.to_numeric(t[~plain], errors="coerce").fillna(0).to_numpy(dtype=np.float64)
        ns[(~plain).to_numpy()] = np.round(f64 * 1e6).astype(np.int64)
    return ns


def _read_kernels(ctx: _Ctx) -> None:
    df = ctx.csv(f"output_timeline_data_{ctx.id}.txt", required=C.required(C.OUTPUT_TIMELINE_DATA))
    if df is None:
        return
    c = C.resolve(df, C.OUTPUT_TIMELINE_DATA)
    full = df[c["op_name"]].fillna("").astype(str)
    name = full.str.rsplit("/", n=1).str[-1]
    typ = name.str.replace(_OP_SUFFIX, "", regex=True)
    aicore = _names(ctx.csv(f"aicore_intermediate_{ctx.id}_detail.csv"), C.AICORE_DETAIL)
    aicpu = _names(ctx.csv(f"aicpu_intermediate_{ctx.id}.csv"), C.AICPU)
    # The per-op detail file and the timeline may number ops differently (`-opN`), so the
    # AI Core kernel types (aicore_intermediate type file) also decide.
    aicore_types = _names(ctx.csv(f"aicore_intermediate_{ctx.id}_type.csv"), C.AICORE_TYPE)
    is_core = (full.isin(aicore) | typ.isin(aicore_types)).to_numpy()
    is_cpu = (full.isin(aicpu) | name.isin(aicpu) | typ.isin(aicpu)).to_numpy()
    core = np.where(is_core, "AI_CORE", np.where(is_cpu, "AI_CPU", "OTHER"))
    start = _ms_text_to_ns(df[c["start_ns"]])
    dur = _ms_text_to_ns(df[c["dur_ns"]])
    out = pd.DataFrame({
        "name": name.to_numpy(dtype=object),
        "type": typ.to_numpy(dtype=object),
        "core_type": core,
        "start_ns": start,
        "dur_ns": dur,
        "stream_id": pd.to_numeric(df[c["stream_id"]], errors="coerce").astype("Int64"),
        "device_id": pd.array([ctx.id] * len(df), dtype="Int64"),
    })
    ctx.profile.set("kernels", out)


def _read_trace(ctx: _Ctx) -> None:
    path = (ctx.path(f"timeline_display_{ctx.id}.json")
            or ctx.path(f"ascend_timeline_display_{ctx.id}.json"))
    if path is None:
        return
    tt = read_trace(ctx, [path])
    if tt is None:
        return
    t = tt.tracks.copy()
    if len(t):
        numeric = pd.to_numeric(t["tid"].astype(str), errors="coerce").notna()
        t["kind"] = np.where(numeric, "device", "other")
        unnamed = t["thread"].isna() | (t["thread"].astype(str) == "")
        t.loc[unnamed & numeric, "thread"] = "Stream " + t.loc[unnamed & numeric, "tid"].astype(str)
        unnamed = t["process"].isna() | (t["process"].astype(str) == "")
        t.loc[unnamed & numeric, "process"] = "Ascend Hardware"
        t.loc[unnamed & ~numeric, "process"] = t.loc[unnamed & ~numeric, "pid"].astype(str)
        t["device_id"] = pd.array([ctx.id if n else None for n in numeric], dtype="Int64")
        for c in ("process_sort", "thread_sort"):
            if c in t.columns:
                t[c] = np.clip(t[c].to_numpy(), -(1 << 31), (1 << 31) - 1)
    ctx.set_trace_tables(t, tt.slices, tt.flows, tt.counters)
