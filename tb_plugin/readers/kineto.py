"""PyTorch kineto traces (`*.pt.trace.json[.gz]`, GPU or CPU only) -> `Profile`.

`span.root` is the trace file itself. Everything is decoded by `trace_json.read_traces`;
this module maps the columns onto the model:

tracks    one per (pid, tid). kind: "device" for GPU tracks (process label `GPU n`, or any
          kernel/memcpy/memset/gpu_user_annotation slice on it; device_id = label digits or
          the numeric pid), "counter" for tracks with only counter samples, "other" for the
          `Traces`/`Spans` pseudo processes, else "host".
slices / flows / counters
          as decoded (ac2g, async/launch, fwdbwd, forward_backward flows kept as they are).
          Slices carry one extra column `correlation` (Int64; set on runtime and device
          events) so `analysis.gpu_breakdown` can link launches to device events without
          reading the args side file.
kernels   one row per device event: lowercased cat `kernel` -> core_type/type "kernel";
          `gpu_memcpy`/`memcpy` -> "memcpy"; `gpu_memset`/`memset` -> "memset". Memcpy and
          memset are rows too (torch-tb-profiler's kernel view lists only kernels; filter on
          core_type == "kernel" for that view). stream_id = args.stream (else the tid
          digits), device_id = args.device (else pid). Step left NA (analysis assigns it).
          Extra columns: `correlation` (Int64) and `comm` (bool: kernel launched by an
          NCCL/Gloo collective op, matched on External id like torch-tb-profiler).
operators one row per operator call as torch-tb-profiler 0.4.3 counts them (docs/exactness.md
          has the definitions and the deliberate differences): a tree per thread of the
          cpu_op/operator/python slices and the ProfilerStep/collective/DataLoader user
          annotations (other user annotations are no nodes); a range ending after its
          parent is dropped; a node whose only child is a same-name op absorbs it (one
          call). Listed: op nodes except ProfilerStep, DataLoader, `Optimizer.*` and
          (Distributed)DataParallel.forward.
          input_shapes: `Input Dims` rendered as JSON text, e.g. "[[8, 3], [64]]" (the same
          text as Python's str() of the list for integer dims; "" when absent).
          call_stack: `Call stack` frames split on ";" and joined with "\\n".
          host_total_ns = dur; host_self_ns = dur - children's dur - dur of the runtime
          calls (OP_RUNTIME_CATS) whose External id is the op's (the first node with it);
          device_self_ns = device events (kernel/memcpy/memset) with those runtime calls'
          correlation ids; device_total_ns adds the children's device totals.
memory_records
          `[memory]` instants: component "PyTorch", device "GPU:{id}" (Device Type 1) or
          "CPU" (0), allocated/reserved = Total Allocated/Total Reserved in MB. Traces before
          ~torch 1.10 carry only `Bytes`: allocated_mb is then the running sum of Bytes per
          device from the start of the trace (relative, not absolute) and reserved NaN.
memory_allocations
          positive `Bytes` paired with the next negative `Bytes` on the same (device, Addr);
          name = innermost operator enclosing the allocation on its thread ("" if none);
          release_ns = -1 when not freed inside the trace. Empty without `Addr`.
steps     left empty: `analysis.gpu_breakdown.step_breakdown` computes them.
meta      producer "kineto", device "gpu" if there are device events or deviceProperties
          else "cpu", rank/world_size/distributed from distributedInfo, device_properties
          (deviceProperties), base_time_ns. Timestamps of traces with `baseTimeNanoseconds` (kineto >= 2024-05)
          are made absolute (epoch ns) by adding it.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from ..model import Profile, ProfileMeta
from ..span_source import SpanSource
from .context import ReadContext, read_trace, run_steps
from .trace_json import TraceTables

DEVICE_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy",
               "gpu_memset": "memset", "memset": "memset"}
RUNTIME_CATS = {"cuda_runtime", "runtime", "mtia_runtime", "xpu_runtime", "privateuse1_runtime",
                "glow_runtime", "cuda_driver"}
OP_CATS = {"cpu_op", "operator"}
TREE_CATS = OP_CATS | {"user_annotation", "python"}
NCCL_OPS = {"nccl:broadcast", "nccl:reduce", "nccl:all_reduce", "nccl:all_gather",
            "nccl:reduce_scatter"}
# Launch calls whose time torch-tb-profiler subtracts from the launching op's self time
# (0.4.3 knows `runtime`; `cuda_runtime` is its PyTorch 2.x name). Driver calls
# (`cuda_driver`) run inside runtime calls and are not subtracted again.
OP_RUNTIME_CATS = {"runtime", "cuda_runtime", "mtia_runtime", "xpu_runtime",
                   "privateuse1_runtime"}
EXCLUDED_OPS = {"DataParallel.forward", "DistributedDataParallel.forward"}
GLOO_OPS = {"gloo:broadcast", "gloo:reduce", "gloo:all_reduce", "gloo:all_gather",
            "gloo:reduce_scatter"}

EXTRACT = {
    "a_corr": "correlation",
    "a_ext": "External id",
    "a_ext2": "external id",
    "a_device": "device",
    "a_stream": "stream",
    "a_dims": "Input Dims",
    "a_stack": "Call stack",
    "a_dev_type": "Device Type",
    "a_dev_id": "Device Id",
    "a_addr": "Addr",
    "a_bytes": "Bytes",
    "a_total_alloc": "Total Allocated",
    "a_total_res": "Total Reserved",
}
_WANT_CATS = set(DEVICE_CATS) | RUNTIME_CATS | TREE_CATS


def _extract_for(ph: str, cat: str) -> bool:
    if ph == "X":
        return cat.lower() in _WANT_CATS
    return ph in ("i", "I")


class _Ctx(ReadContext):
    def __init__(self, span: SpanSource, work_dir: str | None):
        super().__init__(span, work_dir, Profile(meta=ProfileMeta(producer="kineto")))
        # From the trace step, for the later steps: the decoded trace and, per slice, its
        # lowercased cat, name, device event kind ("" for host events), whether it is a
        # runtime call, and its correlation / External id.
        self.trace: TraceTables | None = None
        self.cat_l = np.zeros(0, object)
        self.names = np.zeros(0, object)
        self.dev_kind = np.zeros(0, object)
        self.is_rt = np.zeros(0, bool)
        self.corr = pd.array([], dtype="Int64")
        self.ext = pd.array([], dtype="Int64")


def read(span: SpanSource, work_dir: str | None = None) -> Profile:
    return run_steps(_Ctx(span, work_dir), [
        _read_trace, _read_kernels, _read_operators, _read_memory, _read_meta])


def _int_or_none(v):
    """An id (device, stream, pid) as a number or in text ("stream 7"); None when there is
    none or it is beyond int64 (damage such as 1e300: no such device)."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, np.integer)):
        i = int(v)
    elif isinstance(v, float):
        i = int(v) if np.isfinite(v) else None
    elif isinstance(v, str):
        m = re.search(r"-?\d+", v)
        i = int(m.group()) if m else None
    else:
        return None
    return i if i is not None and -(1 << 63) <= i < (1 << 63) else None


