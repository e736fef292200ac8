"""The host dispatch path: how framework ops reach the device, and whether the device waits
for the host.

torch_npu / MindSpore (the task queue, TASK_QUEUE_ENABLE): each framework op is enqueued on
the main thread (`Enqueue@<op>`), dequeued on the task-queue thread (`Dequeue@<op>`), launched
through CANN (`AscendCL@aclnn*` / `AscendCL@aclop*`, `Node@launch`) and runs on a device
stream. The producer links the steps with flows (docs/formats.md 2.2.4):
`enqueue_to_dequeue` (cat `async_task_queue`) from the Enqueue to its Dequeue, and
`HostToDevice<id>` (cat `HostToDevice`) from the CANN launch to the device task. Without a
task queue the launching op is the deepest host op enclosing the launch on the same thread.
kineto (GPU): the CPU op enclosing a `cudaLaunchKernel` / `cudaLaunchKernelExC` runtime call,
linked to its kernel by the `correlation` id both carry.

Definitions (all times ns in the tables, µs in `document`):
- call: one op dispatch (a paired Enqueue/Dequeue, else one launching host op instance);
- queue wait: Dequeue start - Enqueue end (time the op sat in the queue);
- launch: one device task handed to the device; `launch_ns` is the `Node@launch` (or CUDA
  runtime call) duration; launch delay = device task start - launch start (the HostToDevice
  flow's two ends; kineto: kernel start - runtime call start);
- path: `aclop` when an `AscendCL@aclop*` call runs in the call's window, else `aclnn` when an
  `AscendCL@aclnn*` call does, `cuda` for kineto, else null; compile: `AscendCL@*Compile*`
  calls in the window;
- dequeue gap: the idle time of the task-queue thread between consecutive Dequeue events of
  one step (start of one - the latest end before it), counted when over `gap_ns`;
- device idle: the step window minus the union of every device task (kernels table);
  dispatch-bound idle: the part of each device idle gap before the host launched the task
  that ends the gap (the device had nothing because the host had not dispatched it yet).

Everything is vectorized (numpy / pandas merge_asof); `document` is computed once per cache
entry after the timeline stage (`precompute`) and kept as a derived document (`STORE`).
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..cache import DerivedStore
from ..lazy import pd
from ..model import Profile
from ..step_windows import step_windows
from . import name_text
from .derive import assign_steps
from .tables import key_codes

GAP_NS = 1_000_000            # the dequeue gaps the view counts: over 1 ms
WORST_GAPS = 10               # how many of the largest gaps `document` lists
CUDA_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                 "cuLaunchKernelEx")
# Bump when the document changes shape or meaning (it is kept per cache entry).
VERSION = 1
STORE = DerivedStore("dispatch", 512)


# --------------------------------------------------------------------------- helpers

def _codes_labels(series: pd.Series) -> tuple[np.ndarray, object]:
    """(codes, names as an Arrow string array) of a name column; a categorical's names are
    converted once and shared by the row subsets of the same table (they keep its
    categories, analysis/name_text.py), and tested by Arrow's string kernels, not a Python
    loop. A missing name reads as ""."""
    import pyarrow as pa

    if isinstance(series.dtype, pd.CategoricalDtype):
        return name_text.codes_text(series)
    codes, labels = key_codes(series)
    return codes, pa.array([str(x) for x in labels], type=pa.string())


def _name_mask(series: pd.Series, prefix=None, contains: str | None = None,
               among=None) -> np.ndarray:
    """Row mask of a name column: names starting with `prefix` (str or tuple), containing
    `contains` (case-insensitive) or in `among`; tested once per distinct name."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(series) == 0:
        return np.zeros(0, dtype=bool)
    codes, labels = _codes_labels(series)
    if prefix is not None:
        hit = np.zeros(len(labels), dtype=bool)
        for p in (prefix if isinstance(prefix, tuple) else (prefix,)):
            hit |= pc.starts_with(labels, p).to_numpy(zero_copy_only=False)
    elif contains is not None:
        hit = pc.match_substring(labels, contains, ignore_case=True).to_numpy(zero_copy_only=False)
    else:
        hit = pc.is_in(labels, value_set=pa.array(list(among), type=pa.string())).to_numpy(
            zero_copy_only=False)
    return np.asarray(hit, dtype=bool)[codes]


def _labels(series: pd.Series, rename=None) -> np.ndarray:
    """The names of a name column as text (`rename` applied once per distinct name used)."""
    if len(series) == 0:
        return np.zeros(0, dtype=object)
    codes, labels = _codes_labels(series)
    used, inv = np.unique(codes, return_inverse=True)
    text = np.asarray(labels.take(used).to_pylist(), dtype=object)
    if rename is not None:
        text = np.array([rename(str(x)) for x in text], dtype=object)
    return text[inv]


