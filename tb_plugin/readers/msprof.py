"""Raw CANN msprof exports (`PROF_*` dirs: PaddlePaddle, TensorFlow, MindSpore on Ascend).

`span.root` is the `PROF_*` directory, `span.device_id` the device this worker stands for.

Layouts (docs/formats.md §1.4, §2.21):
* new (CANN >= 8.0): `mindstudio_profiler_output/` with `msprof_{ts}.json` (+ sliced
  `msprof_slice_{k}_{ts}.json`), `step_trace_{ts}.json`, `op_summary_{ts}.csv` or
  `op_summary_slice_{k}_{ts}.csv` (concatenated in k order), `step_trace_{ts}.csv`,
  `npu_mem_*`, `npu_module_mem_*`, `memory_record_*`, `operator_memory_*`; plus
  `analyze/communication.json` and `analyze/communication_matrix.json`. When several exports
  (different `{ts}`) sit side by side, the newest is read.
* old (CANN 6.3 - 7.0): `device_{id}/summary/*.csv` and `device_{id}/timeline/*.json` with
  the same base names and other suffixes. The CANN 6.3 per-iteration timelines
  `msprof_{dev}_{model}_{iter}.json` are read together as one trace (iteration order); the
  `hccl_*`, `task_time_*` and `step_trace_*` timeline files are subsets of those and are only
  read when no `msprof_*.json` exists.

What is filled:
tracks    kind by process name: CANN -> cann; Ascend Hardware / Task Scheduler -> device
          (its `Step Trace ...` thread -> other); Communication / HCCL -> communication;
          Overlap Analysis -> overlap; Step Trace process -> other; tracks holding only
          counter samples -> counter; framework / msproftx layers -> host; anything else
          other. device_id: pid decoding `(pid >> 5) & 31 == sort index -> pid & 31`
          (docs/formats.md §2.2.3, 31 = host), else the `NPU n` label, else (NPU-labelled
          tracks) the span's device.
slices, flows, counters: as decoded by trace_json (args in the side file).
          Device tracks of other devices than `span.device_id` are kept (the timeline shows
          what the file holds); kernels and CSV rows are filtered by device.
kernels   from op_summary (Op Name, OP Type, Task Type -> core_type, Task Start Time(us) exact,
          Task Duration(us), Task Wait Time(us), Block Num|Block Dim, Stream ID, shapes /
          dtypes; unknown numeric columns (PMU) kept as extra float columns). Without any
          op_summary (CANN 6.3 sample) they are built from the Ascend Hardware / Task
          Scheduler slices: name, core_type = `Task Type` arg, stream = tid, wait_ns = 0.
          Step left NA (analysis assigns it from the step windows).
steps     graph-mode step_trace (csv rows, else the `Iteration {n}` timeline slices):
          step = Iteration ID, end = Iteration End, start = end - Iteration Time (the same
          window as the `Iteration n` slice), total_ns = Iteration Time. Breakdown:
          bd_computing = FP to BP Time, bd_iteration_refresh = Iteration Refresh,
          bd_other = total - both (data-augmentation bound and gaps), clipped at 0.
          With several models the one with most iterations is used.
          BUT if the timeline has Overlap Analysis events the reader leaves `steps` empty
          (derive.py computes the computing/communication/free breakdown from them) and puts
          the step_trace windows in the `step_windows` table (step, start_ns, end_ns).
memory_records  npu_mem (component = event APP/Device, reserved_mb = memory(KB)/1024) and
          memory_record (GE; allocated/reserved KB/1024).
module_memory   npu_module_mem (KB/1024; the -1 "only release captured" value -> NaN).
memory_allocations  operator_memory: size_kb, alloc_ns, release_ns = alloc + Duration (-1
          when empty), totals at allocation KB/1024.
communication_ops / communication_links  analyze/communication.json (ms -> ns; transit
          size = RDMA + SDMA (SDMA already aggregates HCCS/PCIE/SIO), else the sum) and
          communication_matrix.json.
meta      producer "msprof", device "npu", device_id, rank (`rank_id` of info.json.{id}),
          versions, layout, ai_core_num / aiv_num (`DeviceInfo` of info.json.{id}),
          pmu_na_cells (PMU counters: `pmu_*` columns, see columns.PMU_COUNTERS).
step_phases  step_trace_*.csv (per iteration: gap, FP->BP, tail, each Reduce pair); without
          the CSV, derive.py makes them from the `Iteration n` / `FP_BP Time n` slices.
op_statistic / api_statistic  op_statistic_*.csv and api_statistic_*.csv as written
          (readers.statistics); communication_statistic is not read.
kernels (AI CPU)  aicpu_*.csv tasks join the kernels with core_type AI_CPU unless op_summary
          has AI_CPU kernels of that name (readers.statistics.add_aicpu).
SQLite export: `msprof_{ts}.db` in the PROF dir (+ `analyze/communication_analyzer.db`) fills
the tables and the timeline the text export did not give (`sqlite_export.read_msprof_db`).
Every unreadable file adds a FileError; nothing raises.
"""
from __future__ import annotations