def _int_col(values) -> pd.arrays.IntegerArray:
    if isinstance(values, pd.Series) and values.dtype.kind in "iuf":
        # Numeric column (the usual case): vectorised, same result as the per-value path.
        arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
        ok = np.isfinite(arr) & (arr >= -2.0 ** 63) & (arr < 2.0 ** 63)
        out = pd.array(np.where(ok, arr, 0).astype(np.int64), dtype="Int64")
        out[~ok] = pd.NA
        return out
    ints = (_int_or_none(v) for v in values)
    # An id beyond int64 (a damaged number) is missing, not an overflow of the whole column.
    return pd.array([i if i is not None and -2 ** 63 <= i < 2 ** 63 else None for i in ints],
                    dtype="Int64")


def _external_ids(slices: pd.DataFrame) -> pd.arrays.IntegerArray:
    """`External id` (ops, newer runtimes), else `external id` (2021-era runtimes/kernels)."""
    upper, lower = _int_col(slices["a_ext"]), _int_col(slices["a_ext2"])
    return pd.array(pd.Series(upper).fillna(pd.Series(lower)), dtype="Int64")


def _read_trace(ctx: _Ctx) -> None:
    tt = read_trace(ctx, [ctx.span.root], extract_args=EXTRACT, extract_for=_extract_for)
    if tt is None:
        return
    ctx.trace = tt
    base = (tt.metadata or {}).get("baseTimeNanoseconds")
    base_ns = int(base) if isinstance(base, (int, float)) and base else 0
    slices = tt.slices
    for df in (slices, tt.instants):  # slices only from B/E pairs carry no extracted args
        for col in EXTRACT:
            if col not in df.columns:
                df[col] = None
    if base_ns:
        for df, col in ((slices, "start_ns"), (tt.instants, "ts_ns"), (tt.flows, "ts_ns"),
                        (tt.counters, "ts_ns")):
            if len(df):
                df[col] = df[col].to_numpy(np.int64) + base_ns
        ctx.profile.meta.base_time_ns = base_ns

    n = len(slices)
    if n:
        ctx.cat_l = slices["cat"].astype("string").fillna("").str.lower().to_numpy(dtype=object)
        ctx.names = slices["name"].astype("string").fillna("").to_numpy(dtype=object)
        ctx.dev_kind = np.array([DEVICE_CATS.get(c, "") for c in ctx.cat_l], dtype=object)
        ctx.is_rt = np.array([c in RUNTIME_CATS for c in ctx.cat_l], dtype=bool)
        ctx.corr = _int_col(slices["a_corr"])
        ctx.ext = _external_ids(slices)
    is_dev = ctx.dev_kind != ""
    corr_keep = ctx.corr.copy()
    corr_keep[~(is_dev | ctx.is_rt)] = pd.NA
    out_slices = slices[["track_id", "start_ns", "dur_ns", "depth", "name", "cat",
                         "args_row"]].copy()
    out_slices["correlation"] = corr_keep
    ctx.set_trace_tables(_tracks(ctx, is_dev), out_slices, tt.flows, tt.counters,
                         keep_extra_slices=True)