def _bind(track: np.ndarray, ts: np.ndarray, cand: pd.DataFrame) -> np.ndarray:
    """Row (position in `cand`) of the slice on the same track that starts at or before each
    point and has not ended by it, else -1. `cand` has track_id, start_ns, end_ns and must not
    nest on one track (Enqueue, Dequeue, Node@launch events never do)."""
    out = np.full(len(ts), -1, dtype=np.int64)
    if len(ts) == 0 or len(cand) == 0:
        return out
    left = pd.DataFrame({"track_id": np.asarray(track, np.int64), "ts": np.asarray(ts, np.int64),
                         "i": np.arange(len(ts))}).sort_values("ts", kind="stable")
    right = pd.DataFrame({"track_id": cand["track_id"].to_numpy(np.int64),
                          "ts": cand["start_ns"].to_numpy(np.int64),
                          "end": cand["end_ns"].to_numpy(np.int64),
                          "j": np.arange(len(cand))}).sort_values("ts", kind="stable")
    m = pd.merge_asof(left, right, on="ts", by="track_id", direction="backward")
    ok = m["j"].notna().to_numpy() & (m["ts"].to_numpy() <= m["end"].fillna(-1).to_numpy())
    out[m["i"].to_numpy()[ok]] = m["j"].to_numpy()[ok].astype(np.int64)
    return out


def _enclosing(track: np.ndarray, ts: np.ndarray, cand: pd.DataFrame) -> np.ndarray:
    """Like `_bind` for slices that nest (host ops): the deepest enclosing one wins."""
    out = np.full(len(ts), -1, dtype=np.int64)
    if len(cand) == 0:
        return out
    depth = cand["depth"].to_numpy()
    pos = np.arange(len(cand))
    for d in np.unique(depth):  # a few dozen levels at most, each one vectorized
        sel = depth == d
        hit = _bind(track, ts, cand[sel])
        found = hit >= 0
        out[found] = pos[sel][hit[found]]
    return out


def _windows(profile: Profile) -> pd.DataFrame:
    """(step, start_ns, end_ns) of the profile's steps: the steps table's own windows, else
    the producer's / ProfilerStep windows."""
    if profile.has("steps"):
        st = profile.table("steps")
        w = st.loc[st["end_ns"] > st["start_ns"], ["step", "start_ns", "end_ns"]]
        if len(w):
            return w.sort_values("start_ns").reset_index(drop=True)
    return step_windows(profile).sort_values("start_ns").reset_index(drop=True)


def _steps_of(ts: np.ndarray, windows: pd.DataFrame) -> np.ndarray:
    """Step of each time as float (NaN outside every step); 0.0 everywhere without steps."""
    if len(windows) == 0:
        return np.zeros(len(ts))
    return assign_steps(np.asarray(ts, np.int64), windows).to_numpy(dtype=np.float64,
                                                                     na_value=np.nan)


def _first_rows(codes: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """Rows selected by `sel` that are the first of their code among them, in row order."""
    idx = np.flatnonzero(sel)
    _, first = np.unique(codes[idx], return_index=True)
    return idx[np.sort(first)]


def _flow_pairs(flows: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    """(s_track, s_ts, f_track, f_ts) of the flows selected by `mask`, paired by id: the
    first `s` and the first `f` endpoint of each id, in the order of the `s` endpoints."""
    import pyarrow.compute as pc

    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return pd.DataFrame({"s_track": [], "s_ts": [], "f_track": [], "f_ts": []})
    # Flow ids as integer codes (a missing id is one more id, as pandas pairs them).
    fid, _ = pd.factorize(flows["flow_id"][mask], use_na_sentinel=True)
    fid = fid.astype(np.int64)
    p_codes, p_text = _codes_labels(flows["phase"][mask])
    is_s = np.asarray(pc.equal(p_text, "s").to_numpy(zero_copy_only=False), bool)[p_codes]
    is_f = np.asarray(pc.equal(p_text, "f").to_numpy(zero_copy_only=False), bool)[p_codes]
    s_rows, f_rows = _first_rows(fid, is_s), _first_rows(fid, is_f)
    f_order = np.argsort(fid[f_rows], kind="stable")
    f_sorted = fid[f_rows][f_order]
    pos = np.searchsorted(f_sorted, fid[s_rows])
    pos_c = np.minimum(pos, max(len(f_sorted) - 1, 0))
    hit = (pos < len(f_sorted)) & (f_sorted[pos_c] == fid[s_rows]) if len(f_sorted) else \
        np.zeros(len(s_rows), dtype=bool)
    s_rows, f_rows = s_rows[hit], f_rows[f_order[pos_c[hit]]]
    track = flows["track_id"].to_numpy()[mask].astype(np.int64)
    ts = flows["ts_ns"].to_numpy()[mask].astype(np.int64)
    return pd.DataFrame({"s_track": track[s_rows], "s_ts": ts[s_rows],
                         "f_track": track[f_rows], "f_ts": ts[f_rows]})


def _rows_of(values: np.ndarray, keys: np.ndarray) -> list[np.ndarray]:
    """For each key, the rows (ascending) whose value equals it (`values == key`): one
    stable sort instead of a full-length comparison per key."""
    try:
        k = np.asarray(keys, dtype=np.float64)
    except (TypeError, ValueError):  # keys numpy cannot compare as numbers
        return [np.flatnonzero(values == key) for key in keys]
    order = np.argsort(values, kind="stable")
    sv = values[order]
    lo, hi = np.searchsorted(sv, k, side="left"), np.searchsorted(sv, k, side="right")
    return [order[a:b] if key == key else np.zeros(0, np.int64)  # NaN equals nothing
            for a, b, key in zip(lo.tolist(), hi.tolist(), k.tolist())]


def _with_end(df: pd.DataFrame) -> pd.DataFrame:
    out = df[["track_id", "start_ns", "dur_ns", "depth", "name"]].reset_index(drop=True)
    out["end_ns"] = out["start_ns"].to_numpy(np.int64) + out["dur_ns"].to_numpy(np.int64)
    return out


def _pct(v: np.ndarray, q: float) -> float:
    v = v[~np.isnan(v)]
    return float(np.percentile(v, q)) if len(v) else float("nan")


def _p50_p95(v: np.ndarray) -> tuple[float, float]:
    """(`_pct(v, 50)`, `_pct(v, 95)`) in one pass (numpy computes each quantile of a list
    as it computes it alone)."""
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return float("nan"), float("nan")
    a, b = np.percentile(v, [50, 95])
    return float(a), float(b)


# --------------------------------------------------------------------------- the path

# Absolute times stay int64 (a float64 loses the ns digits of epoch times); durations are
# float64 with NaN where unknown. `has_enqueue` tells whether enqueue_start_ns is set.
_CALL_DTYPES = {"name": object, "tid": object, "win_start_ns": np.int64, "win_end_ns": np.int64,
                "has_enqueue": bool, "enqueue_start_ns": np.int64, "enqueue_ns": np.float64,
                "queue_wait_ns": np.float64}


def _empty_calls() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in _CALL_DTYPES.items()})