import glob
import os
import re

import numpy as np
import pandas as pd

from ..model import Profile, ProfileMeta
from ..natural_sort import natural_key
from ..span_source import SpanSource
from ..step_categories import MSPROF_STEP_CATEGORIES, category_names
from . import columns as C
from . import sqlite_export
from . import statistics
from .communication_json import op_kind
from .context import ReadContext, read_trace, run_steps
from .json_numbers import ms_to_ns
from .us_text import to_float, to_int64, us_columns_to_ns, us_text_to_ns

_TS = re.compile(r"_(\d{14})\.(csv|json)(\.gz)?$")
_SLICE = re.compile(r"_slice_(\d+)")
_ITER = re.compile(r"_(\d+)\.json(\.gz)?$")
_ITERATION = re.compile(r"^Iteration (\d+)$")
KB = 1024.0


def _files(folder: str, base: str, ext: str) -> list[str]:
    """`{base}_*.{ext}` in folder, newest export only, slices in k order."""
    if not folder or not os.path.isdir(folder):
        return []
    out = []
    for name in os.listdir(folder):
        if not (name.startswith(base + "_") and (name.endswith("." + ext) or
                                                 name.endswith("." + ext + ".gz"))):
            continue
        rest = name[len(base) + 1:]
        # msprof_ must not take msprof_tx_; npu_mem_ never matches npu_module_mem_.
        if not (rest[:1].isdigit() or rest.startswith("slice_")):
            continue
        out.append(name)
    if not out:
        return []
    stamps = {n: (_TS.search(n).group(1) if _TS.search(n) else "") for n in out}
    with_ts = [s for s in stamps.values() if s]
    if len(set(with_ts)) > 1:
        newest = max(with_ts)
        out = [n for n in out if stamps[n] == newest]
    sliced = [n for n in out if _SLICE.search(n)]
    if sliced:
        out = sorted(sliced, key=lambda n: int(_SLICE.search(n).group(1)))
    else:
        out = sorted(out, key=natural_key)
    return [os.path.join(folder, n) for n in out]


class _Ctx(ReadContext):
    def __init__(self, span: SpanSource, work_dir: str | None):
        super().__init__(span, work_dir, Profile(meta=ProfileMeta(producer="msprof",
                                                                   device="npu")))
        # Where the export's files are (set by the layout step).
        self.device_id: int | None = span.device_id
        self.dev_dir: str | None = None
        self.summary = ""
        self.timeline = ""
        # From the trace step, for the kernel and step steps.
        self.trace_read = False
        self.task_type: pd.Series | None = None  # `Task Type` arg of each slice


def read(span: SpanSource, work_dir: str | None = None) -> Profile:
    return run_steps(_Ctx(span, work_dir), [
        _read_layout, _read_info, _read_trace, _read_kernels, _read_steps,
        _read_memory_records, _read_module_memory, _read_memory_allocations,
        _read_communication, _read_communication_matrix, _read_statistics, _read_aicpu,
        sqlite_export.read_msprof_db,
    ])


def _read_layout(ctx: _Ctx) -> None:
    """Which device folder this worker is, and where the summary / timeline files are."""
    root = ctx.span.root
    dev_dirs = sorted(glob.glob(os.path.join(root, "device_*")), key=natural_key)
    if ctx.device_id is not None and os.path.isdir(os.path.join(root, f"device_{ctx.device_id}")):
        ctx.dev_dir = os.path.join(root, f"device_{ctx.device_id}")
    elif dev_dirs:
        ctx.dev_dir = dev_dirs[0]
    if ctx.device_id is None and ctx.dev_dir:
        m = re.search(r"device_(\d+)$", ctx.dev_dir)
        ctx.device_id = int(m.group(1)) if m else None
    meta = ctx.profile.meta
    meta.device_id = ctx.device_id
    out_dir = os.path.join(root, "mindstudio_profiler_output")
    if os.path.isdir(out_dir):
        meta.layout = "mindstudio_profiler_output"
        ctx.summary = ctx.timeline = out_dir
    else:
        meta.layout = "device_summary"
        ctx.summary = os.path.join(ctx.dev_dir, "summary") if ctx.dev_dir else ""
        ctx.timeline = os.path.join(ctx.dev_dir, "timeline") if ctx.dev_dir else ""