def _tracks(ctx: _Ctx, is_dev: np.ndarray) -> pd.DataFrame:
    tt = ctx.trace
    slices, counters = tt.slices, tt.counters
    n = len(slices)
    tracks = tt.tracks.copy()
    labels = tracks["process_labels"].astype(str)
    dev_tracks = set(slices.loc[is_dev | (ctx.cat_l == "gpu_user_annotation"),
                                "track_id"].unique()) if n else set()
    slice_tracks = set(slices["track_id"].unique()) if n else set()
    counter_tracks = set(counters["track_id"].unique()) if len(counters) else set()
    kinds, dev_ids = [], []
    for tid_, pid, lab in zip(tracks["track_id"], tracks["pid"], labels):
        m = re.match(r"^\s*GPU\s*(\d+)", lab)
        if m or tid_ in dev_tracks:
            kinds.append("device")
            dev_ids.append(_int_or_none(m.group(1) if m else pid))
        elif tid_ in counter_tracks and tid_ not in slice_tracks:
            kinds.append("counter")
            dev_ids.append(None)
        elif not str(pid).lstrip("-").isdigit():
            kinds.append("other")
            dev_ids.append(None)
        else:
            kinds.append("host")
            dev_ids.append(None)
    tracks["kind"] = kinds
    tracks["device_id"] = pd.array(dev_ids, dtype="Int64")
    return tracks