def _empty_launches() -> pd.DataFrame:
    return pd.DataFrame({"call": np.zeros(0, np.int64), "tid": np.zeros(0, dtype=object),
                         "start_ns": np.zeros(0, np.int64), "launch_ns": np.zeros(0),
                         "device_start_ns": np.zeros(0, np.int64), "delay_ns": np.zeros(0)})


def path_tables(profile: Profile) -> dict:
    """The dispatch path as tables: `calls` (one row per op call), `launches` (one row per
    device task launched, `call` = its row in calls or -1), `dequeues` (start_ns, end_ns,
    name of every Dequeue), `apis` (the CANN calls that decide the path), `kind`."""
    slices, tracks, flows = (profile.table(t) for t in ("slices", "tracks", "flows"))
    out = {"calls": _empty_calls(), "launches": _empty_launches(),
           "dequeues": pd.DataFrame({"start_ns": np.zeros(0, np.int64),
                                     "end_ns": np.zeros(0, np.int64), "name": []}),
           "kind": None, "paths": np.zeros(0, dtype=object), "compile_ns": np.zeros(0)}
    if len(slices) == 0 or len(tracks) == 0:
        return out
    ids = tracks["track_id"].to_numpy(np.int64)
    kind_by_track = pd.Series(tracks["kind"].astype(str).to_numpy(dtype=object), index=ids)
    tid_by_track = pd.Series(tracks["tid"].astype(str).to_numpy(dtype=object), index=ids)

    def tid_of(track_ids) -> np.ndarray:
        """Thread id (text) of each track id, "" for an unknown track."""
        return tid_by_track.reindex(np.asarray(track_ids, np.int64)).fillna("").to_numpy(
            dtype=object)

    s_track = slices["track_id"].to_numpy(np.int64)
    if kind_by_track.index.is_unique:
        # The kind of each slice through its track's position (a few tracks, millions of
        # slices): no per-slice text.
        pos = kind_by_track.index.get_indexer(s_track)
        kinds = kind_by_track.to_numpy(dtype=object)

        def kind_is(kind: str) -> np.ndarray:
            small = np.array([k == kind for k in kinds], dtype=bool)
            return np.where(pos >= 0, small[np.maximum(pos, 0)] if len(small) else False, False)
    else:
        s_kind = kind_by_track.reindex(s_track).fillna("").to_numpy(dtype=object)

        def kind_is(kind: str) -> np.ndarray:
            return s_kind == kind
    host = kind_is("host")
    if profile.meta.device == "gpu" or profile.meta.producer == "kineto":
        return _cuda_path(profile, slices, host, tid_of, out)
    return _npu_path(profile, slices, flows, host, kind_is("cann"), tid_of, out)