def _read_info(ctx: _Ctx) -> None:
    """info.json.{id}: rank and versions (the first readable candidate)."""
    cands = []
    if ctx.dev_dir and ctx.device_id is not None:
        cands.append(os.path.join(ctx.dev_dir, f"info.json.{ctx.device_id}"))
    if ctx.dev_dir:
        cands += sorted(glob.glob(os.path.join(ctx.dev_dir, "info.json.*[0-9]")))
    cands.append(os.path.join(ctx.span.root, "host", "info.json"))
    meta = ctx.profile.meta
    for p in cands:
        if not os.path.isfile(p):
            continue
        info = ctx.json(p, object_required=False, max_bytes=16 << 20)
        if info is None:
            continue
        rank = info.get("rank_id")
        try:
            if rank is not None and int(rank) >= 0:
                meta.rank = int(rank)
        except (TypeError, ValueError):
            pass
        if isinstance(info, dict):
            set_core_counts(meta, info, ctx.device_id)
        meta.versions = {k: info.get(k) for k in
                         ("version", "platform_version", "cann_version", "drvVersion")
                         if info.get(k) not in (None, "")}
        return


def set_core_counts(meta: ProfileMeta, info: dict, device_id: int | None) -> bool:
    """meta.ai_core_num / aiv_num from an info.json `DeviceInfo` list (the entry of
    `device_id`, else the first); True when a count was found."""
    entries = [d for d in (info.get("DeviceInfo") or []) if isinstance(d, dict)] \
        if isinstance(info.get("DeviceInfo"), list) else []
    if not entries:
        return False
    entry = next((d for d in entries if _count(d.get("id")) == device_id), entries[0])
    aic = _count(entry.get("ai_core_num"))
    aiv = _count(entry.get("aiv_num"))
    if aic is not None and aic > 0:
        meta.ai_core_num = aic
    if aiv is not None and aiv > 0:  # 0 on chips without vector cores (Ascend 910)
        meta.aiv_num = aiv
    return meta.ai_core_num is not None or meta.aiv_num is not None


def _count(v) -> int | None:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def _read_trace(ctx: _Ctx) -> None:
    layout = ctx.profile.meta.layout
    traces = _files(ctx.timeline, "msprof", "json")
    if layout == "device_summary" and not traces:
        for base in ("task_time", "hccl", "step_trace"):
            traces += _files(ctx.timeline, base, "json")
    elif layout == "mindstudio_profiler_output":
        traces += _files(ctx.timeline, "step_trace", "json")
    if not traces:
        return
    if layout == "device_summary" and _ITER.search(os.path.basename(traces[0])):
        traces = sorted(traces, key=lambda p: natural_key(os.path.basename(p)))
        ctx.profile.meta.layout = "device_timeline_per_iteration"
    tt = read_trace(ctx, traces, extract_args={"a_task_type": "Task Type"},
                    extract_for=lambda ph, cat: ph == "X")
    if tt is None:
        return
    ctx.trace_read = True
    _trace_tables(ctx, tt)


def _track_kind(process: str, thread: str) -> str:
    p = process.strip()
    if p in ("Ascend Hardware", "Task Scheduler"):
        return "other" if thread.startswith("Step Trace") else "device"
    if p == "CANN":
        return "cann"
    if p in ("Communication", "HCCL"):
        return "communication"
    if p == "Overlap Analysis":
        return "overlap"
    if p == "Step Trace":
        return "other"
    if p in ("Python", "PyTorch", "MindSpore", "CPU OP", "Scope Layer", "PID Name", "MsprofTx",
             "Framework"):
        return "host"
    return "other"


