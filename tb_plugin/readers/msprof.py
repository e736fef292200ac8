"""Raw CANN msprof exports (`PROF_*` dirs: PaddlePaddle, TensorFlow, MindSpore on Ascend).

`span.root` is the `PROF_*` directory, `span.device_id` the device this worker stands for.

Layouts (formats.md 1.4, 2.21):
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
          (formats.md 2.2.3, 31 = host), else the `NPU n` label, else (NPU-labelled tracks) the
          span's device.
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
          the step_trace windows in meta["step_windows"] = [[step, start_ns, end_ns], ...].
memory_records  npu_mem (component = event APP/Device, reserved_mb = memory(KB)/1024) and
          memory_record (GE; allocated/reserved KB/1024).
module_memory   npu_module_mem (KB/1024; the -1 "only release captured" value -> NaN).
memory_allocations  operator_memory: size_kb, alloc_ns, release_ns = alloc + Duration (-1
          when empty), totals at allocation KB/1024.
communication_ops / communication_links  analyze/communication.json (ms -> ns; transit
          size = RDMA + SDMA (SDMA already aggregates HCCS/PCIE/SIO), else the sum) and
          communication_matrix.json.
meta      producer "msprof", device "npu", device_id, rank (`rank_id` of info.json.{id}),
          versions, layout.
op_statistic / api_statistic / communication_statistic are aggregates of the above and are
not read. Every unreadable file adds a FileError; nothing raises.
"""
from __future__ import annotations

import glob
import os
import re

import numpy as np
import pandas as pd

from ..model import Profile
from . import ARGS_FILE, SpanSource
from .context import ReadContext
from .tolerant import InputError, pick, read_json_file, to_float, us_text_to_ns
from .trace_json import read_traces

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
        out = sorted(out, key=_natural)
    return [os.path.join(folder, n) for n in out]