def _npu_path(profile, slices, flows, host, cann, tid_of, out) -> dict:
    names = slices["name"]
    enq = _with_end(slices[host & _name_mask(names, "Enqueue")])
    deq = _with_end(slices[host & _name_mask(names, "Dequeue")])
    deq_tid = tid_of(deq["track_id"])
    out["dequeues"] = pd.DataFrame({"start_ns": deq["start_ns"].to_numpy(np.int64),
                                    "end_ns": deq["end_ns"].to_numpy(np.int64),
                                    "name": _labels(deq["name"])})
    fl_h2d = _name_mask(flows["cat"], among=("HostToDevice",))
    fl_tq = _name_mask(flows["cat"], among=("async_task_queue",)) | \
        _name_mask(flows["name"], among=("enqueue_to_dequeue",))
    # Launches: the HostToDevice flows (older CANN: acl_to_npu), launch end -> device end.
    h2d = _flow_pairs(flows, fl_h2d | _name_mask(
        flows["name"], ("HostToDevice", "acl_to_npu")))
    nodes = _with_end(slices[cann & _name_mask(names, "Node@")])
    li = _bind(h2d["s_track"].to_numpy(), h2d["s_ts"].to_numpy(), nodes)
    launch_ns = np.where(li >= 0, nodes["dur_ns"].to_numpy(np.float64)[np.maximum(li, 0)]
                         if len(nodes) else np.nan, np.nan)
    l_tid = tid_of(h2d["s_track"])
    launches = pd.DataFrame({"tid": l_tid, "start_ns": h2d["s_ts"].to_numpy(np.int64),
                             "launch_ns": launch_ns,
                             "device_start_ns": h2d["f_ts"].to_numpy(np.int64),
                             "delay_ns": (h2d["f_ts"] - h2d["s_ts"]).to_numpy(np.float64)})
    if len(deq):
        out["kind"] = "task_queue"
        # Enqueue -> Dequeue by the producer's flows, else in queue order (one FIFO queue).
        tq = _flow_pairs(flows, fl_tq)
        if len(tq):
            ei = _bind(tq["s_track"].to_numpy(), tq["s_ts"].to_numpy(), enq)
            di = _bind(tq["f_track"].to_numpy(), tq["f_ts"].to_numpy(), deq)
            ok = (ei >= 0) & (di >= 0)
            ei, di = ei[ok], di[ok]
        else:
            n = min(len(enq), len(deq))
            ei = np.argsort(enq["start_ns"].to_numpy(), kind="stable")[:n]
            di = np.argsort(deq["start_ns"].to_numpy(), kind="stable")[:n]
        # Every Dequeue is a call (one without its Enqueue has no queue wait).
        has = np.zeros(len(deq), dtype=bool)
        e_start = np.zeros(len(deq), dtype=np.int64)
        e_dur = np.zeros(len(deq), dtype=np.int64)
        has[di] = True
        e_start[di] = enq["start_ns"].to_numpy(np.int64)[ei]
        e_dur[di] = enq["dur_ns"].to_numpy(np.int64)[ei]
        d_start = deq["start_ns"].to_numpy(np.int64)
        calls = pd.DataFrame({
            "name": _labels(deq["name"], lambda n: n.split("@", 1)[1] if "@" in n else n),
            "tid": deq_tid, "win_start_ns": d_start,
            "win_end_ns": deq["end_ns"].to_numpy(np.int64), "has_enqueue": has,
            "enqueue_start_ns": e_start, "enqueue_ns": np.where(has, e_dur, np.nan),
            "queue_wait_ns": np.where(has, (d_start - e_start - e_dur).astype(np.float64),
                                      np.nan)})
    else:
        out["kind"] = "direct" if len(launches) else None
        ops = _with_end(slices[host & ~_name_mask(names, "ProfilerStep#")])
        calls = _owner_calls(launches, ops, tid_of)
    launches["call"] = _window_of(launches["tid"].to_numpy(), launches["start_ns"].to_numpy(),
                                  calls)
    apis = _with_end(slices[cann & _name_mask(names, "AscendCL@")])
    a_tid = tid_of(apis["track_id"])
    a_call = _window_of(a_tid, apis["start_ns"].to_numpy(), calls)
    is_op = _name_mask(apis["name"], "AscendCL@aclop")
    is_nn = _name_mask(apis["name"], "AscendCL@aclnn")
    is_compile = _name_mask(apis["name"], contains="compile")
    n = len(calls)
    has_op = np.bincount(a_call[(a_call >= 0) & is_op], minlength=n)[:n] > 0
    has_nn = np.bincount(a_call[(a_call >= 0) & is_nn], minlength=n)[:n] > 0
    sel = (a_call >= 0) & is_compile
    out["compile_ns"] = np.bincount(a_call[sel], weights=apis["dur_ns"].to_numpy(np.float64)[sel],
                                    minlength=n)[:n]
    out["paths"] = np.where(has_op, "aclop", np.where(has_nn, "aclnn", None)).astype(object)
    out["calls"], out["launches"] = calls, launches
    return out


def _owner_calls(launches: pd.DataFrame, ops: pd.DataFrame, tid_of) -> pd.DataFrame:
    """Calls without a task queue: the deepest host op enclosing each launch on its thread."""
    if len(launches) == 0 or len(ops) == 0:
        return _empty_calls()
    op_tid = tid_of(ops["track_id"])
    # Bind on the thread id: CANN (or CUDA runtime) and host ops are different tracks of one
    # OS thread; a thread id stands in for the track.
    codes, uniq = pd.factorize(pd.Series(np.concatenate([op_tid, launches["tid"].to_numpy()]),
                                         dtype=object))
    cand = ops.assign(track_id=codes[:len(ops)])
    own = _enclosing(codes[len(ops):], launches["start_ns"].to_numpy(), cand)
    used = np.unique(own[own >= 0])
    o = ops.iloc[used]
    return pd.DataFrame({"name": _labels(o["name"]), "tid": op_tid[used],
                         "win_start_ns": o["start_ns"].to_numpy(np.int64),
                         "win_end_ns": o["end_ns"].to_numpy(np.int64), "has_enqueue": False,
                         "enqueue_start_ns": np.int64(0), "enqueue_ns": np.nan,
                         "queue_wait_ns": np.nan})


def _window_of(tid: np.ndarray, ts: np.ndarray, calls: pd.DataFrame) -> np.ndarray:
    """The call whose window (same thread, start <= ts <= end) holds each time, else -1;
    the latest-starting window wins where windows nest."""
    if len(calls) == 0 or len(ts) == 0:
        return np.full(len(ts), -1, dtype=np.int64)
    codes, _ = pd.factorize(pd.Series(np.concatenate([calls["tid"].to_numpy(dtype=object),
                                                      np.asarray(tid, dtype=object)]),
                                      dtype=object))
    cand = pd.DataFrame({"track_id": codes[:len(calls)],
                         "start_ns": calls["win_start_ns"].to_numpy(np.int64),
                         "end_ns": calls["win_end_ns"].to_numpy(np.int64)})
    return _bind(codes[len(calls):], np.asarray(ts, np.int64), cand)