def _trace_tables(ctx: _Ctx, tt) -> None:
    tracks = tt.tracks.copy()
    slice_tracks = set(tt.slices["track_id"].unique()) if len(tt.slices) else set()
    counter_tracks = set(tt.counters["track_id"].unique()) if len(tt.counters) else set()
    kinds, devs = [], []
    for t, pid, proc, thr, lab, psort in zip(tracks["track_id"], tracks["pid"], tracks["process"],
                                            tracks["thread"], tracks["process_labels"],
                                            tracks["process_sort"]):
        kind = _track_kind(str(proc), str(thr))
        if t in counter_tracks and t not in slice_tracks:
            kind = "counter"
        kinds.append(kind)
        dev = None
        try:
            ipid = int(pid)
        except (TypeError, ValueError):
            ipid = None
        host_label = str(lab).strip().upper().startswith("CPU")
        # New encoding (os_pid << 10 | sort << 5 | device); CANN 6.3 used pid * 100 + sort.
        if ipid is not None and ipid >= 1024 and ((ipid >> 5) & 31) == psort and \
                ipid % 100 != psort and not host_label:
            d = ipid & 31
            dev = None if d == 31 else d
        if dev is None:
            m = re.match(r"^\s*NPU\s*(\d+)", str(lab))
            if m:
                dev = int(m.group(1))
            elif not host_label and (str(lab).strip().startswith("NPU") or
                                     kind in ("device", "communication", "overlap")):
                dev = ctx.device_id
        devs.append(dev)
    tracks["kind"] = kinds
    tracks["device_id"] = pd.array(devs, dtype="Int64")
    ctx.set_trace_tables(tracks, tt.slices, tt.flows, tt.counters)
    # Task types for kernels built from the trace (the slices table does not keep them).
    sl = tt.slices
    ctx.task_type = sl["a_task_type"] if "a_task_type" in sl.columns else None


def _overlap_has_slices(profile: Profile) -> bool:
    tr = profile.table("tracks")
    ov = set(tr.loc[tr["kind"].astype(str) == "overlap", "track_id"])
    sl = profile.table("slices")
    return bool(ov) and sl["track_id"].isin(ov).any()


def _ints(s: pd.Series | None, n: int) -> pd.arrays.IntegerArray:
    """An integer column (`to_int64`: none past int64), all missing without the column."""
    return pd.array([pd.NA] * n, dtype="Int64") if s is None else to_int64(s)


def _us(df: pd.DataFrame, header: str | None) -> np.ndarray:
    """µs text -> exact int ns (0 for empty cells, zeros without the column)."""
    if header is None:
        return np.zeros(len(df), np.int64)
    if df[header].dtype == "string":  # read in place (a missing cell is 0 either way)
        return us_columns_to_ns([df[header]])[0]
    return us_text_to_ns(df[header].fillna("").astype(str).to_numpy(dtype=object))


def _text(df: pd.DataFrame, header: str | None, missing: str = "") -> np.ndarray:
    if header is None:
        return np.full(len(df), "", dtype=object)
    return df[header].fillna(missing).astype(str).to_numpy(dtype=object)


def _kb_mib(df: pd.DataFrame, header: str | None):
    return to_float(df[header]) / KB if header else np.nan


def _filter_device(df: pd.DataFrame, device_id) -> pd.DataFrame:
    col = C.resolve(df, C.MSPROF_DEVICE).get("device_id")
    if col is None or device_id is None:
        return df
    v = to_float(df[col])
    if not np.isfinite(v).any() or not (v == device_id).any():
        return df
    return df[v == device_id].reset_index(drop=True)


def _read_kernels(ctx: _Ctx) -> None:
    """op_summary rows of this device; without any, the Ascend Hardware slices."""
    kernels = None
    ops = _files(ctx.summary, "op_summary", "csv")
    if ops:
        df = ctx.csvs(ops, required=C.required(C.OP_SUMMARY))
        if df is not None:
            kernels = _kernels_from_summary(df, ctx.device_id, ctx.profile.meta)
    if kernels is None and ctx.trace_read:
        kernels = _kernels_from_trace(ctx.profile, ctx.task_type)
    ctx.task_type = None
    if kernels is not None:
        ctx.profile.set("kernels", kernels, keep_extra=True)


def _kernels_from_summary(df: pd.DataFrame, device_id, meta: ProfileMeta) -> pd.DataFrame:
    df = _filter_device(df, device_id)
    n = len(df)
    c = C.resolve(df, C.OP_SUMMARY)
    out = pd.DataFrame({
        "name": _text(df, c.get("name")),
        "type": _text(df, c.get("type")),
        "core_type": _text(df, c.get("core_type")),
        "start_ns": _us(df, c.get("start_ns")),
        "dur_ns": _us(df, c.get("dur_ns")),
        "wait_ns": _us(df, c.get("wait_ns")),
        "device_id": _ints(df[c["device_id"]], n) if "device_id" in c else
        pd.array([device_id] * n, dtype="Int64"),
        "stream_id": _ints(df[c["stream_id"]] if "stream_id" in c else None, n),
        "block_dim": _ints(df[c["block_dim"]] if "block_dim" in c else None, n),
        "input_shapes": _text(df, c.get("input_shapes")),
        "input_dtypes": _text(df, c.get("input_dtypes")),
        "output_shapes": _text(df, c.get("output_shapes")),
    })
    used = set(c.values())
    extra, na_cells, pmu_headers = C.read_pmu(df)
    used |= pmu_headers
    if na_cells:
        meta.pmu_na_cells = na_cells
    for col in df.columns:
        if col not in used and col not in C.OP_SUMMARY_TEXT_HEADERS and col not in out.columns:
            extra[col] = to_float(df[col])
    if extra:  # one concat: op_summary may carry ~150 PMU columns
        out = pd.concat([out, pd.DataFrame(extra, index=out.index)], axis=1)
    return out


