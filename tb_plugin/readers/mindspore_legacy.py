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
- step_phases: the same file, per step iteration_interval / fp_and_bp / tail and one
  `reduce` row per `stream_{s}_parallel_{k}` column group (start `_start_point`, duration the
  group's own column), ticks x 10. The average row is kept as step `AVERAGE_STEP` (-1):
  MindInsight's step-trace summary shows it.
- op_statistic: `aicore_intermediate_{id}_type.csv` (core AI_CORE; total ms, count, percent:
  a fraction 0-1 in MindSpore 2.x files, already % in older ones -> ratio_pct), and the AI
  CPU tasks of `aicpu_intermediate_{id}.csv` grouped by type (core AI_CPU, ratio of the AI CPU
  total as MindInsight's AICPU table shows it).
- AI CPU kernels: `aicpu_intermediate_{id}.csv` rows join the kernels (core AI_CPU, dur =
  execution_time, else total_time; start = run_start µs) when the timeline file gave none.
- meta.flops: `flops_summary_{id}.json` (+ `scopes`: top-level of `flops_scope_{id}.json`).
- trace: `timeline_display_{id}.json` or `ascend_timeline_display_{id}.json` through
  `read_traces`; tracks with numeric tids (streams) are kind "device", others "other".
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..model import Profile, ProfileMeta
from ..schema import AVERAGE_STEP
from ..span_source import SpanSource
from ..step_categories import MINDSPORE_LEGACY_STEP_CATEGORIES, category_names
from . import columns as C
from . import minddata
from .context import ReadContext, read_trace, run_steps
from .us_text import float_to_int64, to_int64, us_text_to_ns

_OP_SUFFIX = re.compile(r"-op\d+$")
TICK_NS = 10


class _Ctx(ReadContext):
    def __init__(self, span: SpanSource, work_dir: str | None):
        self.id = span.device_id if span.device_id is not None else 0
        # AI CPU tasks of aicpu_intermediate (read by the op-statistic step, used again).
        self.aicpu: pd.DataFrame | None = None
        super().__init__(span, work_dir, Profile(meta=ProfileMeta(
            producer="mindspore_legacy", device="npu", device_id=self.id, rank=span.rank)))


def read(span: SpanSource, work_dir: str | None = None) -> Profile:
    return run_steps(_Ctx(span, work_dir), [_read_trace, _read_kernels, _read_steps,
                                            _read_op_statistic, _read_aicpu, _read_flops,
                                            minddata.read_legacy, _check_any_data])


def _check_any_data(ctx: _Ctx) -> None:
    p = ctx.profile
    if not p.errors and not any(p.has(t) for t in p.table_names()):
        ctx.error(ctx.span.root, f"no readable profiler files for device {ctx.id}")


def _ticks(s: pd.Series) -> np.ndarray:
    ticks = float_to_int64(pd.to_numeric(s, errors="coerce"))
    return np.where(np.abs(ticks) < (1 << 63) // TICK_NS, ticks, 0) * TICK_NS  # (no time)


def _read_steps(ctx: _Ctx) -> None:
    df = ctx.csv(f"step_trace_raw_{ctx.id}_detail_time.csv", required=C.required(C.STEP_TRACE_RAW))
    if df is None:
        return
    c = C.resolve(df, C.STEP_TRACE_RAW)
    num = pd.Series(to_int64(df[c["step"]]), index=df.index)  # (1e30: no step)
    # The last row is the average (step_num `-`, older files `0`).
    keep = (num.notna() & (num != 0).fillna(False)).to_numpy(bool)
    average = df[~keep].tail(1).reset_index(drop=True)
    df = df[keep].reset_index(drop=True)
    out = pd.DataFrame({"step": num[keep].astype(np.int64).to_numpy()})
    for name in ("start_ns", "end_ns", "total_ns", "bd_iteration_interval", "bd_fp_and_bp",
                 "bd_tail"):
        out[name] = _ticks(df[c[name]])
    out = out.sort_values("step", kind="stable").reset_index(drop=True)
    ctx.profile.set("steps", out, keep_extra=True)
    if len(out):
        ctx.profile.meta.step_categories = category_names(MINDSPORE_LEGACY_STEP_CATEGORIES)
    phases = _phases(df, num[keep].astype(np.int64).to_numpy(), c)
    if len(average):  # the producer's own averages: step AVERAGE_STEP (schema.SCHEMAS)
        phases = pd.concat([phases, _phases(average, np.array([AVERAGE_STEP]), c)],
                           ignore_index=True)
    if len(phases):
        ctx.profile.set("step_phases", phases)


_REDUCE = re.compile(r"^(stream_\d+_parallel_\d+)$")


def _phases(df: pd.DataFrame, step: np.ndarray, c: dict) -> pd.DataFrame:
    """The step_phases rows of step_trace_raw (average row already dropped): the three
    phases from their columns and one `reduce` row per `stream_{s}_parallel_{k}` group."""
    start = _ticks(df[c["start_ns"]])
    fp = start + _ticks(df[c["bd_iteration_interval"]])
    fpbp = _ticks(df[c["bd_fp_and_bp"]])
    parts = [("iteration_interval", "", start, _ticks(df[c["bd_iteration_interval"]])),
             ("fp_and_bp", "", fp, fpbp),
             ("tail", "", fp + fpbp, _ticks(df[c["bd_tail"]]))]
    for col in df.columns:
        m = _REDUCE.match(str(col).strip())
        if m and f"{col}_start_point" in df.columns:
            parts.append(("reduce", m.group(1), _ticks(df[f"{col}_start_point"]),
                          _ticks(df[col])))
    frames = [pd.DataFrame({"step": step, "phase": ph, "name": nm, "start_ns": st,
                            "dur_ns": du}) for ph, nm, st, du in parts]
    out = pd.concat(frames, ignore_index=True)
    return out.sort_values(["step", "start_ns"], kind="stable").reset_index(drop=True)


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
        ns[(~plain).to_numpy()] = float_to_int64(pd.to_numeric(t[~plain], errors="coerce"), 1e6)
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
        "stream_id": to_int64(df[c["stream_id"]]),  # (junk, 1e400, 3.5e30: none)
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


def _read_op_statistic(ctx: _Ctx) -> None:
    df = ctx.csv(f"aicore_intermediate_{ctx.id}_type.csv",
                 required=C.required(C.AICORE_TYPE_STATS))
    frames = []
    if df is not None and len(df):
        c = C.resolve(df, C.AICORE_TYPE_STATS)
        total = _ms_text_to_ns(df[c["total"]]) if "total" in c else np.zeros(len(df), np.int64)
        calls = float_to_int64(pd.to_numeric(df[c["calls"]], errors="coerce")) \
            if "calls" in c else np.ones(len(df), np.int64)
        pct = pd.to_numeric(df[c["percent"]], errors="coerce").to_numpy(np.float64) \
            if "percent" in c else np.full(len(df), np.nan)
        # MindSpore 2.x writes a fraction (0-1) that MindInsight multiplies by 100; older
        # files hold percent already (their sum is ~100).
        if np.nansum(pct) <= 1.0 + 1e-6 and np.nanmax(pct, initial=0) <= 1.0:
            pct = pct * 100.0
        frames.append(pd.DataFrame({
            "type": df[c["type"]].astype(str).str.strip().to_numpy(), "core_type": "AI_CORE",
            "calls": calls, "total_ns": total,
            "avg_ns": np.where(calls > 0, total // np.maximum(calls, 1), 0),
            "min_ns": 0, "max_ns": 0, "ratio_pct": pct}))
    tasks = _aicpu_tasks(ctx)
    if tasks is not None and len(tasks):
        g = tasks.groupby("type", sort=False)["dur_ns"]
        agg = pd.DataFrame({"calls": g.size(), "total_ns": g.sum(), "min_ns": g.min(),
                            "max_ns": g.max()}).reset_index()
        agg["avg_ns"] = agg["total_ns"] // agg["calls"]
        all_ns = float(agg["total_ns"].sum())
        agg["ratio_pct"] = agg["total_ns"] / all_ns * 100.0 if all_ns > 0 else np.nan
        agg["core_type"] = "AI_CPU"
        frames.append(agg)
    if frames:
        out = pd.concat(frames, ignore_index=True)
        ctx.profile.set("op_statistic", out.sort_values("total_ns", ascending=False,
                                                        kind="stable"))


def _aicpu_tasks(ctx: _Ctx) -> pd.DataFrame | None:
    """AI CPU tasks of aicpu_intermediate_{id}.csv: type, start_ns, dur_ns (ms -> ns); read
    once (two steps use them)."""
    if ctx.aicpu is None:
        ctx.aicpu = _read_aicpu_tasks(ctx)
    return ctx.aicpu if len(ctx.aicpu) else None


def _read_aicpu_tasks(ctx: _Ctx) -> pd.DataFrame:
    empty = pd.DataFrame({"type": [], "start_ns": [], "dur_ns": []})
    df = ctx.csv(f"aicpu_intermediate_{ctx.id}.csv", required=C.required(C.LEGACY_AICPU_TASKS))
    if df is None or len(df) == 0:
        return empty
    c = C.resolve(df, C.LEGACY_AICPU_TASKS)
    key = "compute_ms" if "compute_ms" in c else "total_ms"
    dur = _ms_text_to_ns(df[c[key]]) if key in c else np.zeros(len(df), np.int64)
    start = us_text_to_ns(df[c["start"]].astype(str).to_numpy(dtype=object)) \
        if "start" in c else np.zeros(len(df), np.int64)
    return pd.DataFrame({"type": df[c["name"]].astype(str).str.strip().to_numpy(),
                         "start_ns": start, "dur_ns": dur})


def _read_aicpu(ctx: _Ctx) -> None:
    p = ctx.profile
    if p.has("kernels") and (p.table("kernels")["core_type"].astype(str) == "AI_CPU").any():
        return  # the timeline file has them already
    tasks = _aicpu_tasks(ctx)
    if tasks is None or len(tasks) == 0:
        return
    add = pd.DataFrame({"name": tasks["type"], "type": tasks["type"], "core_type": "AI_CPU",
                        "start_ns": tasks["start_ns"], "dur_ns": tasks["dur_ns"],
                        "device_id": pd.array([ctx.id] * len(tasks), dtype="Int64")})
    k = p.table("kernels") if p.has("kernels") else None
    p.set("kernels", add if k is None else pd.concat([k, add], ignore_index=True))


def _read_flops(ctx: _Ctx) -> None:
    path = ctx.path(f"flops_summary_{ctx.id}.json")
    if path is None:
        return
    doc = ctx.json(path)
    if doc is None:
        return
    flops = {k: v for k, v in doc.items() if isinstance(v, (int, float)) and
             not isinstance(v, bool)}
    scope_path = ctx.path(f"flops_scope_{ctx.id}.json")
    if scope_path is not None:
        scopes = ctx.json(scope_path)
        if scopes is not None:
            flops["scopes"] = _flops_scopes(scopes)
    ctx.profile.meta.flops = flops


def _flops_scopes(doc: dict) -> list:
    """Top-level scopes of flops_scope_{id}.json as [{"name", "value"}] by value descending.
    The file is a sankey diagram `{"data": {"nodes": [...], "links": [{"source", "target",
    "value"}]}, "max_scope_num"}` whose root node is `Total`: its links are the top level."""
    data = doc.get("data")
    links = data.get("links") if isinstance(data, dict) else None
    if not isinstance(links, list):
        return []
    out = [{"name": str(r.get("target", "")), "value": float(r["value"])} for r in links
           if isinstance(r, dict) and r.get("source") == "Total"
           and isinstance(r.get("value"), (int, float)) and not isinstance(r.get("value"), bool)]
    return sorted(out, key=lambda r: -r["value"])