def _cuda_path(profile, slices, host, tid_of, out) -> dict:
    names = slices["name"]
    rt_mask = host & _name_mask(names, among=CUDA_LAUNCHES)
    kernels = profile.table("kernels")
    if not rt_mask.any() or "correlation" not in slices.columns \
            or "correlation" not in kernels.columns or len(kernels) == 0:
        return out
    rt = _with_end(slices[rt_mask])
    rt["correlation"] = slices.loc[rt_mask, "correlation"].to_numpy()
    k = kernels[["correlation", "start_ns"]].dropna(subset=["correlation"])
    first = k.groupby("correlation")["start_ns"].min()
    corr = pd.to_numeric(pd.Series(rt["correlation"].to_numpy(dtype=object)), errors="coerce")
    pos = first.index.get_indexer(corr.to_numpy())
    ok = pos >= 0
    dev = first.to_numpy(np.int64)[pos[ok]]
    rt = rt[ok].reset_index(drop=True)
    r_tid = tid_of(rt["track_id"])
    launches = pd.DataFrame({"tid": r_tid, "start_ns": rt["start_ns"].to_numpy(np.int64),
                             "launch_ns": rt["dur_ns"].to_numpy(np.float64),
                             "device_start_ns": dev,
                             "delay_ns": (dev - rt["start_ns"].to_numpy(np.int64)
                                          ).astype(np.float64)})
    cat = slices["cat"].astype(str).str.lower().to_numpy() if len(slices) else np.zeros(0)
    op_mask = host & np.isin(cat, ("cpu_op", "operator")) & \
        ~_name_mask(names, "ProfilerStep#")
    ops = _with_end(slices[op_mask])
    calls = _owner_calls(launches, ops, tid_of)
    launches["call"] = _window_of(r_tid, launches["start_ns"].to_numpy(), calls)
    out.update(calls=calls, launches=launches, kind="cuda",
               paths=np.full(len(calls), "cuda", dtype=object), compile_ns=np.zeros(len(calls)))
    return out


# --------------------------------------------------------------------------- the numbers

def dequeue_gaps(dequeues: pd.DataFrame, windows: pd.DataFrame, gap_ns: int) -> pd.DataFrame:
    """Gaps over `gap_ns` between consecutive Dequeue events of one step: (step, start_ns,
    end_ns, gap_ns, before, after), largest first."""
    d = dequeues.sort_values("start_ns", kind="stable")
    start = d["start_ns"].to_numpy(np.int64)
    if len(start) < 2:
        return pd.DataFrame({"step": [], "start_ns": [], "end_ns": [], "gap_ns": [],
                             "before": [], "after": []})
    run_end = np.maximum.accumulate(d["end_ns"].to_numpy(np.int64))
    gap = start[1:] - run_end[:-1]
    step = _steps_of(start, windows)
    same = (step[1:] == step[:-1]) & ~np.isnan(step[1:])
    big = np.flatnonzero(same & (gap > gap_ns))
    names = d["name"].to_numpy(dtype=object)
    # The Dequeue that ended last before the gap (its end is run_end).
    last = _last_ender(d["end_ns"].to_numpy(np.int64), run_end)
    out = pd.DataFrame({"step": step[1:][big], "start_ns": run_end[:-1][big],
                        "end_ns": start[1:][big], "gap_ns": gap[big],
                        "before": names[last[:-1][big]] if len(big) else [],
                        "after": names[1:][big]})
    return out.sort_values(["gap_ns", "start_ns"], ascending=[False, True],
                           kind="stable").reset_index(drop=True)


def _last_ender(end: np.ndarray, run_end: np.ndarray) -> np.ndarray:
    """Index of the row whose end is the running maximum at each row."""
    idx = np.where(end == run_end, np.arange(len(end)), 0)
    return np.maximum.accumulate(idx)