def _kernels_from_trace(profile: Profile, task_type: pd.Series | None) -> pd.DataFrame | None:
    tr = profile.table("tracks")
    dev = tr[tr["kind"].astype(str) == "device"]
    if len(dev) == 0:
        return None
    sl = profile.table("slices")
    mask = sl["track_id"].isin(set(dev["track_id"])).to_numpy()
    k = sl[mask]
    tid_of = dict(zip(dev["track_id"], dev["tid"]))
    dev_of = dict(zip(dev["track_id"], dev["device_id"]))
    tt = task_type[mask] if task_type is not None else [None] * len(k)
    stream = []
    for t in k["track_id"]:
        m = re.search(r"\d+", str(tid_of.get(t, "")))
        v = int(m.group()) if m else None
        stream.append(v if v is not None and v < 2 ** 63 else None)  # no stream id: damage
    return pd.DataFrame({
        "name": k["name"].astype("string").fillna("").to_numpy(dtype=object),
        "type": "",
        "core_type": [str(x) if x is not None else "" for x in tt],
        "start_ns": k["start_ns"].to_numpy(np.int64),
        "dur_ns": k["dur_ns"].to_numpy(np.int64),
        "device_id": pd.array([dev_of.get(t) for t in k["track_id"]], dtype="Int64"),
        "stream_id": pd.array(stream, dtype="Int64"),
    }).sort_values("start_ns", kind="stable").reset_index(drop=True)


def _read_steps(ctx: _Ctx) -> None:
    """Graph-mode iterations: the steps, or only their windows when the timeline has
    Overlap Analysis events (derive.py computes the breakdown from those)."""
    p = ctx.profile
    has_overlap = p.has("tracks") and \
        (p.table("tracks")["kind"].astype(str) == "overlap").any() and _overlap_has_slices(p)
    steps = df = None
    st_files = _files(ctx.summary, "step_trace", "csv")
    if st_files:
        df = ctx.csvs(st_files, required=C.required(C.MSPROF_STEP_TRACE))
        if df is not None:
            steps = _steps_from_csv(df, ctx.device_id)
    if steps is None and ctx.trace_read:
        steps = _steps_from_trace(p)
    if st_files and df is not None:
        phases = _phases_from_csv(df, ctx.device_id)
        if phases is not None and len(phases):
            p.set("step_phases", phases)
    if steps is None or len(steps) == 0:
        return
    if has_overlap:
        p.set("step_windows", steps[["step", "start_ns", "end_ns"]])
    else:
        p.set("steps", steps, keep_extra=True)
        p.meta.step_categories = category_names(MSPROF_STEP_CATEGORIES)


def _steps_from_csv(df: pd.DataFrame, device_id) -> pd.DataFrame | None:
    df = _filter_device(df, device_id)
    c = C.resolve(df, C.MSPROF_STEP_TRACE)
    it = to_float(df[c["step"]])
    model = df[c["model"]].fillna("").astype(str) if "model" in c else pd.Series([""] * len(df))
    if len(df) == 0:
        return None
    best = model.value_counts().index[0]
    keep = (model == best).to_numpy() & (np.abs(it) < 2.0 ** 63)  # (NaN, inf, 1e30: no step)
    df = df[keep].reset_index(drop=True)
    it = it[keep]
    end = _us(df, c.get("end_ns"))
    total = _us(df, c.get("total_ns"))
    return _steps_frame(it.astype(np.int64), end - total, end, total,
                        _us(df, c.get("fp_bp_ns")), _us(df, c.get("refresh_ns")))


_REDUCE_HEADER = re.compile(r"^Reduce Start(\(us\))?(\.(\d+))?$")