def _natural(name: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def read(span: SpanSource, work_dir: str | None = None) -> Profile:
    profile = Profile(meta={"producer": "msprof", "device": "npu"})
    ctx = ReadContext(span, profile)
    root = span.root
    out_dir = os.path.join(root, "mindstudio_profiler_output")
    dev_dirs = sorted(glob.glob(os.path.join(root, "device_*")), key=_natural)
    dev_dir = None
    if span.device_id is not None and os.path.isdir(os.path.join(root, f"device_{span.device_id}")):
        dev_dir = os.path.join(root, f"device_{span.device_id}")
    elif dev_dirs:
        dev_dir = dev_dirs[0]
    device_id = span.device_id
    if device_id is None and dev_dir:
        m = re.search(r"device_(\d+)$", dev_dir)
        device_id = int(m.group(1)) if m else None
    profile.meta["device_id"] = device_id

    if os.path.isdir(out_dir):
        layout = "mindstudio_profiler_output"
        summary = timeline = out_dir
    else:
        layout = "device_summary"
        summary = os.path.join(dev_dir, "summary") if dev_dir else ""
        timeline = os.path.join(dev_dir, "timeline") if dev_dir else ""
    profile.meta["layout"] = layout

    # --- info.json.{id}: rank, versions
    _info(ctx, root, dev_dir, device_id)

    # --- trace
    traces = _files(timeline, "msprof", "json")
    if layout == "device_summary" and not traces:
        for base in ("task_time", "hccl", "step_trace"):
            traces += _files(timeline, base, "json")
    elif layout == "mindstudio_profiler_output":
        traces += _files(timeline, "step_trace", "json")
    if layout == "device_summary" and traces and _ITER.search(os.path.basename(traces[0])):
        traces = sorted(traces, key=lambda p: _natural(os.path.basename(p)))
        profile.meta["layout"] = "device_timeline_per_iteration"
    tt = None
    if traces:
        args_path = os.path.join(work_dir, ARGS_FILE) if work_dir else None
        try:
            tt = read_traces(traces, args_path=args_path, tmp_dir=work_dir,
                             extract_args={"a_task_type": "Task Type"},
                             extract_for=lambda ph, cat: ph == "X")
            for p, reason in tt.errors:
                ctx.error(p, reason)
            if args_path:
                profile.meta["args_file"] = ARGS_FILE
            else:
                profile.meta["args_table"] = tt.args
        except InputError as exc:
            for p in traces:
                ctx.error(p, str(exc))
            tt = None
        except Exception as exc:  # noqa: BLE001
            ctx.error(traces[0], f"cannot read trace: {exc}")
            tt = None
    if tt is not None:
        try:
            _trace_tables(ctx, tt, device_id)
        except Exception as exc:  # noqa: BLE001
            ctx.error(traces[0], f"unexpected trace content: {exc}")

    # --- kernels
    ops = _files(summary, "op_summary", "csv")
    kernels = None
    if ops:
        df = ctx.csvs(ops, required=("Op Name",))
        if df is not None:
            try:
                kernels = _kernels_from_summary(df, device_id)
            except Exception as exc:  # noqa: BLE001
                ctx.error(ops[0], f"unexpected op_summary content: {exc}")
    if kernels is None and tt is not None:
        kernels = _kernels_from_trace(profile)
    profile.meta.pop("_task_type", None)
    if kernels is not None:
        profile.set("kernels", kernels, keep_extra=True)

    # --- steps
    has_overlap = profile.has("tracks") and \
        (profile.table("tracks")["kind"].astype(str) == "overlap").any() and \
        _overlap_has_slices(profile)
    steps = None
    st_files = _files(summary, "step_trace", "csv")
    if st_files:
        df = ctx.csvs(st_files, required=("Iteration ID",))
        if df is not None:
            try:
                steps = _steps_from_csv(df, device_id)
            except Exception as exc:  # noqa: BLE001
                ctx.error(st_files[0], f"unexpected step_trace content: {exc}")
    if steps is None and tt is not None:
        steps = _steps_from_trace(profile)
    if steps is not None and len(steps):
        if has_overlap:
            profile.meta["step_windows"] = [[int(a), int(b), int(c)] for a, b, c in
                                            steps[["step", "start_ns", "end_ns"]].to_numpy()]
        else:
            profile.set("steps", steps, keep_extra=True)
            profile.meta["step_categories"] = ["computing", "iteration_refresh", "other"]

    # --- memory
    _memory(ctx, summary, device_id)
    # --- communication
    _communication(ctx, os.path.join(root, "analyze"))
    return profile


def _info(ctx: ReadContext, root: str, dev_dir: str | None, device_id) -> None:
    cands = []
    if dev_dir and device_id is not None:
        cands.append(os.path.join(dev_dir, f"info.json.{device_id}"))
    if dev_dir:
        cands += sorted(glob.glob(os.path.join(dev_dir, "info.json.*[0-9]")))
    cands.append(os.path.join(root, "host", "info.json"))
    for p in cands:
        if not os.path.isfile(p):
            continue
        try:
            info = read_json_file(p, max_bytes=16 << 20)
        except InputError as exc:
            ctx.error(p, str(exc))
            continue
        if not isinstance(info, dict):
            continue
        rank = info.get("rank_id")
        try:
            if rank is not None and int(rank) >= 0:
                ctx.profile.meta["rank"] = int(rank)
        except (TypeError, ValueError):
            pass
        versions = {}
        for k in ("version", "platform_version", "cann_version", "drvVersion"):
            if info.get(k) not in (None, ""):
                versions[k] = info.get(k)
        ctx.profile.meta["versions"] = versions
        return


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


def _trace_tables(ctx: ReadContext, tt, device_id) -> None:
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
                dev = device_id
        devs.append(dev)
    tracks["kind"] = kinds
    tracks["device_id"] = pd.array(devs, dtype="Int64")
    ctx.profile.set("tracks", tracks)
    sl = tt.slices
    ctx.profile.set("slices", sl)
    ctx.profile.set("flows", tt.flows)
    ctx.profile.set("counters", tt.counters)
    # Task types for kernels built from the trace; dropped from the tables afterwards.
    ctx.profile.meta["_task_type"] = sl["a_task_type"] if "a_task_type" in sl.columns else None


def _overlap_has_slices(profile: Profile) -> bool:
    tr = profile.table("tracks")
    ov = set(tr.loc[tr["kind"].astype(str) == "overlap", "track_id"])
    sl = profile.table("slices")
    return bool(ov) and sl["track_id"].isin(ov).any()


def _ints(s: pd.Series | None, n: int) -> pd.arrays.IntegerArray:
    if s is None:
        return pd.array([pd.NA] * n, dtype="Int64")
    v = to_float(s)
    out = pd.array(np.where(np.isfinite(v), v, 0).astype(np.int64), dtype="Int64")
    out[~np.isfinite(v)] = pd.NA
    return out


_KNOWN = {"Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State",
          "Task Type", "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)",
          "Block Num", "Block Dim", "Mix Block Num", "Mix Block Dim", "HF32 Eligible",
          "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
          "Output Data Types", "Output Formats", "Context ID", "Model Name", "Infer ID"}


def _filter_device(df: pd.DataFrame, device_id) -> pd.DataFrame:
    col = pick(df, "Device_id", "Device ID")
    if col is None or device_id is None:
        return df
    v = to_float(df[col])
    if not np.isfinite(v).any() or not (v == device_id).any():
        return df
    return df[v == device_id].reset_index(drop=True)


def _kernels_from_summary(df: pd.DataFrame, device_id) -> pd.DataFrame:
    df = _filter_device(df, device_id)
    n = len(df)
    c = lambda *names: pick(df, *names)  # noqa: E731
    text = lambda col: (df[col].fillna("").astype(str).to_numpy(dtype=object) if col  # noqa: E731
                        else np.full(n, "", dtype=object))
    start_col = c("Task Start Time(us)", "Start Time(us)")
    dur_col = c("Task Duration(us)", "Duration(us)")
    wait_col = c("Task Wait Time(us)", "Wait Time(us)")
    dev_col = c("Device_id")
    out = pd.DataFrame({
        "name": text(c("Op Name", "Name")),
        "type": text(c("OP Type", "Type")),
        "core_type": text(c("Task Type", "Accelerator Core")),
        "start_ns": us_text_to_ns(df[start_col].fillna("").astype(str).to_numpy(dtype=object))
        if start_col else np.zeros(n, np.int64),
        "dur_ns": us_text_to_ns(df[dur_col].fillna("").astype(str).to_numpy(dtype=object))
        if dur_col else np.zeros(n, np.int64),
        "wait_ns": us_text_to_ns(df[wait_col].fillna("").astype(str).to_numpy(dtype=object))
        if wait_col else np.zeros(n, np.int64),
        "device_id": _ints(df[dev_col], n) if dev_col else
        pd.array([device_id] * n, dtype="Int64"),
        "stream_id": _ints(df[c("Stream ID")] if c("Stream ID") else None, n),
        "block_dim": _ints(df[c("Block Num", "Block Dim")] if c("Block Num", "Block Dim")
                           else None, n),
        "input_shapes": text(c("Input Shapes")),
        "input_dtypes": text(c("Input Data Types")),
        "output_shapes": text(c("Output Shapes")),
    })
    for col in df.columns:
        if col not in _KNOWN and col not in out.columns:
            out[col] = to_float(df[col])
    return out


def _kernels_from_trace(profile: Profile) -> pd.DataFrame | None:
    tr = profile.table("tracks")
    dev = tr[tr["kind"].astype(str) == "device"]
    task_type = profile.meta.pop("_task_type", None)
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


def _steps_from_csv(df: pd.DataFrame, device_id) -> pd.DataFrame | None:
    df = _filter_device(df, device_id)
    c = lambda *names: pick(df, *names)  # noqa: E731
    it = to_float(df[c("Iteration ID")])
    model = df[c("Model ID")].fillna("").astype(str) if c("Model ID") else pd.Series([""] * len(df))
    if len(df) == 0:
        return None
    best = model.value_counts().index[0]
    keep = (model == best).to_numpy() & np.isfinite(it)
    df = df[keep].reset_index(drop=True)
    it = it[keep]

    def ns(col):
        if col is None:
            return np.zeros(len(df), np.int64)
        return us_text_to_ns(df[col].fillna("").astype(str).to_numpy(dtype=object))

    end = ns(c("Iteration End(us)", "Iteration End"))
    total = ns(c("Iteration Time(us)", "Iteration Time"))
    fpbp = ns(c("FP to BP Time(us)", "FP to BP Time"))
    refresh = ns(c("Iteration Refresh(us)", "Iteration Refresh"))
    return _steps_frame(it.astype(np.int64), end - total, end, total, fpbp, refresh)


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


def _memory(ctx: ReadContext, summary: str, device_id) -> None:
    recs = []
    files = _files(summary, "npu_mem", "csv")
    if files:
        df = ctx.csvs(files, required=("event",))
        if df is not None:
            df = _filter_device(df, device_id)
            ts_col = pick(df, "timestamp(us)", "Timestamp(us)")
            mem_col = pick(df, "memory(KB)")
            dev = _device_text(df, device_id)
            recs.append(pd.DataFrame({
                "component": df["event"].fillna("").astype(str).to_numpy(dtype=object),
                "device": dev,
                "ts_ns": us_text_to_ns(df[ts_col].fillna("").astype(str).to_numpy(dtype=object))
                if ts_col else np.zeros(len(df), np.int64),
                "reserved_mb": to_float(df[mem_col]) / KB if mem_col else np.nan,
                "allocated_mb": np.nan,
            }))
    files = _files(summary, "memory_record", "csv")
    if files:
        df = ctx.csvs(files, required=("Component",))
        if df is not None:
            df = _filter_device(df, device_id)
            ts_col = pick(df, "Timestamp(us)")
            a = pick(df, "Total Allocated(KB)")
            r = pick(df, "Total Reserved(KB)")
            recs.append(pd.DataFrame({
                "component": df["Component"].fillna("GE").astype(str).to_numpy(dtype=object),
                "device": _device_text(df, device_id),
                "ts_ns": us_text_to_ns(df[ts_col].fillna("").astype(str).to_numpy(dtype=object))
                if ts_col else np.zeros(len(df), np.int64),
                "allocated_mb": to_float(df[a]) / KB if a else np.nan,
                "reserved_mb": to_float(df[r]) / KB if r else np.nan,
            }))
    if recs:
        rec = pd.concat(recs, ignore_index=True).sort_values("ts_ns", kind="stable")
        ctx.profile.set("memory_records", rec)
    files = _files(summary, "npu_module_mem", "csv")
    if files:
        df = ctx.csvs(files, required=("Component",))
        if df is not None:
            df = _filter_device(df, device_id)
            ts_col = pick(df, "Timestamp(us)")
            r = pick(df, "Total Reserved(KB)")
            res = to_float(df[r]) / KB if r else np.full(len(df), np.nan)
            res = np.where(res < 0, np.nan, res)
            ctx.profile.set("module_memory", pd.DataFrame({
                "component": df["Component"].fillna("").astype(str).to_numpy(dtype=object),
                "device": _device_text(df, device_id),
                "ts_ns": us_text_to_ns(df[ts_col].fillna("").astype(str).to_numpy(dtype=object))
                if ts_col else np.zeros(len(df), np.int64),
                "reserved_mb": res,
            }))
    files = _files(summary, "operator_memory", "csv")
    if files:
        df = ctx.csvs(files, required=("Name",))
        if df is not None:
            df = _filter_device(df, device_id)
            alloc_col = pick(df, "Allocation Time(us)")
            dur_col = pick(df, "Duration(us)")
            rel_col = pick(df, "Release Time(us)")
            alloc = us_text_to_ns(df[alloc_col].fillna("").astype(str).to_numpy(dtype=object)) \
                if alloc_col else np.zeros(len(df), np.int64)
            if rel_col:
                has = df[rel_col].notna().to_numpy()
                rel = np.where(has, us_text_to_ns(df[rel_col].fillna("").astype(str)
                                                  .to_numpy(dtype=object)), -1)
            elif dur_col:
                has = df[dur_col].notna().to_numpy()
                rel = np.where(has, alloc + us_text_to_ns(df[dur_col].fillna("").astype(str)
                                                          .to_numpy(dtype=object)), -1)
            else:
                has = np.zeros(len(df), bool)
                rel = np.full(len(df), -1, np.int64)
            ta = pick(df, "Allocation Total Allocated(KB)")
            tr = pick(df, "Allocation Total Reserved(KB)")
            size = pick(df, "Size(KB)")
            ctx.profile.set("memory_allocations", pd.DataFrame({
                "name": df["Name"].fillna("").astype(str).to_numpy(dtype=object),
                "device": _device_text(df, device_id),
                "size_kb": to_float(df[size]) if size else np.nan,
                "alloc_ns": alloc,
                "release_ns": rel.astype(np.int64),
                "duration_ns": np.where(has, rel - alloc, -1).astype(np.int64),
                "alloc_total_allocated_mb": to_float(df[ta]) / KB if ta else np.nan,
                "alloc_total_reserved_mb": to_float(df[tr]) / KB if tr else np.nan,
            }))


def _device_text(df: pd.DataFrame, device_id) -> np.ndarray:
    col = pick(df, "Device_id")
    if col is not None:
        v = to_float(df[col])
        return np.array([f"NPU:{int(x)}" if np.isfinite(x) else
                         (f"NPU:{device_id}" if device_id is not None else "NPU") for x in v],
                        dtype=object)
    col = pick(df, "Device", "Device Type")
    if col is not None:
        return df[col].fillna("").astype(str).to_numpy(dtype=object)
    return np.full(len(df), f"NPU:{device_id}" if device_id is not None else "NPU", dtype=object)


def _ms_to_ns(v) -> int:
    try:
        ns = int(round(float(v) * 1e6))
    except (TypeError, ValueError, OverflowError):  # OverflowError: inf (1e400, 1e308 ms)
        return 0
    return ns if abs(ns) < 2 ** 63 else 0


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
            low = k.lower()
            kind = "p2p" if low.startswith(("hcom_send", "hcom_receive",
                                             "hcom_batchsendrecv")) else "collective"
            yield None, kind, k, v


def _communication(ctx: ReadContext, analyze: str) -> None:
    p = os.path.join(analyze, "communication.json")
    if os.path.isfile(p):
        try:
            doc = read_json_file(p)
            rows = []
            for step, kind, key, info in _comm_entries(doc if isinstance(doc, dict) else {}):
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
                    "elapse_ns": _ms_to_ns(t.get("Elapse Time(ms)")),
                    "transit_ns": _ms_to_ns(t.get("Transit Time(ms)")),
                    "wait_ns": _ms_to_ns(t.get("Wait Time(ms)")),
                    "sync_ns": _ms_to_ns(t.get("Synchronization Time(ms)")),
                    "idle_ns": _ms_to_ns(t.get("Idle Time(ms)")),
                    "transit_size_mb": size,
                })
            if rows:
                df = pd.DataFrame(rows)
                df["step"] = pd.array(df["step"].tolist(), dtype="Int64")
                ctx.profile.set("communication_ops", df)
        except InputError as exc:
            ctx.error(p, str(exc))
        except Exception as exc:  # noqa: BLE001
            ctx.error(p, f"unexpected content: {exc}")
    p = os.path.join(analyze, "communication_matrix.json")
    if os.path.isfile(p):
        try:
            doc = read_json_file(p)
            rows = []
            for step, _kind, op, links in _comm_entries(doc if isinstance(doc, dict) else {}):
                for link, d in links.items():
                    m = re.match(r"^\s*(\d+)\s*-\s*(\d+)\s*$", str(link))
                    if not m or not isinstance(d, dict):
                        continue
                    rows.append({
                        "step": step, "op": op, "src_rank": int(m.group(1)),
                        "dst_rank": int(m.group(2)),
                        "transport": str(d.get("Transport Type", "")),
                        "transit_size_mb": float(d.get("Transit Size(MB)") or 0),
                        "transit_ns": _ms_to_ns(d.get("Transit Time(ms)")),
                        "bandwidth_gbps": float(d.get("Bandwidth(GB/s)") or 0),
                    })
            if rows:
                df = pd.DataFrame(rows)
                df["step"] = pd.array(df["step"].tolist(), dtype="Int64")
                ctx.profile.set("communication_links", df)
        except InputError as exc:
            ctx.error(p, str(exc))
        except Exception as exc:  # noqa: BLE001
            ctx.error(p, f"unexpected content: {exc}")