def device_idle(kernels: pd.DataFrame, launches: pd.DataFrame, windows: pd.DataFrame
                ) -> tuple[np.ndarray, np.ndarray]:
    """(idle_ns, dispatch_bound_ns) per window: the window minus the union of the device
    tasks, and the part of the idle gaps that ended before the host launched the task that
    ends the gap (the task's launch found by its device start, within 1 µs)."""
    n = len(windows)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    w0 = windows["start_ns"].to_numpy(np.int64)
    w1 = windows["end_ns"].to_numpy(np.int64)
    k = kernels[kernels["dur_ns"].to_numpy() >= 0].sort_values("start_ns", kind="stable")
    ks = k["start_ns"].to_numpy(np.int64)
    ke = ks + k["dur_ns"].to_numpy(np.int64)
    if len(ks) == 0:
        return (w1 - w0).astype(np.float64), np.zeros(n)
    run_end = np.maximum.accumulate(ke)
    first = np.ones(len(ks), dtype=bool)
    first[1:] = ks[1:] > run_end[:-1]           # a task that starts after the device idled
    grp = np.cumsum(first) - 1
    ms = ks[first]                              # merged busy intervals
    me = np.zeros(len(ms), dtype=np.int64)
    np.maximum.at(me, grp, ke)
    cum = np.concatenate([[0], np.cumsum(me - ms)])

    def busy_until(t):
        j = np.searchsorted(ms, t, side="right") - 1
        inside = np.where(j >= 0, np.minimum(me[np.maximum(j, 0)], t) - ms[np.maximum(j, 0)], 0)
        return np.where(j >= 0, cum[np.maximum(j, 0)] + np.maximum(inside, 0), 0)

    idle = (w1 - w0) - (busy_until(w1) - busy_until(w0))
    # Idle gaps: from the previous busy end (or the window start) to each merged start.
    g1 = ms
    g0 = np.concatenate([[np.iinfo(np.int64).min], me[:-1]])
    launch_at = np.zeros(len(g1), dtype=np.int64)
    found = np.zeros(len(g1), dtype=bool)
    if len(launches):
        ll = pd.DataFrame({"ts": launches["device_start_ns"].to_numpy(np.int64),
                           "launch": launches["start_ns"].to_numpy(np.int64)}
                          ).sort_values("ts", kind="stable")
        m = pd.merge_asof(pd.DataFrame({"ts": g1, "i": np.arange(len(g1))}), ll, on="ts",
                          direction="nearest", tolerance=1000)
        hit = m["launch"].notna().to_numpy()
        launch_at[m["i"].to_numpy()[hit]] = m["launch"].to_numpy()[hit].astype(np.int64)
        found[m["i"].to_numpy()[hit]] = True
    wi = np.searchsorted(w0, g1, side="right") - 1   # the window each gap ends in
    ok = (wi >= 0) & found
    ok[ok] &= g1[ok] < w1[wi[ok]]
    bound = np.zeros(n)
    if ok.any():
        a = np.maximum(g0[ok], w0[wi[ok]])
        b = np.minimum(g1[ok], launch_at[ok])
        np.add.at(bound, wi[ok], np.maximum(b - a, 0).astype(np.float64))
    return idle.astype(np.float64), bound


# id(profile) -> (profile, {gap_ns: analysis}) while a `shared_analysis` block runs; the
# profile is held so that its id cannot be reused by another one meanwhile.
_SHARED: dict[int, tuple[Profile, dict]] = {}
_SHARED_LOCK = threading.Lock()


@contextlib.contextmanager
def shared_analysis(profile: Profile):
    """Within this block `analyze(profile, gap_ns)` is computed once per gap_ns and shared
    by its callers (the reader process runs the advisor's host_dispatch rule and makes the
    stored document right after each other, on tables that no longer change). Outside such
    a block nothing is kept: an open profile in TensorBoard holds no analysis tables."""
    with _SHARED_LOCK:
        _SHARED[id(profile)] = (profile, {})
    try:
        yield
    finally:
        with _SHARED_LOCK:
            _SHARED.pop(id(profile), None)


def analyze(profile: Profile, gap_ns: int = GAP_NS) -> dict:
    """Every dispatch number of a profile as tables: `calls` (per call, with step, path,
    launch figures), `launches`, `gaps` (dequeue gaps over gap_ns), `steps`, `kind`.
    The result is read only by its callers (shared within `shared_analysis`)."""
    with _SHARED_LOCK:
        shared = _SHARED.get(id(profile))
    if shared is None or shared[0] is not profile:
        return _analyze(profile, gap_ns)
    results = shared[1]
    if gap_ns not in results:
        results[gap_ns] = _analyze(profile, gap_ns)
    return results[gap_ns]


