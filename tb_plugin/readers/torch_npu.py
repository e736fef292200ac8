"""torch_npu `*_ascend_pt` and MindSpore 2.x `*_ascend_ms` span directories -> `Profile`.

Both producers write the same file family into `ASCEND_PROFILER_OUTPUT/` (docs/formats.md
§1.1, §1.2, §2.2–§2.12, §2.22). What differs between producers and versions is kept as data:

- `columns.KERNEL_DETAILS`, `OPERATOR_DETAILS`, ... map each model column to the header
  variants seen across versions (e.g. `Step Id`/`Step ID`, `Block Num`/`Block Dim`,
  `Total Reserved(MB)`/`(KB)`) and a conversion kind, which `column_conversions.convert`
  applies.
- `column_conversions.DIALECTS` holds per-producer facts (MindSpore's "MB" columns are
  KB/1000, its operator_details.csv has only Name/Input Shapes).

SQLite exports (`*.db`, docs/formats.md §2.20) are read by `sqlite_export` steps after the
text steps: they fill only the tables the text output did not give (text first).

Normalizations (documented for the views):
- `Input Shapes` and `Call Stack`: one text form for every producer (column_conversions.py).
- communication.json / communication_matrix.json: communication_json.py.
- steps: from step_trace_time.csv; `bd_computing`, `bd_communication_not_overlapped`,
  `bd_overlapped`, `bd_free` (ns); `total_ns` = computing + communication_not_overlapped + free.
  Extra (non-breakdown) columns: `communication_ns`, `stage_ns`, `bubble_ns`,
  `comm_not_overlapped_exclude_receive_ns`, `preparing_ns`, `device_id`.
  start_ns/end_ns = the host `ProfilerStep#N` window when the trace has one, else 0.
  Without step_trace_time.csv the steps table stays empty; `tb_plugin.analysis.npu_overlap.
  steps_from_overlap(profile)` derives it from Overlap Analysis events (called by derive).
- operators: `start_ns` 0 and `step` <NA> (operator_details.csv has no time). Extra columns
  `device_self_aicore_ns`, `device_total_aicore_ns`. MindSpore's 2-column file has no
  durations: they are 0 and `meta.operator_durations` is False.
- kernels: AI Core PMU counters (every `aic_metrics` set, `columns.PMU_COUNTERS`) become
  float64 columns `pmu_{aic|aiv}_{stem}` (ratios 0..1), their N/A cells NaN and counted in
  `meta.pmu_na_cells`; other unknown headers are kept as extra float64 columns under their
  original header; known text columns that the model has no place for are dropped.
- meta `ai_core_num` / `aiv_num`: `DeviceInfo` of the raw CANN `PROF_*/device_*/info.json.*`
  inside the span (the device's AI Core and vector core counts, for Block Num checks).
"""
from __future__ import annotations

import glob
import os
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow_tables import NULLABLE_INT
from ..model import Profile, ProfileMeta
from ..span_source import SpanSource
from ..step_categories import NPU_STEP_CATEGORIES, category_names
from ..step_windows import profiler_step_windows
from . import columns as C
from . import communication_json
from . import minddata
from . import sqlite_export
from . import statistics
from .column_conversions import (DIALECTS, Dialect, column_floats, column_series, column_us_ns,
                                 convert)
from .context import ReadContext, read_trace, run_steps
from .json_numbers import int_or_none
from .msprof import set_core_counts
from .text_cells import cells_start_with
from .tolerant import text_series
from .us_text import float_to_int64

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"


# Process name -> track kind (docs/formats.md §2.2.2, §2.22). Tracks whose process is not listed
# are "counter" when they carry only counter samples, else "other".
PROCESS_KIND = {
    "Python": "host", "Python GC": "host", "MindSpore": "host", "CPU OP": "host",
    "Scope Layer": "host", "python": "host", "python3": "host",
    "CANN": "cann",
    "Ascend Hardware": "device",
    "Communication": "communication", "HCCL": "communication",
    "Overlap Analysis": "overlap",
}

_NPU_LABEL = re.compile(r"NPU\s*:?\s*(\d+)")


# --------------------------------------------------------------------------- entry points