def _read_kernels(ctx: _Ctx) -> None:
    """One row per device event (kernel, memcpy, memset)."""
    tt = ctx.trace
    if tt is None:
        return
    slices = tt.slices
    n = len(slices)
    names, ext = ctx.names, ctx.ext
    comm_ext = set()
    if n:
        comm_mask = np.array([nm in NCCL_OPS or nm in GLOO_OPS for nm in names], dtype=bool) & \
            np.isin(ctx.cat_l, list(TREE_CATS))
        comm_ext = {int(x) for x in ext[comm_mask] if x is not pd.NA}
    kidx = np.nonzero(ctx.dev_kind != "")[0]
    track_pid = dict(zip(tt.tracks["track_id"], tt.tracks["pid"]))
    track_tid = dict(zip(tt.tracks["track_id"], tt.tracks["tid"]))
    k = slices.iloc[kidx]
    stream = [_int_or_none(s) if s is not None else _int_or_none(track_tid.get(t))
              for s, t in zip(k["a_stream"], k["track_id"])]
    device = [_int_or_none(d) if d is not None else _int_or_none(track_pid.get(t))
              for d, t in zip(k["a_device"], k["track_id"])]
    kext = ext[kidx] if n else ext
    kernels = pd.DataFrame({
        "name": k["name"].astype("string").fillna("").to_numpy(dtype=object),
        "type": ctx.dev_kind[kidx],
        "core_type": ctx.dev_kind[kidx],
        "start_ns": k["start_ns"].to_numpy(np.int64),
        "dur_ns": k["dur_ns"].to_numpy(np.int64),
        "device_id": pd.array(device, dtype="Int64"),
        "stream_id": pd.array(stream, dtype="Int64"),
        "correlation": ctx.corr[kidx] if n else ctx.corr,
        "comm": np.array([(x is not pd.NA and int(x) in comm_ext) for x in kext], dtype=bool)
        if (comm_ext and len(kidx)) else np.zeros(len(kidx), dtype=bool),
    })
    kernels = kernels.sort_values("start_ns", kind="stable").reset_index(drop=True)
    ctx.profile.set("kernels", kernels, keep_extra=True)
    devs = sorted({d for d in device if d is not None})
    if devs:
        ctx.profile.meta.device_id = int(devs[0])  # the first GPU the kernels ran on


def _read_operators(ctx: _Ctx) -> None:
    if ctx.trace is not None:
        _operators(ctx.profile, ctx.trace.slices, ctx.cat_l, ctx.names, ctx.dev_kind != "",
                   ctx.corr, ctx.ext)


def _read_memory(ctx: _Ctx) -> None:
    if ctx.trace is not None:
        _memory(ctx.profile, ctx.trace.instants, ctx.trace.slices, ctx.cat_l, ctx.names)


def _read_meta(ctx: _Ctx) -> None:
    """Device kind, rank / world size, devices and versions (trace metadata)."""
    meta = ctx.profile.meta
    if ctx.trace is None:
        meta.device = "cpu"
        return
    tmeta = ctx.trace.metadata or {}
    props = tmeta.get("deviceProperties")
    dist = tmeta.get("distributedInfo")
    has_device_events = bool((ctx.dev_kind != "").any())
    meta.device = "gpu" if (has_device_events or (isinstance(props, list) and props)) else "cpu"
    if isinstance(props, list):
        meta.device_properties = props
    if isinstance(dist, dict):
        meta.distributed = dist
        if _int_or_none(dist.get("rank")) is not None:
            meta.rank = _int_or_none(dist.get("rank"))
        if _int_or_none(dist.get("world_size")) is not None:
            meta.world_size = _int_or_none(dist.get("world_size"))
    versions = {}
    if tmeta.get("schemaVersion") is not None:
        versions["schema"] = tmeta.get("schemaVersion")
    if tmeta.get("Framework"):
        versions["framework"] = tmeta.get("Framework")
    meta.versions = versions


def _shapes_text(v) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    try:
        return json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(v)


