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

import os
import re

import numpy as np
import pandas as pd

from ..model import Profile
from . import ARGS_FILE, SpanSource
from .context import ReadContext
from .tolerant import InputError, pick, us_text_to_ns

STEP_CATEGORIES = ["iteration_interval", "fp_and_bp", "tail"]
_STEP_REQUIRED = ("step_num", "start_point", "end_point", "total",
                  "iteration_interval", "fp_and_bp", "tail")
_TIMELINE_REQUIRED = ("op_name", "stream_id", "start_time(ms)", "duration(ms)")
_OP_SUFFIX = re.compile(r"-op\d+$")
TICK_NS = 10


class _Ctx(ReadContext):
    def __init__(self, span: SpanSource, work_dir: str | None):
        self.id = span.device_id if span.device_id is not None else 0
        super().__init__(span, Profile(meta={"producer": "mindspore_legacy", "device": "npu",
                                             "device_id": self.id}))
        self.work_dir = work_dir
        if span.rank is not None:
            self.profile.meta["rank"] = span.rank


def read(span: SpanSource, work_dir: str | None = None) -> Profile:
    ctx = _Ctx(span, work_dir)
    for fn in (_read_trace, _read_kernels, _read_steps):
        try:
            fn(ctx)
        except Exception as exc:  # a bug or an unforeseen layout must not stop the span
            ctx.error(span.root, f"{fn.__name__[6:]}: unexpected error while reading: "
                      f"{type(exc).__name__}: {exc}")
    p = ctx.profile
    if p.has("steps"):
        p.meta["step_categories"] = list(STEP_CATEGORIES)
    if not p.errors and not any(p.has(t) for t in p.table_names()):
        ctx.error(span.root, f"no readable profiler files for device {ctx.id}")
    return p


def _ticks(s: pd.Series) -> np.ndarray:
    v = pd.to_numeric(s, errors="coerce").fillna(0).to_numpy(dtype=np.float64)
    return np.round(v).astype(np.int64) * TICK_NS


def _read_steps(ctx: _Ctx) -> None:
    df = ctx.csv(f"step_trace_raw_{ctx.id}_detail_time.csv", required=_STEP_REQUIRED)
    if df is None:
        return
    num = pd.to_numeric(df["step_num"], errors="coerce")
    keep = (num.notna() & (num != 0)).to_numpy()
    df = df[keep].reset_index(drop=True)
    num = num[keep].astype(np.int64).to_numpy()
    out = pd.DataFrame({
        "step": num,
        "start_ns": _ticks(df["start_point"]),
        "end_ns": _ticks(df["end_point"]),
        "total_ns": _ticks(df["total"]),
        "bd_iteration_interval": _ticks(df["iteration_interval"]),
        "bd_fp_and_bp": _ticks(df["fp_and_bp"]),
        "bd_tail": _ticks(df["tail"]),
    })
    out = out.sort_values("step", kind="stable").reset_index(drop=True)
    ctx.profile.set("steps", out, keep_extra=True)


def _names(df: pd.DataFrame | None, *cols: str) -> set:
    if df is None:
        return set()
    c = pick(df, *cols)
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
    df = ctx.csv(f"output_timeline_data_{ctx.id}.txt", required=_TIMELINE_REQUIRED)
    if df is None:
        return
    full = df["op_name"].fillna("").astype(str)
    name = full.str.rsplit("/", n=1).str[-1]
    typ = name.str.replace(_OP_SUFFIX, "", regex=True)
    aicore = _names(ctx.csv(f"aicore_intermediate_{ctx.id}_detail.csv"),
                    "full_op_name", "full_kernel_name")
    aicpu = _names(ctx.csv(f"aicpu_intermediate_{ctx.id}.csv"),
                   "op_type", "kernel_type", "op_name", "full_op_name")
    # The per-op detail file and the timeline may number ops differently (`-opN`), so the
    # AI Core kernel types (aicore_intermediate type file) also decide.
    aicore_types = _names(ctx.csv(f"aicore_intermediate_{ctx.id}_type.csv"),
                          "kernel_type", "op_type")
    is_core = (full.isin(aicore) | typ.isin(aicore_types)).to_numpy()
    is_cpu = (full.isin(aicpu) | name.isin(aicpu) | typ.isin(aicpu)).to_numpy()
    core = np.where(is_core, "AI_CORE", np.where(is_cpu, "AI_CPU", "OTHER"))
    start = _ms_text_to_ns(df["start_time(ms)"])
    dur = _ms_text_to_ns(df["duration(ms)"])
    out = pd.DataFrame({
        "name": name.to_numpy(dtype=object),
        "type": typ.to_numpy(dtype=object),
        "core_type": core,
        "start_ns": start,
        "dur_ns": dur,
        "stream_id": pd.to_numeric(df["stream_id"], errors="coerce").astype("Int64"),
        "device_id": pd.array([ctx.id] * len(df), dtype="Int64"),
    })
    ctx.profile.set("kernels", out)


def _read_trace(ctx: _Ctx) -> None:
    from .trace_json import read_traces

    path = (ctx.path(f"timeline_display_{ctx.id}.json")
            or ctx.path(f"ascend_timeline_display_{ctx.id}.json"))
    if path is None:
        return
    args_path = os.path.join(ctx.work_dir, ARGS_FILE) if ctx.work_dir else None
    try:
        tt = read_traces([path], args_path=args_path, tmp_dir=ctx.work_dir)
    except InputError as exc:
        ctx.error(path, str(exc))
        return
    for epath, reason in tt.errors:
        ctx.error(epath, reason)
    p = ctx.profile
    if args_path:
        p.meta["args_file"] = ARGS_FILE
    else:
        p.meta["args_table"] = tt.args
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
    p.set("tracks", t)
    p.set("slices", tt.slices)
    p.set("flows", tt.flows)
    p.set("counters", tt.counters)