def _analyze(profile: Profile, gap_ns: int) -> dict:
    pt = path_tables(profile)
    windows = _windows(profile)
    calls, launches = pt["calls"].copy(), pt["launches"]
    nc = len(calls)
    call = launches["call"].to_numpy(np.int64) if len(launches) else np.zeros(0, np.int64)
    has = call >= 0
    calls["launches"] = np.bincount(call[has], minlength=nc)[:nc] if nc else []
    calls["launch_ns"] = np.bincount(call[has], weights=np.nan_to_num(
        launches["launch_ns"].to_numpy(np.float64)[has]), minlength=nc)[:nc] if nc else []
    # The op's first device task: its delay is the op's launch delay.
    first_delay = np.full(nc, np.nan)
    if has.any():
        order = np.lexsort((launches["start_ns"].to_numpy()[has], call[has]))
        c_sorted = call[has][order]
        lead = np.ones(len(c_sorted), dtype=bool)
        lead[1:] = c_sorted[1:] != c_sorted[:-1]
        first_delay[c_sorted[lead]] = launches["delay_ns"].to_numpy(np.float64)[has][order][lead]
    calls["launch_delay_ns"] = first_delay
    calls["path"] = pt["paths"] if nc else []
    calls["compile_ns"] = pt["compile_ns"] if nc else []
    t0 = np.where(calls["has_enqueue"].to_numpy(bool), calls["enqueue_start_ns"].to_numpy(np.int64),
                  calls["win_start_ns"].to_numpy(np.int64)) if nc else np.zeros(0, np.int64)
    calls["step"] = _steps_of(t0, windows)
    gaps = dequeue_gaps(pt["dequeues"], windows, gap_ns)
    l_step = _steps_of(launches["start_ns"].to_numpy(np.int64), windows)
    whole = windows
    if len(whole) == 0:  # no steps: the whole profile is one window
        k = profile.table("kernels")
        ends = ([int(calls["win_end_ns"].max())] if nc else []) + \
            ([int((k["start_ns"] + k["dur_ns"]).max())] if len(k) else [])
        starts = ([int(calls["win_start_ns"].min())] if nc else []) + \
            ([int(k["start_ns"].min())] if len(k) else [])
        if starts:
            whole = pd.DataFrame({"step": [0], "start_ns": [min(starts)],
                                  "end_ns": [max(ends) + 1]})
    idle, bound = device_idle(profile.table("kernels"), launches, whole)
    rows = []
    qw = calls["queue_wait_ns"].to_numpy(np.float64) if nc else np.zeros(0)
    c_step = calls["step"].to_numpy(np.float64) if nc else np.zeros(0)
    delay = launches["delay_ns"].to_numpy(np.float64)
    g_step = gaps["step"].to_numpy(np.float64)
    g_ns = gaps["gap_ns"].to_numpy(np.float64)
    sids = whole["step"].to_numpy()
    c_rows, l_rows, g_rows = (_rows_of(v, sids) for v in (c_step, l_step, g_step))
    g_start, g_end = gaps["start_ns"].to_numpy(), gaps["end_ns"].to_numpy()
    for i, (sid, s0, s1) in enumerate(zip(whole["step"], whole["start_ns"], whole["end_ns"])):
        # one pass per step (a few hundred at most) over that step's rows only
        cr, lr, gr = c_rows[i], l_rows[i], g_rows[i]
        q, dl, g = qw[cr], delay[lr], g_ns[gr]
        (q50, q95), (d50, d95) = _p50_p95(q), _p50_p95(dl)
        rows.append({
            "step": int(sid) if len(windows) else None, "start_ns": int(s0), "end_ns": int(s1),
            "calls": int(len(cr)), "launches": int(len(lr)),
            "queue_wait_p50_ns": q50, "queue_wait_p95_ns": q95,
            "queue_wait_max_ns": float(np.nanmax(q)) if np.any(~np.isnan(q)) else float("nan"),
            "dequeue_gaps_over_1ms": int(len(g)), "dequeue_gap_total_ns": float(g.sum()),
            "dequeue_gap_max_ns": float(g.max()) if len(g) else 0.0,
            "worst_gap_start_ns": int(g_start[gr[0]]) if len(gr) else None,
            "worst_gap_end_ns": int(g_end[gr[0]]) if len(gr) else None,
            "launch_delay_p50_ns": d50, "launch_delay_p95_ns": d95,
            "device_idle_ns": float(idle[i]), "dispatch_bound_idle_ns": float(bound[i])})
    return {"calls": calls, "launches": launches, "gaps": gaps,
            "steps": pd.DataFrame(rows), "step_rows": rows, "kind": pt["kind"], "gap_ns": gap_ns,
            "has_steps": bool(len(windows)), "dequeue_count": int(len(pt["dequeues"]))}


def ops_table(calls: pd.DataFrame) -> pd.DataFrame:
    """Per framework op name: calls and the means of each stage of its dispatch (µs)."""
    cols = ["name", "calls", "enqueue_us", "queue_wait_us", "queue_wait_max_us", "launch_us",
            "launches", "launch_delay_us", "launch_delay_max_us", "compile_us", "path"]
    if len(calls) == 0:
        return pd.DataFrame({c: [] for c in cols})
    g = calls.groupby("name", sort=False, observed=True)
    df = pd.DataFrame({
        "calls": g.size(),
        "enqueue_us": g["enqueue_ns"].mean() / 1000.0,
        "queue_wait_us": g["queue_wait_ns"].mean() / 1000.0,
        "queue_wait_max_us": g["queue_wait_ns"].max() / 1000.0,
        "launch_us": g["launch_ns"].mean() / 1000.0,
        "launches": g["launches"].sum(),
        "launch_delay_us": g["launch_delay_ns"].mean() / 1000.0,
        "launch_delay_max_us": g["launch_delay_ns"].max() / 1000.0,
        "compile_us": g["compile_ns"].sum() / 1000.0,
    }).reset_index()
    main = _main_paths(calls["name"], calls["path"])
    df["path"] = pd.Series([main.get(n) for n in df["name"]], index=df.index)
    df.loc[df["launches"] == 0, "launch_us"] = np.nan
    return df[cols]


def _main_paths(names: pd.Series, paths: pd.Series) -> dict:
    """Op name -> the path most of its calls took (aclop wins a tie: it is the slow one;
    otherwise the first seen of the tied ones), for the names with any path. Counted per
    (name, path) code pair: no Python pass over the calls."""
    valid = ~pd.isna(paths).to_numpy()
    if not valid.any():
        return {}
    n_codes, n_uni = pd.factorize(names.to_numpy(dtype=object)[valid], use_na_sentinel=False)
    p_codes, p_uni = pd.factorize(paths.to_numpy(dtype=object)[valid], use_na_sentinel=False)
    pair = n_codes.astype(np.int64) * len(p_uni) + p_codes
    uniq, first, count = np.unique(pair, return_index=True, return_counts=True)
    u_name, u_path = uniq // len(p_uni), uniq % len(p_uni)
    is_aclop = np.array([p == "aclop" for p in p_uni], dtype=bool)[u_path]
    # Per name: the most calls, then aclop, then the path seen first.
    o = np.lexsort((first, ~is_aclop, -count, u_name))
    lead = np.ones(len(o), dtype=bool)
    lead[1:] = u_name[o][1:] != u_name[o][:-1]
    best = o[lead]
    return dict(zip(np.asarray(n_uni, dtype=object)[u_name[best]].tolist(),
                    np.asarray(p_uni, dtype=object)[u_path[best]].tolist()))