def _phases_from_csv(df: pd.DataFrame, device_id) -> pd.DataFrame | None:
    """step_phases of step_trace_*.csv (the model with most iterations): step start = end -
    Iteration Time; iteration_interval = FP Start - start, fp_and_bp = BP End - FP Start,
    tail = end - BP End; one `reduce` row per Reduce Start / Duration pair (`Reduce k`).
    Iterations without FP/BP (inference: N/A) have no phases."""
    df = _filter_device(df, device_id)
    if len(df) == 0:
        return None
    c = C.resolve(df, C.MSPROF_STEP_TRACE_POINTS)
    if not {"fp_start", "bp_end", "end", "total"} <= set(c):
        return None
    model = df[c["model"]].fillna("").astype(str) if "model" in c else \
        pd.Series([""] * len(df), index=df.index)
    it = to_float(df[c["step"]])
    keep = (model == model.value_counts().index[0]).to_numpy() & (np.abs(it) < 2.0 ** 63)
    fp_txt = df[c["fp_start"]].astype(str).str.strip()
    keep &= ~fp_txt.isin(["N/A", "", "nan"]).to_numpy()
    df, it = df[keep].reset_index(drop=True), it[keep].astype(np.int64)
    if len(df) == 0:
        return None
    fp, bp, end, total = (_us(df, c[k]) for k in ("fp_start", "bp_end", "end", "total"))
    start = end - total
    parts = [("iteration_interval", "", start, np.maximum(fp - start, 0)),
             ("fp_and_bp", "", fp, bp - fp), ("tail", "", bp, np.maximum(end - bp, 0))]
    for col in df.columns:
        m = _REDUCE_HEADER.match(str(col).strip())
        if not m:
            continue
        k = m.group(3) or "0"
        dur_col = "Reduce Duration(us)" if m.group(1) else "Reduce Duration"
        dur_col += f".{k}" if m.group(2) else ""
        if dur_col not in df.columns:
            continue
        rs, rd = _us(df, col), _us(df, dur_col)
        ok = pd.to_numeric(df[dur_col].astype(str).str.strip(), errors="coerce").notna() \
            .to_numpy()
        parts.append(("reduce", f"Reduce {k}", rs[ok], rd[ok], ok))
    frames = []
    for part in parts:
        ph, nm, st, du = part[:4]
        steps = it[part[4]] if len(part) > 4 else it
        frames.append(pd.DataFrame({"step": steps, "phase": ph, "name": nm,
                                    "start_ns": st, "dur_ns": du}))
    out = pd.concat(frames, ignore_index=True).drop_duplicates(["step", "phase", "name"])
    return out.sort_values(["step", "start_ns"], kind="stable").reset_index(drop=True)


def _steps_frame(step, start, end, total, fpbp, refresh) -> pd.DataFrame:
    other = np.maximum(total - fpbp - refresh, 0)
    df = pd.DataFrame({"step": step, "start_ns": start, "end_ns": end, "total_ns": total,
                       "bd_computing": fpbp, "bd_iteration_refresh": refresh,
                       "bd_other": other})
    return df.drop_duplicates("step").sort_values("step").reset_index(drop=True)


def _steps_from_trace(profile: Profile) -> pd.DataFrame | None:
    sl = profile.table("slices")
    if len(sl) == 0:
        return None
    names = sl["name"].astype(str)
    cand = names.str.match(r"^(Iteration \d+|FP_BP Time \d+|Iteration Refresh \d+)$")
    if not cand.any():
        return None
    sub = sl[cand.to_numpy()]
    nm = names[cand]
    it_mask = nm.str.match(r"^Iteration \d+$").to_numpy()
    its = sub[it_mask]
    if len(its) == 0:
        return None
    best_track = its["track_id"].value_counts().index[0]
    sub = sub[(sub["track_id"] == best_track).to_numpy()]
    nm = sub["name"].astype(str)
    num = nm.str.extract(r"(\d+)$")[0].astype(np.int64).to_numpy()
    kind = nm.str.replace(r" \d+$", "", regex=True).to_numpy()
    d = pd.DataFrame({"num": num, "kind": kind, "start": sub["start_ns"].to_numpy(),
                      "dur": sub["dur_ns"].to_numpy()})
    piv = d.pivot_table(index="num", columns="kind", values=["start", "dur"], aggfunc="first")
    if ("dur", "Iteration") not in piv.columns:
        return None
    piv = piv[piv[("dur", "Iteration")].notna()]

    def col(a, b):
        return piv[(a, b)].fillna(0).astype(np.int64).to_numpy() if (a, b) in piv.columns \
            else np.zeros(len(piv), np.int64)

    start = col("start", "Iteration")
    total = col("dur", "Iteration")
    return _steps_frame(piv.index.to_numpy(np.int64), start, start + total, total,
                        col("dur", "FP_BP Time"), col("dur", "Iteration Refresh"))