def read(span: SpanSource, work_dir: str | None = None, stage: str = "all") -> Profile:
    """Read a torch_npu `*_ascend_pt` span directory (`stage`: see `readers.read`)."""
    return _read(span, work_dir, DIALECTS["torch_npu"], stage)


def read_mindspore(span: SpanSource, work_dir: str | None = None,
                   stage: str = "all") -> Profile:
    """Read a MindSpore 2.x `*_ascend_ms` span directory (`stage`: see `readers.read`)."""
    return _read(span, work_dir, DIALECTS["mindspore"], stage)


def deferred_trace(span: SpanSource) -> str | None:
    """The trace the views stage of this torch_npu / MindSpore span leaves to the timeline
    stage (`_read` with stage="views"), or None when it reads the trace itself."""
    ctx = _Ctx(span, None, DIALECTS["mindspore" if span.producer == "mindspore"
                                     else "torch_npu"])
    return _trace_file(ctx) if _trace_deferrable(ctx) else None


def _trace_file(ctx: "_Ctx") -> str | None:
    return ctx.path("trace_view.json") or ctx.path("trace_view.json.gz")


def _trace_deferrable(ctx: "_Ctx") -> bool:
    """The views need nothing from the trace when the CSVs carry steps and kernels/ops, and
    there is a trace to leave for the timeline stage (one that may be read: a symlink out of
    the logdir is reported by the trace step now instead)."""
    trace = _trace_file(ctx)
    if trace is None or not ctx.readable(trace):
        return False
    if ctx.dialect.producer == "mindspore" and not _operator_file_has_durations(ctx):
        return False  # MindSpore's operator times come from the trace (_read_mindspore_operators)
    return ctx.path("step_trace_time.csv") is not None and (
        ctx.path("kernel_details.csv") is not None or ctx.path("operator_details.csv") is not None)


class _Ctx(ReadContext):
    def __init__(self, span: SpanSource, work_dir: str | None, dialect: Dialect):
        meta = ProfileMeta(producer=dialect.producer, device="npu", rank=span.rank,
                           device_id=span.device_id)
        super().__init__(span, work_dir, Profile(meta=meta),
                         base=os.path.join(span.root, OUTPUT_DIR))
        self.dialect = dialect
        # Host ProfilerStep#N windows of the trace (set by the trace step) for the steps.
        self.step_windows: pd.DataFrame | None = None


def _read(span: SpanSource, work_dir: str | None, dialect: Dialect,
          stage: str = "all") -> Profile:
    ctx = _Ctx(span, work_dir, dialect)
    db_timeline = sqlite_export.read_framework_db_timeline
    if stage == "trace":
        return run_steps(ctx, [_read_trace, db_timeline])
    # SQLite exports fill what the text output lacks (text first, docs/formats.md §2.20).
    steps = [
        _read_info, _read_device_info, _read_metadata, _read_trace, db_timeline, _read_kernels,
        _read_operators, _read_steps, _read_memory_records, _read_memory_allocations,
        _read_module_memory, communication_json.read_communication,
        communication_json.read_communication_matrix, _read_statistics, _read_aicpu,
        _read_mindspore_operators, sqlite_export.read_framework_db, minddata.read_ascend_ms,
        _check_any_data, _finish_meta,
    ]
    if stage == "views" and _trace_deferrable(ctx):
        steps.remove(_read_trace)
        steps.remove(db_timeline)
        ctx.profile.meta.trace_deferred = True
    elif stage == "views" and _trace_file(ctx) is None and sqlite_export.has_framework_db(ctx):
        steps.remove(db_timeline)  # the db's timeline is read in the second stage
        ctx.profile.meta.trace_deferred = True
    return run_steps(ctx, steps)


def _check_any_data(ctx: _Ctx) -> None:
    """Explain an empty span: DB-only export, or no deliverables at all."""
    p = ctx.profile
    if any(p.has(t) for t in p.table_names()) or p.errors:
        return
    dbs = sorted(glob.glob(os.path.join(ctx.base, "*.db")))
    if dbs:
        ctx.error(dbs[0], "only SQLite export (export_type=db) found, and it holds none of the"
                  " tables the views use")
    elif not os.path.isdir(ctx.base):
        ctx.error(ctx.span.root, f"no {OUTPUT_DIR} directory: the profile was not parsed"
                  " (run torch_npu.profiler.profiler.analyse on it)")
    else:
        ctx.error(ctx.base, "no readable profiler output files found")