def _stack_text(v) -> str:
    if not v or not isinstance(v, str):
        return ""
    return "\n".join(f.strip() for f in v.split(";") if f.strip())


def _is_dataloader(name: str) -> bool:
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) or \
        name.startswith("enumerate(DataPipe)#")


def _is_tree_node(cat: str, name: str) -> bool:
    """A node of torch-tb-profiler's operator tree (see module docstring)."""
    if cat in OP_CATS or cat == "python":
        return True
    return cat == "user_annotation" and (name.startswith("ProfilerStep#") or name in NCCL_OPS
                                         or name in GLOO_OPS or _is_dataloader(name))


def _is_listed_op(cat: str, name: str) -> bool:
    """An operator of the operator table (torch-tb-profiler's `is_operator_node`)."""
    return cat in OP_CATS and not name.startswith("ProfilerStep#") and \
        not _is_dataloader(name) and not name.startswith("Optimizer.") and \
        name not in EXCLUDED_OPS


def _operators(profile, slices, cat_l, names, is_dev, corr, ext) -> None:
    n = len(slices)
    if n == 0:
        return
    # Per-name tests only on the few user annotations; the rest is decided by the category.
    is_node = np.isin(cat_l, list(OP_CATS | {"python"}))
    ua = np.nonzero(cat_l == "user_annotation")[0]
    is_node[ua] = [_is_tree_node("user_annotation", nm) for nm in names[ua]]
    if not (is_node & np.isin(cat_l, list(OP_CATS))).any():
        return
    missing = np.iinfo(np.int64).min
    ext = ext.to_numpy(dtype=np.int64, na_value=missing).tolist()
    corr_l = corr.to_numpy(dtype=np.int64, na_value=missing).tolist()
    start_all = slices["start_ns"].to_numpy(np.int64)
    dur_all = slices["dur_ns"].to_numpy(np.int64)
    dur_l = dur_all.tolist()
    # Device time per correlation id, given to the (last) runtime call with that id.
    dev_dur: dict[int, int] = {}
    for j in np.nonzero(is_dev)[0].tolist():
        c = corr_l[j]
        if c != missing:
            dev_dur[c] = dev_dur.get(c, 0) + dur_l[j]
    is_launch = np.isin(cat_l, list(OP_RUNTIME_CATS))
    rt_idx = np.nonzero(is_launch)[0]
    rt_idx = rt_idx[np.lexsort((slices["args_row"].to_numpy()[rt_idx], start_all[rt_idx]))]
    rt_list = rt_idx.tolist()
    last_rt_of_corr = {corr_l[j]: j for j in rt_list if corr_l[j] != missing}
    rt_by_ext: dict = {}
    for j in rt_list:
        rt_by_ext.setdefault(ext[j], []).append(j)

    def rt_dev(j: int) -> int:
        c = corr_l[j]
        if c == missing or last_rt_of_corr.get(c) != j:
            return 0
        return dev_dur.get(c, 0)

    sel = np.nonzero(is_node)[0]
    track = slices["track_id"].to_numpy()[sel]
    start = start_all[sel]
    end = start + dur_all[sel]
    file_order = slices["args_row"].to_numpy()[sel]
    # Launches go to the first node (in time order) with their External id, before the
    # tree is built, as in torch-tb-profiler (a node later dropped still takes them).
    runtimes: list[list[int]] = [[] for _ in range(len(sel))]
    sel_l = sel.tolist()
    for i in np.lexsort((file_order, start)).tolist():
        got = rt_by_ext.pop(ext[sel_l[i]], None)
        if got:
            runtimes[i] = got
    # One tree per track: nodes by (start, longer first, file order); a node that starts
    # inside the open node but ends after it is dropped (torch-tb-profiler logs and skips it).
    order = np.lexsort((file_order, -end, start, track))
    children: list[list[int]] = [[] for _ in range(len(sel))]
    roots: list[int] = []
    kept = [False] * len(sel)
    sl, el, tl = start.tolist(), end.tolist(), track.tolist()
    stack: list[int] = []
    cur = None
    for i in order.tolist():
        if tl[i] != cur:
            stack, cur = [], tl[i]
        while stack and not sl[i] < el[stack[-1]]:
            stack.pop()
        if stack and el[i] > el[stack[-1]]:
            continue
        (children[stack[-1]] if stack else roots).append(i)
        stack.append(i)
        kept[i] = True
    # Consecutive calls of the same operator (a node whose only child is an op of the same
    # name) are one call: the child is merged into its parent, which takes the child's
    # children and launches (torch.autograd.profiler's _remove_dup_nodes).
    node_cat = cat_l[sel]
    node_name = names[sel]
    is_opcat = (np.isin(node_cat, list(OP_CATS)) & ~np.array(
        [nm.startswith("ProfilerStep#") for nm in node_name], dtype=bool)).tolist()
    node_name_l = node_name.tolist()
    todo = list(roots)
    while todo:
        i = todo.pop()
        while len(children[i]) == 1:
            c = children[i][0]
            if not (is_opcat[i] and is_opcat[c] and node_name_l[i] == node_name_l[c]):
                break
            children[i], runtimes[i] = children[c], runtimes[c]
            kept[c] = False
        todo.extend(children[i])
    # Times bottom-up: children always follow their parent in `order`.
    self_host = [0] * len(sel)
    dev_self = [0] * len(sel)
    dev_total = [0] * len(sel)
    for i in order[::-1].tolist():
        if not kept[i]:
            continue
        h = el[i] - sl[i]
        d_self = 0
        for j in runtimes[i]:
            h -= dur_l[j]
            d_self += rt_dev(j)
        d_total = d_self
        for c in children[i]:
            h -= el[c] - sl[c]
            d_total += dev_total[c]
        self_host[i], dev_self[i], dev_total[i] = h, d_self, d_total
    listed = [k and _is_listed_op(c, nm) for k, c, nm in zip(kept, node_cat, node_name_l)]
    pos = np.nonzero(np.array(listed, dtype=bool))[0]
    self_host, dev_self, dev_total = (np.array(a, dtype=np.int64)
                                      for a in (self_host, dev_self, dev_total))
    rows = sel[pos]
    ops = pd.DataFrame({
        "name": names[rows],
        "input_shapes": [_shapes_text(v) for v in slices["a_dims"].to_numpy(dtype=object)[rows]],
        "call_stack": [_stack_text(v) for v in slices["a_stack"].to_numpy(dtype=object)[rows]],
        "start_ns": start[pos],
        "host_total_ns": end[pos] - start[pos],
        "host_self_ns": self_host[pos],
        "device_self_ns": dev_self[pos],
        "device_total_ns": dev_total[pos],
        "_track": track[pos],
    })
    ops = ops.sort_values(["start_ns", "_track"], kind="stable").drop(columns="_track")
    profile.set("operators", ops)