def _memory_device(df: pd.DataFrame, device_id) -> np.ndarray:
    """`NPU:{Device_id}`, else the Device text as written, else the span's device."""
    c = C.resolve(df, C.MSPROF_MEMORY_DEVICE)
    fallback = f"NPU:{device_id}" if device_id is not None else "NPU"
    if "device_id" in c:
        v = to_float(df[c["device_id"]])
        return np.array([f"NPU:{int(x)}" if np.isfinite(x) else fallback for x in v],
                        dtype=object)
    if "device" in c:
        return df[c["device"]].fillna("").astype(str).to_numpy(dtype=object)
    return np.full(len(df), fallback, dtype=object)


def _summary_csv(ctx: _Ctx, base: str, table: C.Table) -> pd.DataFrame | None:
    """The newest export of summary `base` (slices stacked), rows of this device only."""
    files = _files(ctx.summary, base, "csv")
    df = ctx.csvs(files, required=C.required(table)) if files else None
    return None if df is None else _filter_device(df, ctx.device_id)


def _read_memory_records(ctx: _Ctx) -> None:
    """npu_mem (APP / Device reserved) and memory_record (GE allocated / reserved)."""
    recs = []
    df = _summary_csv(ctx, "npu_mem", C.NPU_MEM)
    if df is not None:
        c = C.resolve(df, C.NPU_MEM)
        recs.append(pd.DataFrame({
            "component": _text(df, c["component"]),
            "device": _memory_device(df, ctx.device_id),
            "ts_ns": _us(df, c.get("ts_ns")),
            "reserved_mb": _kb_mib(df, c.get("reserved_mb")),
            "allocated_mb": np.nan,
        }))
    df = _summary_csv(ctx, "memory_record", C.MSPROF_MEMORY_RECORD)
    if df is not None:
        c = C.resolve(df, C.MSPROF_MEMORY_RECORD)
        recs.append(pd.DataFrame({
            "component": _text(df, c["component"], missing="GE"),
            "device": _memory_device(df, ctx.device_id),
            "ts_ns": _us(df, c.get("ts_ns")),
            "allocated_mb": _kb_mib(df, c.get("allocated_mb")),
            "reserved_mb": _kb_mib(df, c.get("reserved_mb")),
        }))
    if recs:
        rec = pd.concat(recs, ignore_index=True).sort_values("ts_ns", kind="stable")
        ctx.profile.set("memory_records", rec)


def _read_module_memory(ctx: _Ctx) -> None:
    df = _summary_csv(ctx, "npu_module_mem", C.MSPROF_NPU_MODULE_MEM)
    if df is None:
        return
    c = C.resolve(df, C.MSPROF_NPU_MODULE_MEM)
    res = to_float(df[c["reserved_mb"]]) / KB if "reserved_mb" in c else \
        np.full(len(df), np.nan)
    ctx.profile.set("module_memory", pd.DataFrame({
        "component": _text(df, c["component"]),
        "device": _memory_device(df, ctx.device_id),
        "ts_ns": _us(df, c.get("ts_ns")),
        "reserved_mb": np.where(res < 0, np.nan, res),  # -1: only a release was captured
    }))


def _read_memory_allocations(ctx: _Ctx) -> None:
    df = _summary_csv(ctx, "operator_memory", C.MSPROF_OPERATOR_MEMORY)
    if df is None:
        return
    c = C.resolve(df, C.MSPROF_OPERATOR_MEMORY)
    alloc = _us(df, c.get("alloc_ns"))
    if "release_ns" in c:
        has = df[c["release_ns"]].notna().to_numpy()
        rel = np.where(has, _us(df, c["release_ns"]), -1)
    elif "duration_ns" in c:
        has = df[c["duration_ns"]].notna().to_numpy()
        rel = np.where(has, alloc + _us(df, c["duration_ns"]), -1)
    else:
        has = np.zeros(len(df), bool)
        rel = np.full(len(df), -1, np.int64)
    ctx.profile.set("memory_allocations", pd.DataFrame({
        "name": _text(df, c["name"]),
        "device": _memory_device(df, ctx.device_id),
        "size_kb": to_float(df[c["size_kb"]]) if "size_kb" in c else np.nan,
        "alloc_ns": alloc,
        "release_ns": rel.astype(np.int64),
        "duration_ns": np.where(has, rel - alloc, -1).astype(np.int64),
        "alloc_total_allocated_mb": _kb_mib(df, c.get("alloc_total_allocated_mb")),
        "alloc_total_reserved_mb": _kb_mib(df, c.get("alloc_total_reserved_mb")),
    }))