# --------------------------------------------------------------------------- info / meta

def _read_info(ctx: _Ctx) -> None:
    meta = ctx.profile.meta
    infos = sorted(glob.glob(os.path.join(ctx.span.root, "profiler_info*.json")))
    for path in infos:
        m = re.match(r"profiler_info_(\d+)\.json$", os.path.basename(path))
        if m and meta.rank is None:
            meta.rank = int(m.group(1))
        if os.path.getsize(path) == 0:
            continue  # early torch_npu wrote empty files as rank markers
        info = ctx.json(path)
        if info is None:
            continue
        rank = int_or_none(info.get("rank_id"))
        if rank is not None and rank >= 0 and meta.rank is None:
            meta.rank = rank
        config = info.get("config") if isinstance(info.get("config"), dict) else {}
        exp = config.get("experimental_config")
        level = exp.get("_profiler_level") if isinstance(exp, dict) else None
        if level:
            meta.profiler_level = str(level)
        versions = {k: str(info[k]) for k in ("torch_npu_version", "cann_version", "ms_version")
                    if info.get(k) not in (None, "")}
        if versions:
            meta.versions = {**(meta.versions or {}), **versions}
        ws = int_or_none(info.get("rank_size"))
        if ws and ws > 0:
            meta.world_size = ws


def _read_device_info(ctx: _Ctx) -> None:
    """AI Core / vector core counts from the raw CANN info.json.{id} under the span (only
    that small file is read; the raw data beside it is not)."""
    dev = ctx.profile.meta.device_id
    paths = sorted(glob.glob(os.path.join(ctx.span.root, "PROF_*", "device_*", "info.json.*")))
    paths = [p for p in paths if re.search(r"info\.json\.\d+$", p)]
    if dev is not None:  # this worker's device first
        paths.sort(key=lambda p: not p.endswith(f"info.json.{dev}"))
    for path in paths:
        info = ctx.json(path, object_required=False, max_bytes=16 << 20)
        if isinstance(info, dict) and set_core_counts(ctx.profile.meta, info, dev):
            return


def _read_metadata(ctx: _Ctx) -> None:
    path = os.path.join(ctx.span.root, "profiler_metadata.json")
    if not os.path.isfile(path):
        return
    md = ctx.json(path)
    if md is None:
        return
    env = md.get("ENV_VARIABLES")
    if isinstance(env, dict):  # for the advisor's environment rule
        ctx.profile.meta.env_variables = {str(k): "" if v is None else str(v)
                                          for k, v in env.items()}
    groups = md.get("parallel_group_info")
    if isinstance(groups, dict) and groups:
        sizes = []
        for g in groups.values():
            if isinstance(g, dict) and isinstance(g.get("global_ranks"), list):
                sizes.append(len(g["global_ranks"]))
        if sizes:
            ctx.profile.meta.world_size = max(sizes)
        ctx.profile.meta.distributed = {"parallel_group_info": groups}


def _finish_meta(ctx: _Ctx) -> None:
    p = ctx.profile
    meta = p.meta
    if meta.device_id is None:
        dev = None
        k = p.table("kernels") if p.has("kernels") else None
        if k is not None and len(k):
            d = k["device_id"].dropna()
            if len(d):
                dev = int(d.mode().iloc[0])
        if dev is None:
            dev = _tracks_device(p)
        if dev is None:
            dirs = glob.glob(os.path.join(ctx.span.root, "PROF_*", "device_*"))
            ids = sorted({int(m.group(1)) for m in
                          (re.search(r"device_(\d+)$", x) for x in dirs) if m})
            if ids:
                dev = ids[0]
        if dev is not None:
            meta.device_id = dev
    if p.has("steps"):
        meta.step_categories = category_names(NPU_STEP_CATEGORIES)


def _tracks_device(p: Profile) -> int | None:
    """Most common device id of the device-side tracks (NPU labels / pid encoding)."""
    t = p.table("tracks") if p.has("tracks") else None
    if t is None or len(t) == 0:
        return None
    d = t.loc[t["kind"].isin(["device", "communication", "overlap"]), "device_id"].dropna()
    return int(d.mode().iloc[0]) if len(d) else None