def _memory(profile, instants, slices, cat_l, names) -> None:
    if len(instants) == 0:
        return
    mem = instants[instants["name"].astype("string") == "[memory]"]
    if len(mem) == 0:
        return
    ts = mem["ts_ns"].to_numpy(np.int64)
    dtype = [_int_or_none(v) for v in mem["a_dev_type"]]
    did = [_int_or_none(v) for v in mem["a_dev_id"]]
    device = np.array(["GPU:%d" % (d if d is not None and d >= 0 else 0) if t == 1 else
                       ("CPU" if t == 0 else f"DEVICE{t}:{d}") for t, d in zip(dtype, did)],
                      dtype=object)
    nbytes = np.array([float(b) if isinstance(b, (int, float)) else 0.0 for b in mem["a_bytes"]])
    ta = np.array([float(v) if isinstance(v, (int, float)) else np.nan for v in mem["a_total_alloc"]])
    tr = np.array([float(v) if isinstance(v, (int, float)) else np.nan for v in mem["a_total_res"]])
    order = np.argsort(ts, kind="stable")
    ts, device, nbytes, ta, tr = ts[order], device[order], nbytes[order], ta[order], tr[order]
    addr = np.array(mem["a_addr"].to_numpy(dtype=object)[order])
    tracks_of = mem["track_id"].to_numpy()[order]
    MB = float(1 << 20)
    if np.isnan(ta).all():
        # Old traces: running sum of Bytes per device (relative to the trace start).
        alloc = np.zeros(len(ts))
        run: dict[str, float] = {}
        for i, (d, b) in enumerate(zip(device, nbytes)):
            run[d] = run.get(d, 0.0) + b
            alloc[i] = run[d]
        allocated_mb = alloc / MB
        profile.meta.memory_totals = "running_sum_of_bytes"
    else:
        allocated_mb = ta / MB
    records = pd.DataFrame({"component": "PyTorch", "device": device, "ts_ns": ts,
                            "allocated_mb": allocated_mb, "reserved_mb": tr / MB})
    profile.set("memory_records", records)

    # Allocations: pair +Bytes / -Bytes on the same (device, Addr).
    if all(a is None for a in addr):
        return
    open_blocks: dict[tuple, int] = {}
    rel = np.full(len(ts), -1, np.int64)
    is_alloc = np.zeros(len(ts), bool)
    for i in range(len(ts)):
        a = addr[i]
        if a is None:
            continue
        key = (device[i], a)
        if nbytes[i] > 0:
            open_blocks[key] = i
            is_alloc[i] = True
        elif nbytes[i] < 0:
            j = open_blocks.pop(key, None)
            if j is not None:
                rel[j] = ts[i]
    idx = np.nonzero(is_alloc)[0]
    if len(idx) == 0:
        return
    op_names = _enclosing_ops(slices, cat_l, names, tracks_of[idx], ts[idx])
    release = rel[idx]
    allocs = pd.DataFrame({
        "name": op_names,
        "device": device[idx],
        "size_kb": nbytes[idx] / 1024.0,
        "alloc_ns": ts[idx],
        "release_ns": release,
        "duration_ns": np.where(release >= 0, release - ts[idx], -1),
        "alloc_total_allocated_mb": ta[idx] / MB,
        "alloc_total_reserved_mb": tr[idx] / MB,
    })
    profile.set("memory_allocations", allocs)