def _comm_entries(doc: dict):
    """(step, kind, key, info): accepts msprof's flat form and torch_npu's per-step form."""
    for k, v in doc.items():
        if not isinstance(v, dict):
            continue
        if k.lower() == "total" or k == "Total Op Info":
            continue
        if ("collective" in v or "p2p" in v) and re.match(r"^step\d*$", k):
            m = re.search(r"\d+", k)
            step = int(m.group()) if m else None
            for kind in ("collective", "p2p"):
                for op, info in (v.get(kind) or {}).items():
                    if op != "Total Op Info" and isinstance(info, dict):
                        yield step, kind, op, info
        else:
            yield None, op_kind(k), k, v


def _analyze_json(ctx: _Ctx, name: str) -> dict | None:
    p = os.path.join(ctx.span.root, "analyze", name)
    return ctx.json(p, object_required=False) if os.path.isfile(p) else None


def _read_communication(ctx: _Ctx) -> None:
    doc = _analyze_json(ctx, "communication.json")
    if doc is None:
        return
    rows = []
    for step, kind, key, info in _comm_entries(doc):
        name, _, group = key.partition("@")
        t = info.get("Communication Time Info") or {}
        bw = info.get("Communication Bandwidth Info") or {}
        sizes = {tr: float(d.get("Transit Size(MB)") or 0) for tr, d in bw.items()
                 if isinstance(d, dict)}
        size = (sizes.get("RDMA", 0.0) + sizes["SDMA"]) if "SDMA" in sizes \
            else sum(sizes.values())
        start = t.get("Start Timestamp(us)")
        rows.append({
            "step": step, "name": name, "group": group, "kind": kind,
            "start_ns": int(us_text_to_ns([str(start)])[0]) if start is not None else 0,
            "elapse_ns": ms_to_ns(t.get("Elapse Time(ms)")),
            "transit_ns": ms_to_ns(t.get("Transit Time(ms)")),
            "wait_ns": ms_to_ns(t.get("Wait Time(ms)")),
            "sync_ns": ms_to_ns(t.get("Synchronization Time(ms)")),
            "idle_ns": ms_to_ns(t.get("Idle Time(ms)")),
            "transit_size_mb": size,
        })
    if rows:
        df = pd.DataFrame(rows)
        df["step"] = pd.array(df["step"].tolist(), dtype="Int64")
        ctx.profile.set("communication_ops", df)


def _read_communication_matrix(ctx: _Ctx) -> None:
    doc = _analyze_json(ctx, "communication_matrix.json")
    if doc is None:
        return
    rows = []
    for step, _kind, op, links in _comm_entries(doc):
        for link, d in links.items():
            m = re.match(r"^\s*(\d+)\s*-\s*(\d+)\s*$", str(link))
            if not m or not isinstance(d, dict):
                continue
            rows.append({
                "step": step, "op": op, "src_rank": int(m.group(1)),
                "dst_rank": int(m.group(2)),
                "transport": str(d.get("Transport Type", "")),
                "transit_size_mb": float(d.get("Transit Size(MB)") or 0),
                "transit_ns": ms_to_ns(d.get("Transit Time(ms)")),
                "bandwidth_gbps": float(d.get("Bandwidth(GB/s)") or 0),
            })
    if rows:
        df = pd.DataFrame(rows)
        df["step"] = pd.array(df["step"].tolist(), dtype="Int64")
        ctx.profile.set("communication_links", df)


def _read_statistics(ctx: _Ctx) -> None:
    files = _files(ctx.summary, "op_statistic", "csv")
    if files:
        df = ctx.csvs(files, required=C.required(C.OP_STATISTIC))
        if df is not None and len(df):
            ctx.profile.set("op_statistic", statistics.op_statistic(df, ctx.device_id))
    files = _files(ctx.summary, "api_statistic", "csv")
    if files:
        df = ctx.csvs(files, required=C.required(C.API_STATISTIC))
        if df is not None and len(df):
            ctx.profile.set("api_statistic", statistics.api_statistic(df))


def _read_aicpu(ctx: _Ctx) -> None:
    files = _files(ctx.summary, "aicpu", "csv")
    if not files:
        return
    df = ctx.csvs(files, required=C.required(C.AICPU_TASKS))
    if df is None or len(df) == 0:
        return
    tasks = statistics.aicpu_kernels(df, ctx.device_id)
    if ctx.device_id is not None:
        tasks["device_id"] = pd.array([ctx.device_id] * len(tasks), dtype="Int64")
    p = ctx.profile
    p.set("kernels", statistics.add_aicpu(p.table("kernels") if p.has("kernels") else None,
                                          tasks), keep_extra=True)