# --------------------------------------------------------------------------- trace

def _read_trace(ctx: _Ctx) -> None:
    path = _trace_file(ctx)
    if path is None:
        return
    tt = read_trace(ctx, [path])
    if tt is None:
        return
    ctx.set_trace_tables(_track_table(tt.tracks, tt.slices, tt.counters), tt.slices, tt.flows,
                         tt.counters)
    ctx.step_windows = profiler_step_windows(tt.slices)


def _track_table(tracks: pd.DataFrame, slices: pd.DataFrame, counters: pd.DataFrame):
    t = tracks.copy()
    if len(t) == 0:
        return t
    proc = t["process"].astype(str)
    kind = proc.map(PROCESS_KIND)
    with_slices = np.isin(t["track_id"].to_numpy(), np.unique(slices["track_id"].to_numpy()))
    with_counters = np.isin(t["track_id"].to_numpy(), np.unique(counters["track_id"].to_numpy()))
    counter_only = with_counters & ~with_slices
    kind = kind.where(kind.notna(), np.where(counter_only, "counter", "other"))
    t["kind"] = kind.astype(str)
    # Device id: "NPU {id}" label first, then the msprof pid encoding (docs/formats.md §2.2.3).
    labels = t["process_labels"].astype(str).str.extract(_NPU_LABEL, expand=False)
    dev = pd.to_numeric(labels, errors="coerce")
    sort = t["process_sort"].to_numpy()
    # (no number, or beyond int64 - damage such as 1e400 -: 0, no device encoded in it)
    pid_i = float_to_int64(pd.to_numeric(t["pid"].astype(str), errors="coerce"))
    layer = (pid_i >> 5) & 31
    encoded = ((pid_i >= 1024) & (layer == sort) & ((pid_i & 31) != 31)
               & (t["kind"].to_numpy() != "host"))
    enc_dev = pd.Series(np.where(encoded, pid_i & 31, np.nan), index=t.index)
    dev = dev.where(dev.notna(), enc_dev)
    dev = dev.where(dev.abs() < 2.0 ** 63)  # ("NPU <30 digits>": no device; NaN stays NaN)
    t["device_id"] = dev.round().astype("Int64")
    t["process_sort"] = np.clip(t["process_sort"].to_numpy(), -(1 << 31), (1 << 31) - 1)
    t["thread_sort"] = np.clip(t["thread_sort"].to_numpy(), -(1 << 31), (1 << 31) - 1)
    return t


# --------------------------------------------------------------------------- kernels

def _read_kernels(ctx: _Ctx) -> None:
    df = ctx.csv_table("kernel_details.csv", required=C.required(C.KERNEL_DETAILS))
    if df is None:
        return
    out = convert(df, C.KERNEL_DETAILS, ctx.dialect)
    used = set(C.resolve(df, C.KERNEL_DETAILS).values())
    extra, na_cells, pmu_headers = C.read_pmu(df)
    used |= pmu_headers
    if na_cells:
        ctx.profile.meta.pmu_na_cells = na_cells
    for c in df.column_names:
        if c in used or c in C.KERNEL_TEXT_HEADERS:
            continue
        extra[c] = column_floats(df[c])
    out.update((c, v) for c, v in extra.items() if c not in out)
    if "device_id" not in out:
        dev = ctx.profile.meta.device_id
        if dev is None:
            dev = _tracks_device(ctx.profile)
        if dev is not None:
            out["device_id"] = np.full(len(df), int(dev), np.int64)
    ctx.profile.set("kernels", _arrow_table(out), keep_extra=True)


# --------------------------------------------------------------------------- operators

def _read_operators(ctx: _Ctx) -> None:
    df = ctx.csv_table("operator_details.csv", required=C.required(C.OPERATOR_DETAILS))
    if df is None:
        return
    cols = convert(df, C.OPERATOR_DETAILS, ctx.dialect)
    has_durations = "host_total_ns" in cols or "device_total_ns" in cols
    if not has_durations:
        ctx.profile.meta.operator_durations = False
    ctx.profile.set("operators", _arrow_table(cols), keep_extra=True)


# --------------------------------------------------------------------------- steps