def _enclosing_ops(slices, cat_l, names, tracks, times) -> list[str]:
    """Innermost cpu_op slice on the same track covering each time ("" if none)."""
    out = [""] * len(times)
    is_op = np.isin(cat_l, list(OP_CATS))
    if not is_op.any() or len(times) == 0:
        return out
    op = slices.loc[is_op, ["track_id", "start_ns", "dur_ns", "depth"]]
    op_names = names[is_op]
    by_track: dict = {}
    for t in np.unique(tracks):
        mk = op["track_id"].to_numpy() == t
        if not mk.any():
            continue
        s = op["start_ns"].to_numpy(np.int64)[mk]
        e = s + op["dur_ns"].to_numpy(np.int64)[mk]
        o = np.lexsort((-(e - s), s))
        by_track[t] = (s[o], e[o], op_names[mk][o])
    # Sweep per track with a stack of open ops.
    order = np.lexsort((times, tracks))
    cur_t, j, stack = None, 0, []
    for q in order:
        t, x = tracks[q], times[q]
        if t != cur_t:
            cur_t, j, stack = t, 0, []
        data = by_track.get(t)
        if data is None:
            continue
        s, e, nm = data
        while j < len(s) and s[j] <= x:
            while stack and e[stack[-1]] <= s[j]:
                stack.pop()
            stack.append(j)
            j += 1
        while stack and e[stack[-1]] < x:
            stack.pop()
        if stack:
            out[q] = nm[stack[-1]]
    return out