def _us(v):
    if v is None:
        return None
    if isinstance(v, (int, np.integer)):  # epoch ns: divide before a float rounds them
        q, r = divmod(int(v), 1000)
        return q + r / 1000.0
    f = float(v)
    return None if np.isnan(f) else f / 1000.0


def document(profile: Profile, gap_ns: int = GAP_NS) -> dict:
    """The `/dispatch` answer of a profile (before the table parameters): ops rows, steps,
    the worst gaps and a summary, every time in µs."""
    a = analyze(profile, gap_ns)
    ops = ops_table(a["calls"])
    steps, gaps, launches = a["steps"], a["gaps"], a["launches"]
    step_rows = []
    for r in a["step_rows"]:  # not through a DataFrame: None would make epoch ns floats
        idle, bound = r["device_idle_ns"], r["dispatch_bound_idle_ns"]
        span = r["end_ns"] - r["start_ns"]
        step_rows.append({
            "step": r["step"], "start_us": _us(r["start_ns"]), "end_us": _us(r["end_ns"]),
            "calls": r["calls"], "launches": r["launches"],
            "queue_wait_p50_us": _us(r["queue_wait_p50_ns"]),
            "queue_wait_p95_us": _us(r["queue_wait_p95_ns"]),
            "queue_wait_max_us": _us(r["queue_wait_max_ns"]),
            "dequeue_gaps_over_1ms": r["dequeue_gaps_over_1ms"],
            "dequeue_gap_total_us": _us(r["dequeue_gap_total_ns"]),
            "dequeue_gap_max_us": _us(r["dequeue_gap_max_ns"]),
            "worst_gap_start_us": _us(r["worst_gap_start_ns"]),
            "worst_gap_end_us": _us(r["worst_gap_end_ns"]),
            "launch_delay_p50_us": _us(r["launch_delay_p50_ns"]),
            "launch_delay_p95_us": _us(r["launch_delay_p95_ns"]),
            "device_idle_us": _us(idle), "dispatch_bound_idle_us": _us(bound),
            "dispatch_bound_pct": bound / idle * 100.0 if idle > 0 else None,
            "dispatch_bound_step_pct": bound / span * 100.0 if span > 0 else None})
    worst = [{"step": int(g["step"]) if a["has_steps"] else None,
              "start_us": _us(g["start_ns"]), "end_us": _us(g["end_ns"]),
              "gap_us": _us(g["gap_ns"]), "before": str(g["before"]), "after": str(g["after"])}
             for g in gaps.head(WORST_GAPS).to_dict("records")]
    delay = launches["delay_ns"].to_numpy(np.float64)
    idle = float(steps["device_idle_ns"].sum()) if len(steps) else 0.0
    bound = float(steps["dispatch_bound_idle_ns"].sum()) if len(steps) else 0.0
    total = float((steps["end_ns"] - steps["start_ns"]).sum()) if len(steps) else 0.0
    paths = a["calls"]["path"].dropna().value_counts().to_dict() if len(a["calls"]) else {}
    summary = {
        "kind": a["kind"], "gap_threshold_us": gap_ns / 1000.0, "calls": int(len(a["calls"])),
        "launches": int(len(launches)), "paths": {str(k): int(v) for k, v in paths.items()},
        "dequeue_gaps_over_1ms": int(len(gaps)), "dequeue_gap_total_us": _us(gaps["gap_ns"].sum()),
        "launch_delay_p50_us": _us(_pct(delay, 50)), "launch_delay_p95_us": _us(_pct(delay, 95)),
        "device_idle_us": idle / 1000.0, "dispatch_bound_idle_us": bound / 1000.0,
        "dispatch_bound_pct": bound / idle * 100.0 if idle > 0 else None,
        "dispatch_bound_step_pct": bound / total * 100.0 if total > 0 else None}
    return {"version": VERSION, "summary": summary, "steps": step_rows, "worst_gaps": worst,
            "ops": _records(ops)}


def _records(df: pd.DataFrame) -> list[dict]:
    out = []
    for r in df.to_dict("records"):
        row = {}
        for k, v in r.items():
            if isinstance(v, (np.integer,)):
                v = int(v)
            elif isinstance(v, (float, np.floating)):
                v = None if np.isnan(v) else float(v)
            row[k] = v
        out.append(row)
    return out


def applies(profile: Profile) -> bool:
    """Whether the profile's timeline is there to be analyzed (not still being read)."""
    return not (profile.meta.trace_deferred and not profile.meta.trace_ready)


def cached_document(profile: Profile, cache_root: str, key: str) -> dict:
    """`document` of a cache entry: memory, then the entry's derived JSON, then computed."""
    return STORE.get(cache_root, key, f".v{VERSION}.json", lambda: document(profile))


def precompute(profile: Profile, cache_root: str, key: str) -> None:
    """Store the document from the reader process, right after the timeline stage."""
    cached_document(profile, cache_root, key)