def _read_steps(ctx: _Ctx) -> None:
    table = ctx.csv_table("step_trace_time.csv", required=C.required(C.STEP_TRACE_TIME))
    if table is None:
        return
    cols = convert(table, C.STEP_TRACE_TIME, ctx.dialect)
    n = table.num_rows
    step_col = C.resolve(table, C.STEP_TRACE_TIME).get("step")
    # Step ids are exact integers; an empty Step (one whole-run row) is step 0.
    if step_col is not None:
        cols["step"] = float_to_int64(pd.to_numeric(text_series(table[step_col]),
                                                    errors="coerce"))  # (1e30: step 0)
    else:
        cols["step"] = np.zeros(n, np.int64)
    # One span = one device; if the file holds several, keep the span's device (or the first).
    if "device_id" in cols:
        dev = cols["device_id"]
        devs = set(pd.unique(dev.dropna()).tolist())
        if len(devs) > 1:
            want = ctx.profile.meta.device_id
            if want is None or want not in devs:
                want = int(sorted(devs)[0])
            keep = (dev == want).fillna(False).to_numpy(dtype=bool)
            cols = {c: v[keep] for c, v in cols.items()}
    breakdown = [c.column for c in NPU_STEP_CATEGORIES]
    for c in breakdown:
        if c not in cols:
            cols[c] = np.zeros(len(cols["step"]), np.int64)
    cols["total_ns"] = (cols["bd_computing"] + cols["bd_communication_not_overlapped"]
                        + cols["bd_free"])
    order = ["step", "start_ns", "end_ns", "total_ns", *breakdown]
    win = ctx.step_windows
    if win is not None and len(win):  # (the trace read in this stage: the frame's merge)
        ctx.profile.set("steps", _steps_in_windows(pd.DataFrame(cols), win, order),
                        keep_extra=True)
        return
    names = [c for c in order if c in cols] + [c for c in cols if c not in order]
    by_step = np.argsort(cols["step"], kind="stable")
    # In Arrow (`Profile.set` stores it without a pandas frame); the device ids as pandas'
    # nullable Int64, as the frame kept them.
    fields = [pa.field(c, pa.int64(), metadata=NULLABLE_INT if c == "device_id" else None)
              for c in names]
    arrays = [pa.array(np.asarray(cols[c])[by_step] if c != "device_id"
                       else cols[c][by_step], pa.int64(), from_pandas=True) for c in names]
    ctx.profile.set("steps", pa.Table.from_arrays(arrays, schema=pa.schema(fields)),
                    keep_extra=True)


def _steps_in_windows(out: pd.DataFrame, win: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """The steps with the trace's ProfilerStep windows as their start and end."""
    if (out["step"] == 0).all() and not (win["step"] == 0).any():
        # One whole-run row (MindSpore, or no steps): the window covering all steps.
        win = pd.DataFrame({"step": [0], "start_ns": [win["start_ns"].min()],
                            "end_ns": [win["end_ns"].max()]})
    m = out[["step"]].merge(win, on="step", how="left")
    out["start_ns"] = m["start_ns"].fillna(0).astype(np.int64).to_numpy()
    out["end_ns"] = m["end_ns"].fillna(0).astype(np.int64).to_numpy()
    out = out[[c for c in order if c in out.columns]
              + [c for c in out.columns if c not in order]]
    return out.sort_values("step", kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------- memory

def _arrow_table(columns: dict) -> pa.Table:
    """Converted columns (numpy arrays, pandas arrays or Series) as the Arrow table
    `Profile.set` stores (`conform_arrow`): no pandas frame made and converted back."""
    return pa.table({name: col if isinstance(col, (pa.Array, pa.ChunkedArray))
                     else pa.array(col, from_pandas=True) for name, col in columns.items()})


def _device_text(s):
    """`NPU:0` as written; bare numbers become `NPU:{n}`. A column of `csv_table` without
    any stays in Arrow (missing cells ""): no pandas round trip of a 10,000-row column."""
    if isinstance(s, pa.ChunkedArray) and not cells_start_with(s, _MAYBE_DIGIT):
        return pc.fill_null(s, "")
    s = column_series(s).astype("string").fillna("")
    if not cells_start_with(s, _MAYBE_DIGIT):  # no cell is a bare number
        return s
    numeric = s.str.fullmatch(r"\d+").fillna(False)
    return s.where(~numeric, "NPU:" + s)


# First bytes of a cell `\d+` may match: ASCII digits, and any non-ASCII character.
_MAYBE_DIGIT = bytes([*b"0123456789", *range(0xC2, 0xF5)])


def _read_memory_records(ctx: _Ctx) -> None:
    df = ctx.csv_table("memory_record.csv", required=C.required(C.MEMORY_RECORD))
    if df is None:
        return
    out = convert(df, C.MEMORY_RECORD, ctx.dialect)
    if "device" in out:
        out["device"] = _device_text(out["device"])
    ctx.profile.set("memory_records", _arrow_table(out))


def _read_memory_allocations(ctx: _Ctx) -> None:
    df = ctx.csv_table("operator_memory.csv", required=C.required(C.OPERATOR_MEMORY))
    if df is None:
        return
    out = convert(df, C.OPERATOR_MEMORY, ctx.dialect)
    n = len(df)
    rel = np.asarray(out.setdefault("release_ns", np.full(n, -1, np.int64)))
    dur = np.asarray(out.setdefault("duration_ns", np.full(n, -1, np.int64)))
    # Duration missing but both ends known: release - allocation.
    alloc = np.asarray(out["alloc_ns"]) if "alloc_ns" in out else np.zeros(n, np.int64)
    out["duration_ns"] = np.where((dur < 0) & (rel >= 0), rel - alloc, dur)
    if "device" in out:
        out["device"] = _device_text(out["device"])
    ctx.profile.set("memory_allocations", _arrow_table(out))


def _read_module_memory(ctx: _Ctx) -> None:
    df = ctx.csv_table("npu_module_mem.csv", required=C.required(C.NPU_MODULE_MEM))
    if df is None:
        return
    cols = C.resolve(df, C.NPU_MODULE_MEM)
    if "reserved_mb" in cols:
        reserved = column_floats(df[cols["reserved_mb"]])
    elif "reserved_kb" in cols:
        reserved = column_floats(df[cols["reserved_kb"]]) / 1024.0
    else:
        either = " or ".join(C.NPU_MODULE_MEM[n].headers[0] for n in ("reserved_mb", "reserved_kb"))
        ctx.error(ctx.path("npu_module_mem.csv"), f"missing required column {either}")
        return
    reserved = np.where(reserved < 0, np.nan, reserved)  # -1: only a release was captured
    columns = {"component": df[cols["component"]]}  # (missing cells: "", by `set`)
    if "device" in cols:
        columns["device"] = _device_text(df[cols["device"]])
    ctx.profile.set("module_memory", _arrow_table({
        **columns,
        "ts_ns": column_us_ns(df[cols["ts_ns"]]),
        "reserved_mb": reserved,
    }))


# --------------------------------------------------------------------------- graph mode

def _read_statistics(ctx: _Ctx) -> None:
    """op_statistic.csv and api_statistic.csv as written (readers.statistics)."""
    t = ctx.csv_table("op_statistic.csv", required=C.required(C.OP_STATISTIC))
    if t is not None and t.num_rows:
        ctx.profile.set("op_statistic", statistics.op_statistic(t, ctx.profile.meta.device_id))
    t = ctx.csv_table("api_statistic.csv", required=C.required(C.API_STATISTIC))
    if t is not None and t.num_rows:
        ctx.profile.set("api_statistic", statistics.api_statistic(t))


def _read_aicpu(ctx: _Ctx) -> None:
    """data_preprocess.csv AI CPU tasks join the kernels (core AI_CPU) unless kernel_details
    has AI_CPU kernels of that name (readers.statistics.add_aicpu)."""
    df = ctx.csv("data_preprocess.csv", required=C.required(C.AICPU_TASKS))
    if df is None or len(df) == 0:
        return
    tasks = statistics.aicpu_kernels(df, ctx.profile.meta.device_id)
    dev = ctx.profile.meta.device_id
    if dev is not None:
        tasks["device_id"] = pd.array([dev] * len(tasks), dtype="Int64")
    p = ctx.profile
    p.set("kernels", statistics.add_aicpu(p.table("kernels") if p.has("kernels") else None,
                                          tasks), keep_extra=True)


def _operator_file_has_durations(ctx: _Ctx) -> bool:
    path = ctx.path("operator_details.csv")
    if path is None:
        return False
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            header = fh.readline()
    except OSError:
        return False
    return "Duration" in header


_KERNEL_LAUNCH = "Kernel::KernelLaunch::"
_NPU_FLOWS = ("mindspore_to_npu", "torch_to_npu")


def _read_mindspore_operators(ctx: _Ctx) -> None:
    """MindSpore 2.x: operator_details.csv has only Name / Input Shapes, so each operator
    call is a slice of the trace's `MindSpore` layer (ProfilerStep#N excluded; the name of a
    `Kernel::KernelLaunch::<scope>` event is its scope, as operator_details names it, other
    events keep their name) with torch_npu's operator_details definitions:
    host_total = dur; host_self = dur - the durations of its direct children on the track;
    device_self = Σ dur of the device kernels its own `mindspore_to_npu` flows reach;
    device_total = the same over the op and every descendant; the `_aicore_ns` variants
    count AI_CORE kernels only (core type from the kernels table, matched by start)."""
    p = ctx.profile
    if ctx.dialect.producer != "mindspore" or p.meta.operator_durations or \
            not p.has("slices") or not p.has("tracks"):
        return
    tracks = p.table("tracks")
    ms_tracks = tracks.loc[tracks["process"].astype(str) == "MindSpore", "track_id"].to_numpy()
    sl = p.table("slices")  # sorted by (track, start, -dur), depth = nesting on the track
    rows = np.flatnonzero(np.isin(sl["track_id"].to_numpy(), ms_tracks))
    if len(rows) == 0:
        return
    names = sl["name"]
    cats = pd.Index(names.cat.categories.astype(str)) if hasattr(names, "cat") else None
    codes = names.cat.codes.to_numpy()[rows] if cats is not None else None
    name = cats.to_numpy(dtype=object)[codes] if cats is not None else \
        names.astype(str).to_numpy(dtype=object)[rows]
    track = sl["track_id"].to_numpy()[rows]
    start = sl["start_ns"].to_numpy(np.int64)[rows]
    dur = sl["dur_ns"].to_numpy(np.int64)[rows]
    depth = sl["depth"].to_numpy().astype(np.int64)[rows]
    parent = _parents(track, depth)
    dev_self, dev_self_core = _launched_device_time(p, track, start, dur, stack_parent=parent)
    is_op = ~pd.Series(name).str.startswith("ProfilerStep#").to_numpy()
    # host self: minus the direct children; device totals: bottom-up over the depths
    child_dur = np.zeros(len(rows), np.int64)
    has_parent = parent >= 0
    np.add.at(child_dur, parent[has_parent], dur[has_parent])
    dev_total, dev_total_core = dev_self.copy(), dev_self_core.copy()
    for d in range(int(depth.max(initial=0)), 0, -1):
        at = np.flatnonzero((depth == d) & has_parent)
        np.add.at(dev_total, parent[at], dev_total[at])
        np.add.at(dev_total_core, parent[at], dev_total_core[at])
    if not is_op.any():
        return
    op_name = pd.Series(name[is_op]).str.replace(f"^{re.escape(_KERNEL_LAUNCH)}", "", regex=True)
    old = p.table("operators")
    shapes = pd.Series(dtype=object)
    if len(old):
        first = old.drop_duplicates("name")
        shapes = pd.Series(first["input_shapes"].astype(str).to_numpy(),
                           index=first["name"].astype(str).to_numpy())
    out = pd.DataFrame({
        "name": op_name.to_numpy(dtype=object),
        "input_shapes": op_name.map(shapes).fillna("").to_numpy(dtype=object),
        "start_ns": start[is_op], "host_self_ns": (dur - child_dur)[is_op],
        "host_total_ns": dur[is_op],
        "device_self_ns": dev_self[is_op], "device_total_ns": dev_total[is_op],
        "device_self_aicore_ns": dev_self_core[is_op],
        "device_total_aicore_ns": dev_total_core[is_op],
    })
    p.set("operators", out.sort_values("start_ns", kind="stable"), keep_extra=True)
    p.meta.operator_durations = True


def _parents(track: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Index of each slice's enclosing slice (the latest earlier one of depth - 1 on the same
    track), -1 at depth 0; slices in (track, start, -dur) order."""
    n = len(depth)
    parent = np.full(n, -1, np.int64)
    idx = np.arange(n)
    for d in range(1, int(depth.max(initial=0)) + 1):
        last = np.maximum.accumulate(np.where(depth == d - 1, idx, -1))
        at = np.flatnonzero(depth == d)
        cand = last[at]
        ok = (cand >= 0) & (track[np.maximum(cand, 0)] == track[at])
        parent[at[ok]] = cand[ok]
    return parent


def _launched_device_time(p: Profile, track, start, dur, stack_parent):
    """Per op (arrays sorted by track, start): Σ dur of the kernels its flows reach, and of
    the AI_CORE ones. A flow belongs to the innermost op of its track enclosing its start.
    Vectorized over flows (a big trace has a flow per kernel)."""
    n = len(start)
    self_ns = np.zeros(n, np.int64)
    core_ns = np.zeros(n, np.int64)
    fl = p.table("flows")
    if len(fl) == 0 or n == 0:
        return self_ns, core_ns
    fl = fl[fl["name"].astype(str).isin(_NPU_FLOWS).to_numpy()]
    ph = fl["phase"].astype(str)
    s = fl[(ph == "s").to_numpy()][["flow_id", "track_id", "ts_ns"]]
    f = fl[ph.isin(["f", "t"]).to_numpy()][["flow_id", "track_id", "ts_ns"]]
    pairs = s.merge(f, on="flow_id", suffixes=("_s", "_f")).drop_duplicates("flow_id")
    if len(pairs) == 0:
        return self_ns, core_ns
    # Duration of the kernel at each flow end: the kernels table (with its core type), else
    # the device slice starting there.
    k = p.table("kernels")
    kt = pd.DataFrame({"ts_ns_f": k["start_ns"].to_numpy(np.int64),
                       "kdur": k["dur_ns"].to_numpy(np.int64),
                       "core": k["core_type"].astype(str).to_numpy()}).drop_duplicates("ts_ns_f")
    sl = p.table("slices")
    on_end = np.isin(sl["track_id"].to_numpy(), pairs["track_id_f"].unique())
    st = pd.DataFrame({"track_id_f": sl["track_id"].to_numpy()[on_end],
                       "ts_ns_f": sl["start_ns"].to_numpy(np.int64)[on_end],
                       "sdur": sl["dur_ns"].to_numpy(np.int64)[on_end]}) \
        .drop_duplicates(["track_id_f", "ts_ns_f"])
    pairs = pairs.merge(kt, on="ts_ns_f", how="left").merge(st, on=["track_id_f", "ts_ns_f"],
                                                            how="left")
    d = pairs["kdur"].fillna(pairs["sdur"])
    pairs = pairs[d.notna().to_numpy()]
    d = d[d.notna()].to_numpy(np.int64)
    is_core = (pairs["core"].fillna("") == "AI_CORE").to_numpy()
    ts = pairs["ts_ns_s"].to_numpy(np.int64)
    ttrack = pairs["track_id_s"].to_numpy()
    owner = np.full(len(pairs), -1, np.int64)
    for t in np.unique(ttrack):  # a few host threads
        lo = np.searchsorted(track, t, side="left")
        hi = np.searchsorted(track, t, side="right")
        if hi == lo:
            continue
        m = ttrack == t
        i = lo + np.searchsorted(start[lo:hi], ts[m], side="right") - 1
        # the latest op starting before the flow, else its ancestors: the first enclosing one
        for _ in range(256):
            ok = i >= lo
            ok[ok] = ts[m][ok] < start[i[ok]] + np.maximum(dur[i[ok]], 1)
            bad = (i >= lo) & ~ok
            if not bad.any():
                break
            i[bad] = np.where(stack_parent[i[bad]] >= lo, stack_parent[i[bad]], lo - 1)
        owner[np.flatnonzero(m)] = np.where(i >= lo, i, -1)
    got = owner >= 0
    np.add.at(self_ns, owner[got], d[got])
    np.add.at(core_ns, owner[got & is_core], d[got & is_core])
    return self_ns, core_ns
