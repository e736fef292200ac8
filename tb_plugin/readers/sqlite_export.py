"""SQLite exports -> the model tables: torch_npu `ascend_pytorch_profiler[_{rank}].db` (+
`analysis.db`), MindSpore `ascend_mindspore_profiler[_{rank}].db` (+
`communication_analyzer.db`) and CANN `msprof_*.db` in `PROF_*` (docs/formats.md §2.20).

These are steps of the torch_npu / MindSpore and msprof readers (`read_views`, then
`read_timeline` in the timeline stage), not a producer of their own: a span with both text
and db output is one span, and each model table has one source. The rule (text first):
the db fills a table only when the text step left it empty (its file absent, or unusable,
which is then reported as well); the timeline comes from the db only when no trace file
exists. So nothing is counted twice.

Reading (`sqlite_db`): the file is opened read-only with a short busy timeout; schemas
are taken from `PRAGMA table_info` and matched against `db_columns` (renamed columns,
text-typed times, STRING_IDS ids, invalid markers as data). Every table is read by one
SELECT with its joins and only the columns the model needs, fetched in batches into Arrow
columns (exact int64 ns, never float). A db that cannot be opened (locked, not a database,
no tables yet) is one FileError naming the file and the reason; the span's cache key covers
the db's size and mtime, so the span is read again once the file changes.

What is filled (units as the text readers: ns, MiB, KB, ms->ns):
steps     analysis.db StepTraceTime (µs, the step_trace_time.csv numbers), windows from
          STEP_TIME (also the `step_windows` table when StepTraceTime is absent); a whole-run
          row (MindSpore graph mode) split per STEP_TIME window from the device tasks'
          overlap, as the text render is split from its trace's Overlap Analysis events.
kernels   TASK ⋈ COMPUTE_TASK_INFO (names through STRING_IDS) ∪ COMMUNICATION_OP (core type
          COMMUNICATION), with TASK_PMU_INFO pivoted into one float column per metric
          (the CSV counters' `pmu_*` names and order; tasks without a value are
          `meta.pmu_na_cells`, as N/A cells of the CSV);
          step = the STEP_TIME window holding the launching CANN_API call (connectionId),
          else the task's own start; wait_ns = gap since the device's previous task ended
          (`waitNs` where an old db has it).
operators PYTORCH_API rows of type op (no ProfilerStep#), call stacks from
          PYTORCH_CALLCHAINS (frames by stackDepth, "\\n"-separated); host total = end -
          start, host self = total - direct children (same thread); device self = the
          kernels linked by CONNECTION_IDS, device total = self + descendants.
memory    MEMORY_RECORD (else NPU_MEM: reserved = ddr + hbm), OP_MEMORY (bytes -> MiB / KB),
          NPU_MODULE_MEM (+ ENUM_MODULE names).
communication  analysis.db CommAnalyzerTime / CommAnalyzerBandwidth / CommAnalyzerMatrix.
timeline  tracks Python (PYTORCH_API by globalTid), CANN (CANN_API), Ascend Hardware
          (TASK by stream), Communication (COMMUNICATION_OP by group); flows async_npu
          (PYTORCH_API -> CONNECTION_IDS -> TASK) and HostToDevice (CANN_API -> TASK).
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa

from . import columns as C
from . import db_columns as D
from .communication_json import P2P_PREFIXES
from .sqlite_db import DbFile, DbSource, find_db_files, select_list
from .us_text import to_int64, us_text_to_ns

def _needs(ctx, table: str) -> bool:
    """Text first: the db fills a table the text steps left empty."""
    return not ctx.profile.has(table)


# --------------------------------------------------------------------------- views

def read_views(ctx, source: DbSource) -> None:
    """Fill every view table the text output did not give (see the module doc)."""
    p = ctx.profile
    if source.get("main") is None and source.get("side") is None:
        return
    main = source.get("main")
    if main is not None:
        source.guarded("main", _read_meta, ctx)
    windows = source.guarded("main", _step_time) if main is not None else None
    whole_run = False  # the db's steps are one whole-run row (MindSpore graph mode)
    if _needs(ctx, "steps"):
        steps = source.guarded("side", _steps, windows, source.device_id)
        if steps is not None and len(steps):
            p.set("steps", steps, keep_extra=True)
            p.meta.step_categories = ["computing", "communication_not_overlapped",
                                      "overlapped", "free"]
            whole_run = len(steps) == 1 and int(steps["step"].iloc[0]) == 0
    if windows is not None and len(windows) and not p.has("steps") \
            and not p.has("step_windows"):
        p.set("step_windows", windows)
    if main is not None:
        kernels = None
        if _needs(ctx, "kernels"):
            kernels = source.guarded("main", _kernels, windows, source.device_id)
            if kernels is not None and len(kernels):
                p.set("kernels", kernels.drop(columns=["global_task_id", "connection_id",
                                                       "launch_ns"], errors="ignore"),
                      keep_extra=True)
                if p.meta.pmu_na_cells is None:
                    p.meta.pmu_na_cells = _pmu_na_cells(kernels)
        if whole_run and windows is not None and len(windows) >= 2 \
                and not (ctx.path("trace_view.json") or ctx.path("trace_view.json.gz")):
            if kernels is None:
                kernels = source.guarded("main", _kernels, windows, source.device_id)
            per_step = _split_whole_run(kernels, windows)
            if per_step is not None:
                p.set("steps", per_step, keep_extra=True)
        if _needs(ctx, "operators"):
            ops = source.guarded("main", _operators)
            if ops is not None and len(ops):
                p.set("operators", ops, keep_extra=True)
        if _needs(ctx, "memory_records"):
            df = source.guarded("main", _memory_records, source.device_id)
            if df is None or len(df) == 0:
                df = source.guarded("main", _npu_memory, source.device_id)
            if df is not None and len(df):
                p.set("memory_records", df)
        if _needs(ctx, "memory_allocations"):
            df = source.guarded("main", _memory_allocations, source.device_id)
            if df is not None and len(df):
                p.set("memory_allocations", df)
        if _needs(ctx, "module_memory"):
            df = source.guarded("main", _module_memory, source.device_id)
            if df is not None and len(df):
                p.set("module_memory", df)
    if _needs(ctx, "communication_ops"):
        df = source.guarded("side", _communication_ops)
        if df is not None and len(df):
            p.set("communication_ops", df)
    if _needs(ctx, "communication_links"):
        df = source.guarded("side", _communication_links)
        if df is not None and len(df):
            p.set("communication_links", df, keep_extra=True)


def _read_meta(db: DbFile, ctx) -> None:
    meta = ctx.profile.meta
    md = db.meta()
    versions = {k: md[k] for k in ("SCHEMA_VERSION", "SCHEMA_VERSION_MAJOR",
                                   "SCHEMA_VERSION_MINOR", "SCHEMA_VERSION_MICRO") if k in md}
    if versions:
        meta.versions = {**(meta.versions or {}), **{f"db_{k.lower()}": v
                                                     for k, v in versions.items()}}
    if meta.rank is None and db.usable("RANK_DEVICE_MAP", D.RANK_DEVICE_MAP) is not None:
        df = db.select("RANK_DEVICE_MAP", D.RANK_DEVICE_MAP)
        ranks = df["rank"].dropna()
        if len(ranks):
            meta.rank = int(ranks.iloc[0])
            if meta.device_id is None and "device_id" in df and df["device_id"].notna().any():
                meta.device_id = int(df["device_id"].dropna().iloc[0])


def _step_time(db: DbFile) -> pd.DataFrame | None:
    df = db.select("STEP_TIME", D.STEP_TIME)
    if df is None:
        return None
    df = df.dropna().astype(np.int64)
    return df.sort_values("step").reset_index(drop=True)


def _us(values: pd.Series) -> np.ndarray:
    """µs numbers as written -> exact ns (through their decimal text, like the CSV)."""
    text = [None if v is None or v != v else repr(float(v)) for v in values.tolist()]
    return us_text_to_ns(pa.array(text, type=pa.string()))


def _ms_ns(values: pd.Series) -> np.ndarray:
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64) * 1e6
    v = np.where(np.isfinite(v) & (np.abs(v) < 2.0 ** 63), v, 0.0)
    return np.round(v).astype(np.int64)


def _steps(db: DbFile, windows, device_id) -> pd.DataFrame | None:
    df = db.select("StepTraceTime", D.STEP_TRACE_TIME)
    if df is None or len(df) == 0:
        return None
    out = pd.DataFrame({"step": pd.to_numeric(df["step"], errors="coerce").fillna(0)
                        .astype(np.int64)})
    for col in D.STEP_TRACE_TIME:
        if col not in ("step", "device_id") and col in df:
            out[col] = _us(df[col])
    if "device_id" in df and df["device_id"].notna().any():
        out["device_id"] = df["device_id"].astype("Int64")
        devs = sorted(out["device_id"].dropna().unique().tolist())
        if len(devs) > 1:
            want = device_id if device_id in devs else devs[0]
            out = out[out["device_id"] == want].reset_index(drop=True)
    for c in ("bd_overlapped",):
        if c not in out:
            out[c] = np.zeros(len(out), np.int64)
    out["total_ns"] = out["bd_computing"] + out["bd_communication_not_overlapped"] + out["bd_free"]
    out["start_ns"] = np.zeros(len(out), np.int64)
    out["end_ns"] = np.zeros(len(out), np.int64)
    if windows is not None and len(windows):
        if (out["step"] == 0).all() and not (windows["step"] == 0).any():
            # One whole-run row (MindSpore): the window covering every step.
            windows = pd.DataFrame({"step": [0], "start_ns": [windows["start_ns"].min()],
                                    "end_ns": [windows["end_ns"].max()]})
        w = windows.set_index("step")
        out["start_ns"] = out["step"].map(w["start_ns"]).fillna(0).astype(np.int64)
        out["end_ns"] = out["step"].map(w["end_ns"]).fillna(0).astype(np.int64)
    order = ["step", "start_ns", "end_ns", "total_ns", "bd_computing",
             "bd_communication_not_overlapped", "bd_overlapped", "bd_free"]
    out = out[order + [c for c in out.columns if c not in order]]
    return out.sort_values("step", kind="stable").reset_index(drop=True)


def _device_filter(db: DbFile, table: str, device_id, alias: str = "t") -> tuple[str, tuple]:
    cols = db.columns(table) or {}
    if device_id is None or "deviceid" not in cols:
        return "", ()
    return f'WHERE {alias}."{cols["deviceid"]}" = ?', (int(device_id),)


def _launch_starts(db: DbFile) -> pd.DataFrame | None:
    """connectionId -> start of the CANN API call that launched it (the earliest)."""
    found = db.usable("CANN_API", D.CANN_API)
    if found is None or "connection_id" not in found:
        return None
    c, s = found["connection_id"], found["start_ns"]
    return db.query(f'SELECT "{c}" AS connection_id, MIN(CAST("{s}" AS INTEGER)) AS launch_ns '
                    f'FROM CANN_API WHERE "{c}" >= 0 GROUP BY "{c}"',
                    {"connection_id": "int", "launch_ns": "ns"})


def _assign_steps(times: np.ndarray, windows) -> pd.array:
    """Step of the window [start, end] holding each time (NA outside every window)."""
    out = pd.array([pd.NA] * len(times), dtype="Int64")
    if windows is None or len(windows) == 0 or len(times) == 0:
        return out
    w = windows.sort_values("start_ns")
    starts = w["start_ns"].to_numpy()
    i = np.searchsorted(starts, times, side="right") - 1
    ok = (i >= 0)
    i = np.clip(i, 0, len(w) - 1)
    ok &= times <= w["end_ns"].to_numpy()[i]
    vals = w["step"].to_numpy().astype(np.int64)[i]
    return pd.arrays.IntegerArray(np.where(ok, vals, 0), ~ok)


def _kernels(db: DbFile, windows, device_id) -> pd.DataFrame | None:
    task = db.usable("TASK", D.TASK)
    info = db.usable("COMPUTE_TASK_INFO", D.COMPUTE_TASK_INFO)
    frames = []
    if task is not None and info is not None:
        joins: list[str] = []
        proj = (db.project("TASK", D.TASK, "t", task, joins,
                           ["start_ns", "end_ns", "device_id", "connection_id", "global_task_id",
                            "stream_id"])
                + db.project("COMPUTE_TASK_INFO", D.COMPUTE_TASK_INFO, "c", info, joins,
                             ["name", "type", "core_type", "block_dim", "input_shapes",
                              "input_dtypes", "output_shapes", "wait_ns"]))
        where, params = _device_filter(db, "TASK", device_id)
        sql = (f"SELECT {select_list(proj)} FROM TASK t "
               f'JOIN COMPUTE_TASK_INFO c ON c."{info["global_task_id"]}" = '
               f't."{task["global_task_id"]}" {" ".join(joins)} {where}')
        df = db.query(sql, {n: k for _, n, k in proj}, params)
        pmu = _pmu(db, df)
        if pmu is not None and len(pmu):
            keys = [c for c in ("global_task_id", "start_ns") if c in pmu.columns]
            df = df.merge(pmu, on=keys, how="left")
        frames.append(df)
    comm = db.usable("COMMUNICATION_OP", D.COMMUNICATION_OP)
    if comm is not None:
        where, params = _device_filter(db, "COMMUNICATION_OP", device_id)
        # (COMMUNICATION_OP.waitNs is HCCL's own wait, not the gap before the task: not read)
        df = db.select("COMMUNICATION_OP", D.COMMUNICATION_OP, where, params,
                       ["name", "type", "start_ns", "end_ns", "connection_id", "device_id"])
        df["core_type"] = "COMMUNICATION"
        df["block_dim"] = pd.array([0] * len(df), dtype="Int64")
        frames.append(df)
    if not frames:
        return None
    out = pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)
    if len(out) == 0:
        return out
    start = out["start_ns"].astype(np.int64).to_numpy()
    end = out["end_ns"].astype(np.int64).to_numpy()
    out["start_ns"], out["dur_ns"] = start, np.maximum(end - start, 0)
    out = out.drop(columns=["end_ns"])
    if "device_id" not in out:
        out["device_id"] = pd.array([device_id] * len(out), dtype="Int64")
    out = out.sort_values(["start_ns"], kind="stable").reset_index(drop=True)
    out["wait_ns"] = _waits(out)
    # Step: the window of the host call that launched the task, else of the task itself.
    when = out["start_ns"].to_numpy().copy()
    launches = _launch_starts(db) if windows is not None and len(windows) else None
    if launches is not None and len(launches) and "connection_id" in out:
        m = out[["connection_id"]].merge(launches, on="connection_id", how="left")
        known = m["launch_ns"].notna().to_numpy()
        when = np.where(known, m["launch_ns"].fillna(0).astype(np.int64).to_numpy(), when)
        out["launch_ns"] = m["launch_ns"].astype("Int64").array  # (not a model column)
    out["step"] = _assign_steps(when, windows)
    for c in ("input_shapes", "input_dtypes", "output_shapes"):
        if c in out:
            out[c] = out[c].fillna("")
    return out


def _waits(df: pd.DataFrame) -> np.ndarray:
    """Gap since the previous task of the same device ended (≥ 0), or the db's waitNs."""
    start = df["start_ns"].to_numpy()
    end = start + df["dur_ns"].to_numpy()
    dev = df["device_id"].fillna(-1).astype(np.int64).to_numpy()
    wait = np.zeros(len(df), np.int64)
    for d in np.unique(dev):
        idx = np.nonzero(dev == d)[0]  # already sorted by start
        prev_end = np.maximum.accumulate(end[idx])
        w = np.zeros(len(idx), np.int64)
        w[1:] = np.maximum(start[idx][1:] - prev_end[:-1], 0)
        wait[idx] = w
    if "wait_ns" in df:
        given = df["wait_ns"]
        have = given.notna().to_numpy()
        wait = np.where(have, given.fillna(0).astype(np.int64).to_numpy(), wait)
    return wait


def _pmu(db: DbFile, tasks: pd.DataFrame) -> pd.DataFrame | None:
    """TASK_PMU_INFO (globalTaskId, metric, value) pivoted: one float column per metric, per
    task. The pivot is an SQL aggregate (one row per globalTaskId); with timestampNs (task ids
    reused by several runs) the rows are matched to the run whose window holds them."""
    found = db.usable("TASK_PMU_INFO", D.TASK_PMU_INFO)
    if found is None:
        return None
    if "timestamp_ns" in found and db.query(
            f'SELECT COUNT(*) AS n FROM (SELECT 1 FROM TASK_PMU_INFO WHERE '
            f'"{found["timestamp_ns"]}" IS NOT NULL LIMIT 1)', {"n": "int"})["n"].iloc[0]:
        long = db.select("TASK_PMU_INFO", D.TASK_PMU_INFO)
        runs = tasks[["global_task_id", "start_ns", "end_ns"]]
        long = long.merge(runs, on="global_task_id")
        ts = long["timestamp_ns"]
        long = long[(ts >= long["start_ns"]) & (ts <= long["end_ns"])]
        if len(long) == 0:
            return None
        wide = long.pivot_table(index=["global_task_id", "start_ns"], columns="metric",
                                values="value", aggfunc="first")
        wide.columns = [_pmu_name(str(c)) for c in wide.columns]
        return _pmu_order(wide.reset_index())
    joins: list[str] = []
    metric_expr = db.project("TASK_PMU_INFO", D.TASK_PMU_INFO, "p", found, joins,
                             ["metric"])[0][0]
    raw = f'p."{found["metric"]}"'
    metrics = db.query(f"SELECT DISTINCT {raw} AS raw, {metric_expr} AS metric FROM "
                       f"TASK_PMU_INFO p {' '.join(joins)}", {"raw": "text", "metric": "text"})
    if len(metrics) == 0:
        return None
    names = metrics["metric"].fillna("").astype(str).tolist()
    keys = [_raw_key(k) for k in metrics["raw"].tolist()]
    value = f'p."{found["value"]}"'
    cols = ", ".join(f"MAX(CASE WHEN {raw} = ? THEN {value} END) AS m{i}"
                     for i in range(len(keys)))
    wide = db.query(f'SELECT p."{found["global_task_id"]}" AS global_task_id, {cols} FROM '
                    f'TASK_PMU_INFO p GROUP BY p."{found["global_task_id"]}"',
                    {"global_task_id": "int", **{f"m{i}": "real" for i in range(len(keys))}},
                    tuple(keys))
    wide.columns = ["global_task_id"] + [_pmu_name(n) for n in names]
    return _pmu_order(wide)


_PMU_RANK = {name: i for i, name in enumerate(C.PMU_COUNTERS)}


def _pmu_order(wide: pd.DataFrame) -> pd.DataFrame:
    """Counter columns in `columns.PMU_COUNTERS` order, as the CSV readers add them (the
    /kernels `counters.ratios` list follows the column order), unknown metrics after them."""
    keys = [c for c in wide.columns if c in ("global_task_id", "start_ns")]
    rest = [c for c in wide.columns if c not in keys]
    rest.sort(key=lambda c: _PMU_RANK.get(c, len(_PMU_RANK)))  # stable: unknown as met
    return wide[keys + rest]


def _pmu_na_cells(kernels: pd.DataFrame) -> dict[str, int] | None:
    """Cells without a number per PMU counter column, as the CSV readers count them
    (`meta.pmu_na_cells`): a task without a TASK_PMU_INFO row for a metric the db has (other
    core's counters, communication ops) is the N/A cell of kernel_details.csv."""
    na = {c: int(kernels[c].isna().sum()) for c in kernels.columns if c in C.PMU_COUNTERS}
    return {c: n for c, n in na.items() if n} or None


def _intervals(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of [start, end) intervals: sorted, disjoint, touching ones merged."""
    keep = end > start
    start, end = start[keep], end[keep]
    if len(start) == 0:
        return start, end
    order = np.argsort(start, kind="stable")
    start, end = start[order], np.maximum.accumulate(end[order])
    new = np.r_[True, start[1:] > end[:-1]]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(start) - 1]
    return start[first], end[last]


def _minus(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray]:
    """Union `a` without union `b` (both from `_intervals`)."""
    points = np.unique(np.concatenate([a[0], a[1], b[0], b[1]]))
    if len(points) < 2:
        return points[:0], points[:0]
    lo, hi = points[:-1], points[1:]

    def covered(u):
        if len(u[0]) == 0:
            return np.zeros(len(lo), dtype=bool)
        i = np.searchsorted(u[0], lo, side="right") - 1
        return (i >= 0) & (lo < u[1][np.maximum(i, 0)])

    keep = covered(a) & ~covered(b)
    return _intervals(lo[keep], hi[keep])


def _split_whole_run(kernels: pd.DataFrame | None, windows: pd.DataFrame
                     ) -> pd.DataFrame | None:
    """Per-step rows for a whole-run StepTraceTime row (MindSpore 2.x graph mode), as the
    text reader gets them from the trace (analysis/step_phases.split_whole_run_steps): the
    db has no Overlap Analysis events, so they are computed from the device tasks the way
    the profiler writes them (Computing = union of the compute tasks, Communication = union
    of COMMUNICATION_OP, Communication(Not Overlapped) = Communication - Computing, Free =
    the gaps between them), and the device-side step windows from the tasks each STEP_TIME
    window launched (the CANN_API -> TASK connections; `npu_overlap`'s rule). None when that
    does not give two or more steps."""
    if kernels is None or len(kernels) == 0:
        return None
    from ..analysis import npu_overlap  # the one implementation of the attribution rule

    k = kernels  # (this device's tasks: `_kernels` filters by deviceId)
    start = k["start_ns"].astype(np.int64).to_numpy()
    end = start + k["dur_ns"].astype(np.int64).to_numpy()
    is_comm = k["core_type"].astype(str).eq("COMMUNICATION").to_numpy()
    compute = _intervals(start[~is_comm], end[~is_comm])
    comm = _intervals(start[is_comm], end[is_comm])
    busy = _intervals(np.concatenate([compute[0], comm[0]]), np.concatenate([compute[1],
                                                                             comm[1]]))
    free = (busy[1][:-1], busy[0][1:])
    events = [("Computing", compute), ("Communication", comm),
              ("Communication(Not Overlapped)", _minus(comm, compute)), ("Free", free)]
    slices = pd.concat([pd.DataFrame({"track_id": np.int32(0), "start_ns": s, "dur_ns": e - s,
                                      "name": name}) for name, (s, e) in events],
                       ignore_index=True)
    tracks = pd.DataFrame({"track_id": [0], "kind": ["overlap"]})
    flows = None
    if "launch_ns" in k:
        known = k["launch_ns"].notna().to_numpy()
        ids = np.arange(int(known.sum())).astype(str)
        flows = pd.DataFrame({
            "flow_id": np.concatenate([ids, ids]),
            "name": npu_overlap._DEVICE_FLOWS[0],
            "phase": ["s"] * len(ids) + ["f"] * len(ids),
            "ts_ns": np.concatenate([k["launch_ns"][known].astype(np.int64).to_numpy(),
                                     start[known]])})
    per_step = npu_overlap.steps_from_overlap(slices, tracks, step_windows=windows,
                                              flows=flows)
    return per_step if len(per_step) >= 2 else None


def _pmu_name(metric: str) -> str:
    """A TASK_PMU_INFO metric as the kernels table names PMU counters (`pmu_aic_mac_ratio`,
    readers/columns.py), so db and CSV counters are the same columns; unknown ones as
    written."""
    return C.pmu_column(metric) or metric


def _raw_key(text):
    """A metric key read back as text: the integer STRING_IDS id again where it is one."""
    try:
        return int(text)
    except (TypeError, ValueError):
        return text


def _call_stacks(db: DbFile) -> pd.DataFrame | None:
    found = db.usable("PYTORCH_CALLCHAINS", D.PYTORCH_CALLCHAINS)
    if found is None:
        return None
    joins: list[str] = []
    proj = {n: e for e, n, _ in db.project("PYTORCH_CALLCHAINS", D.PYTORCH_CALLCHAINS, "t",
                                           found, joins)}
    sql = (f"SELECT id AS callchain_id, group_concat(frame, char(10)) AS call_stack FROM "
           f"(SELECT {proj['id']} AS id, {proj['stack']} AS frame FROM PYTORCH_CALLCHAINS t "
           f"{' '.join(joins)} ORDER BY {proj['id']}, {proj['depth']}) GROUP BY id")
    return db.query(sql, {"callchain_id": "int", "call_stack": "text"})


def _operators(db: DbFile) -> pd.DataFrame | None:
    found = db.usable("PYTORCH_API", D.PYTORCH_API)
    if found is None:
        return None
    where = ""
    if "api_type" in found:
        where = f'WHERE t."{found["api_type"]}" = {D.API_TYPE_OP}'
    ops = db.select("PYTORCH_API", D.PYTORCH_API, where,
                    names=["start_ns", "end_ns", "global_tid", "connection_id", "name",
                           "input_shapes", "callchain_id"])
    ops = ops[~ops["name"].fillna("").str.startswith("ProfilerStep#")]
    if "global_tid" not in ops:
        ops["global_tid"] = pd.array([0] * len(ops), dtype="Int64")
    ops = ops.assign(start_ns=ops["start_ns"].astype(np.int64),
                     end_ns=ops["end_ns"].astype(np.int64))
    ops["_dur"] = ops["end_ns"] - ops["start_ns"]
    ops = ops.sort_values(["global_tid", "start_ns", "_dur"], ascending=[True, True, False],
                          kind="stable").reset_index(drop=True)
    parent = _parents(ops["global_tid"].fillna(0).astype(np.int64).to_numpy(),
                      ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy())
    total = ops["_dur"].to_numpy()
    child = np.zeros(len(ops), np.int64)
    has = parent >= 0
    np.add.at(child, parent[has], total[has])
    dself, daic = _device_time(db, ops)
    dtot, atot = dself.copy(), daic.copy()
    for i in range(len(ops) - 1, -1, -1):  # children come after their parent
        j = parent[i]
        if j >= 0:
            dtot[j] += dtot[i]
            atot[j] += atot[i]
    stacks = _call_stacks(db)
    if stacks is not None and "callchain_id" in ops:
        cs = ops[["callchain_id"]].merge(stacks, on="callchain_id", how="left")["call_stack"]
    else:
        cs = pd.Series([""] * len(ops))
    shapes = ops["input_shapes"] if "input_shapes" in ops else pd.Series([""] * len(ops))
    shapes = shapes.fillna("").str.replace(r"[\r\n]+", "", regex=True).str.strip() \
        .str.replace(r";$", "", regex=True)
    return pd.DataFrame({
        "name": ops["name"].fillna("").to_numpy(),
        "input_shapes": shapes.to_numpy(),
        "call_stack": cs.fillna("").to_numpy(),
        "start_ns": ops["start_ns"].to_numpy(),
        "host_self_ns": total - child,
        "host_total_ns": total,
        "device_self_ns": dself,
        "device_total_ns": dtot,
        "device_self_aicore_ns": daic,
        "device_total_aicore_ns": atot,
    })


def _parents(tid: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Index of each op's enclosing op on its thread (-1 at top level); rows sorted by
    (thread, start, -duration)."""
    parent = np.full(len(tid), -1, np.int64)
    stack: list[int] = []
    last_tid = None
    for i in range(len(tid)):
        if tid[i] != last_tid:
            stack, last_tid = [], tid[i]
        while stack and end[stack[-1]] < end[i] and start[i] >= end[stack[-1]]:
            stack.pop()
        while stack and not (start[i] >= start[stack[-1]] and end[i] <= end[stack[-1]]):
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    return parent


def _device_time(db: DbFile, ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Device time of the kernels each op launched itself (all, and AI_CORE only)."""
    n = len(ops)
    dself, daic = np.zeros(n, np.int64), np.zeros(n, np.int64)
    task = db.usable("TASK", D.TASK)
    info = db.usable("COMPUTE_TASK_INFO", D.COMPUTE_TASK_INFO)
    links = db.usable("CONNECTION_IDS", D.CONNECTION_IDS)
    if task is None or info is None or links is None or "connection_id" not in task \
            or "connection_id" not in ops or n == 0:
        return dself, daic
    joins: list[str] = []
    core = db.project("COMPUTE_TASK_INFO", D.COMPUTE_TASK_INFO, "c", info, joins,
                      ["core_type"])
    core_expr = core[0][0] if core else "NULL"
    sql = (f'SELECT l."{links["id"]}" AS op_connection, '
           f'SUM(CAST(t."{task["end_ns"]}" AS INTEGER) - CAST(t."{task["start_ns"]}" AS INTEGER))'
           f' AS dur, SUM(CASE WHEN {core_expr} = \'AI_CORE\' THEN '
           f'CAST(t."{task["end_ns"]}" AS INTEGER) - CAST(t."{task["start_ns"]}" AS INTEGER) '
           f'ELSE 0 END) AS aic FROM CONNECTION_IDS l '
           f'JOIN TASK t ON t."{task["connection_id"]}" = l."{links["connection_id"]}" '
           f'JOIN COMPUTE_TASK_INFO c ON c."{info["global_task_id"]}" = '
           f't."{task["global_task_id"]}" {" ".join(joins)} GROUP BY l."{links["id"]}"')
    per = db.query(sql, {"op_connection": "int", "dur": "int", "aic": "int"})
    m = ops[["connection_id"]].rename(columns={"connection_id": "op_connection"}).merge(
        per, on="op_connection", how="left")
    return (m["dur"].fillna(0).astype(np.int64).to_numpy(),
            m["aic"].fillna(0).astype(np.int64).to_numpy())


def _device_text(device_id) -> pd.Series:
    return ("NPU:" + device_id.astype("Int64").astype("string")).fillna("")


def _memory_records(db: DbFile, device_id) -> pd.DataFrame | None:
    df = db.select("MEMORY_RECORD", D.MEMORY_RECORD, *_device_filter(db, "MEMORY_RECORD",
                                                                       device_id))
    if df is None:
        return None
    if "device_id" in df:
        df["device"] = _device_text(df.pop("device_id"))
    df["ts_ns"] = df["ts_ns"].astype(np.int64)
    return df


def _npu_memory(db: DbFile, device_id) -> pd.DataFrame | None:
    """NPU_MEM samples as memory curves: reserved = ddr + hbm (msprof's npu_mem memory)."""
    df = db.select("NPU_MEM", D.NPU_MEM, *_device_filter(db, "NPU_MEM", device_id))
    if df is None or len(df) == 0:
        return None
    comp = df["component"].fillna("").astype(str)
    reserved = df.get("ddr_mb", 0).fillna(0) + df.get("hbm_mb", 0).fillna(0)
    out = pd.DataFrame({"component": comp.map(lambda c: D.NPU_MEM_COMPONENTS.get(c.lower(), c)),
                        "ts_ns": df["ts_ns"].astype(np.int64),
                        "reserved_mb": reserved.to_numpy(dtype=np.float64)})
    if "device_id" in df:
        out["device"] = _device_text(df["device_id"])
    return out


def _memory_allocations(db: DbFile, device_id) -> pd.DataFrame | None:
    df = db.select("OP_MEMORY", D.OP_MEMORY, *_device_filter(db, "OP_MEMORY", device_id))
    if df is None:
        return None
    if "device_id" in df:
        df["device"] = _device_text(df.pop("device_id"))
    for c in ("release_ns", "duration_ns"):
        df[c] = df[c].fillna(-1).astype(np.int64) if c in df else np.full(len(df), -1, np.int64)
    df = df[df["alloc_ns"].notna().to_numpy(dtype=bool)].reset_index(drop=True)  # no time: no row
    df["alloc_ns"] = df["alloc_ns"].astype(np.int64)
    return df


def _module_memory(db: DbFile, device_id) -> pd.DataFrame | None:
    df = db.select("NPU_MODULE_MEM", D.NPU_MODULE_MEM, *_device_filter(db, "NPU_MODULE_MEM",
                                                                         device_id))
    if df is None:
        return None
    names = {}
    if db.usable("ENUM_MODULE", D.ENUM_MODULE) is not None:
        e = db.select("ENUM_MODULE", D.ENUM_MODULE)
        names = dict(zip(e["id"].astype(np.int64), e["name"].astype(str)))
    module = df["module"].astype("Int64")
    df["component"] = module.map(names).fillna(module.astype("string")).fillna("").astype(str)
    df["reserved_mb"] = df["reserved_mb"].where(df["reserved_mb"] >= 0)
    if "device_id" in df:
        df["device"] = _device_text(df.pop("device_id"))
    df["ts_ns"] = df["ts_ns"].astype(np.int64)
    return df.drop(columns=["module"])


def _step_of(values: pd.Series) -> pd.array:
    text = values.fillna("").astype(str).str.replace(r"^step", "", regex=True)
    return to_int64(text)


def _kinds(kind: pd.Series | None, names: pd.Series) -> np.ndarray:
    """The db's collective / p2p, else from the op name (as the JSON reader does)."""
    by_name = np.where(names.fillna("").astype(str).str.lower().str.startswith(P2P_PREFIXES),
                       "p2p", "collective")
    if kind is None:
        return by_name
    given = kind.fillna("").astype(str).to_numpy()
    return np.where(given != "", given, by_name)


def _communication_ops(db: DbFile) -> pd.DataFrame | None:
    t = db.select("CommAnalyzerTime", D.COMM_ANALYZER_TIME)
    if t is None:
        return None
    t = t[~t["name"].isin(["Total Op Info", "total"])].reset_index(drop=True)
    out = pd.DataFrame({
        "step": _step_of(t["step"]) if "step" in t else pd.array([pd.NA] * len(t), "Int64"),
        "name": t["name"].astype(str),
        "group": t["group"].fillna("").astype(str) if "group" in t else "",
        "kind": _kinds(t.get("kind"), t["name"]),
        "start_ns": us_text_to_ns([None if v is None or v != v else str(float(v))
                                   for v in t.get("start_us", pd.Series([None] * len(t)))]),
    })
    for col, src in (("elapse_ns", "elapse_ms"), ("transit_ns", "transit_ms"),
                     ("wait_ns", "wait_ms"), ("sync_ns", "sync_ms"), ("idle_ns", "idle_ms")):
        out[col] = _ms_ns(t[src]) if src in t else np.zeros(len(t), np.int64)
    out["transit_size_mb"] = np.nan
    bw = db.select("CommAnalyzerBandwidth", D.COMM_ANALYZER_BANDWIDTH)
    if bw is not None and len(bw):
        # RDMA + SDMA (SDMA already sums HCCS/PCIE/SIO), else their sum: as the JSON reader.
        bw = bw.assign(step=_step_of(bw["step"]) if "step" in bw else pd.NA)
        keys = ["step", "name", "group"]
        has_sdma = bw.groupby(keys, dropna=False)["transport"].transform(
            lambda s: (s == "SDMA").any())
        parts = bw[(bw["transport"] == "RDMA") | ((bw["transport"] == "SDMA") & has_sdma)
                   | (bw["transport"].isin(["HCCS", "PCIE", "SIO"]) & ~has_sdma)]
        sums = parts.groupby(keys, dropna=False)["transit_size_mb"].sum(min_count=1)
        m = out[keys].merge(sums.reset_index(), on=keys, how="left")
        out["transit_size_mb"] = m["transit_size_mb"].to_numpy()
    return out


def _communication_links(db: DbFile) -> pd.DataFrame | None:
    m = db.select("CommAnalyzerMatrix", D.COMM_ANALYZER_MATRIX)
    if m is None:
        return None
    # A row without both ranks (a damaged or half-written db) is not a link.
    m = m[m["src_rank"].notna().to_numpy(dtype=bool) & m["dst_rank"].notna().to_numpy(dtype=bool)]
    m = m.reset_index(drop=True)
    op = m["op"].astype(str)
    group = m["group"].fillna("").astype(str) if "group" in m else pd.Series([""] * len(m))
    key = np.where(group != "", op + "@" + group, op)
    aggregate = pd.Series(key).str.contains(r"-total(?:@|$)|^total$", regex=True)
    op_name = m["op_name"].fillna("").astype(str) if "op_name" in m else pd.Series([""] * len(m))
    # Without the db's op_name: the entry itself, unless it is an aggregate row (JSON reader).
    op_name = op_name.where(op_name != "", np.where(aggregate, "", op))
    kind = _kinds(m.get("kind"), op_name)
    kind = np.where((m["kind"].fillna("") == "").to_numpy() if "kind" in m else True,
                    np.where(op_name == "", "", kind), kind)
    return pd.DataFrame({
        "step": _step_of(m["step"]) if "step" in m else pd.array([pd.NA] * len(m), "Int64"),
        "op": key,
        "src_rank": m["src_rank"].astype(np.int64),
        "dst_rank": m["dst_rank"].astype(np.int64),
        "transport": m["transport"].fillna("").astype(str) if "transport" in m else "",
        "transit_size_mb": m.get("transit_size_mb"),
        "transit_ns": _ms_ns(m["transit_ms"]) if "transit_ms" in m else 0,
        "bandwidth_gbps": m.get("bandwidth_gbps"),
        "op_name": op_name,
        "group": group,
        "kind": kind,
        "aggregate": aggregate.to_numpy(),
    })


# --------------------------------------------------------------------------- timeline

HOST_PROCESS, CANN_PROCESS = "Python", "CANN"
DEVICE_PROCESS, COMM_PROCESS = "Ascend Hardware", "Communication"


def read_timeline(ctx, source: DbSource) -> None:
    """Tracks, slices and flows from the db, when the span has no trace file."""
    if ctx.profile.has("slices") or source.get("main") is None:
        return
    source.guarded("main", _timeline, ctx, source.device_id)


def _timeline(db: DbFile, ctx, device_id) -> None:
    from .trace_tables import assign_depth

    parts, flows_src = [], []
    track_rows: list[dict] = []
    keys: dict[tuple, int] = {}

    def tracks_for(process, kind, ids: pd.DataFrame, thread_name, sort, dev):
        """Track ids for the (pid, tid) pairs of `ids` (added as needed)."""
        tid_col = []
        for pid, tid in zip(ids["pid"].tolist(), ids["tid"].tolist()):
            k = (process, pid, tid)
            if k not in keys:
                keys[k] = len(track_rows)
                track_rows.append({"track_id": keys[k], "process": process,
                                   "thread": thread_name(tid), "pid": str(pid), "tid": str(tid),
                                   "kind": kind, "process_sort": sort, "thread_sort": 0,
                                   "device_id": dev})
            tid_col.append(keys[k])
        return np.asarray(tid_col, np.int32)

    def add(df, process, kind, thread_name, sort, dev, pid_col, tid_col):
        if df is None or len(df) == 0:
            return None
        rows = pd.DataFrame({"pid": pid_col, "tid": tid_col})
        pairs = rows.drop_duplicates().reset_index(drop=True)
        pairs["track"] = tracks_for(process, kind, pairs, thread_name, sort, dev)
        track = rows.merge(pairs, on=["pid", "tid"], how="left")["track"].to_numpy(np.int32)
        start = df["start_ns"].astype(np.int64).to_numpy()
        parts.append(pd.DataFrame({"track_id": track, "start_ns": start,
                                   "dur_ns": np.maximum(df["end_ns"].astype(np.int64)
                                                        .to_numpy() - start, 0),
                                   "name": df["name"].fillna("").to_numpy(),
                                   "cat": kind, "args_row": np.full(len(df), -1, np.int64)}))
        return track, start

    gtid = lambda df: df["global_tid"].fillna(0).astype(np.int64).to_numpy()  # noqa: E731
    host = None
    if db.usable("PYTORCH_API", D.PYTORCH_API) is not None:
        host = db.select("PYTORCH_API", D.PYTORCH_API,
                         names=["start_ns", "end_ns", "global_tid", "connection_id", "name"])
        g = gtid(host)
        host_at = add(host, HOST_PROCESS, "host", lambda t: f"Thread {t}", 0, None,
                      g >> 32, g & 0xFFFFFFFF)
        if host_at is not None and "connection_id" in host:
            flows_src.append(("async_npu", host["connection_id"], host_at, True))
    if db.usable("CANN_API", D.CANN_API) is not None:
        cann = db.select("CANN_API", D.CANN_API)
        g = gtid(cann) if "global_tid" in cann else np.zeros(len(cann), np.int64)
        at = add(cann, CANN_PROCESS, "cann", lambda t: f"Thread {t}", 7, None,
                 g >> 32, g & 0xFFFFFFFF)
        if at is not None and "connection_id" in cann:
            flows_src.append(("HostToDevice", cann["connection_id"], at, False))
    task_at, task_conn = None, None
    if db.usable("TASK", D.TASK) is not None:
        found = db.usable("TASK", D.TASK)
        info = db.usable("COMPUTE_TASK_INFO", D.COMPUTE_TASK_INFO)
        joins: list[str] = []
        proj = db.project("TASK", D.TASK, "t", found, joins)
        name_expr = None
        if info is not None:
            cproj = db.project("COMPUTE_TASK_INFO", D.COMPUTE_TASK_INFO, "c", info, joins,
                               ["name"])
            joins.insert(0, f'LEFT JOIN COMPUTE_TASK_INFO c ON c."{info["global_task_id"]}" = '
                            f't."{found["global_task_id"]}"')
            name_expr = cproj[0][0]
        kinds = {n: k for _, n, k in proj}
        cols = [f'{e} AS "{n}"' for e, n, _ in proj]
        if name_expr:
            tt = next(e for e, n, _ in proj if n == "task_type") if "task_type" in found else "''"
            cols.append(f"COALESCE({name_expr}, {tt}) AS name")
        elif "task_type" in found:
            cols.append(next(f"{e} AS name" for e, n, _ in proj if n == "task_type"))
        kinds["name"] = "text"
        where, params = _device_filter(db, "TASK", device_id)
        tasks = db.query(f"SELECT {', '.join(cols)} FROM TASK t {' '.join(joins)} {where}",
                         kinds, params)
        if "name" not in tasks:
            tasks["name"] = ""
        dev = tasks["device_id"].fillna(-1).astype(np.int64).to_numpy() if "device_id" in \
            tasks else np.full(len(tasks), device_id if device_id is not None else 0, np.int64)
        stream = tasks["stream_id"].fillna(-1).astype(np.int64).to_numpy() if "stream_id" in \
            tasks else np.zeros(len(tasks), np.int64)
        task_at = add(tasks, DEVICE_PROCESS, "device", lambda s: f"Stream {s}", 14,
                      device_id, dev, stream)
        if task_at is not None and "connection_id" in tasks:
            task_conn = tasks["connection_id"]
    if db.usable("COMMUNICATION_OP", D.COMMUNICATION_OP) is not None:
        where, params = _device_filter(db, "COMMUNICATION_OP", device_id)
        comm = db.select("COMMUNICATION_OP", D.COMMUNICATION_OP, where, params)
        groups = comm["group"].fillna("").astype(str).tolist() if "group" in comm \
            else [""] * len(comm)
        dev = comm["device_id"].fillna(-1).astype(np.int64).tolist() if "device_id" in comm \
            else [0] * len(comm)
        add(comm, COMM_PROCESS, "communication", lambda g: f"Group {g} Communication", 16,
            device_id, dev, groups)
    if not parts:
        return
    slices = assign_depth(pd.concat(parts, ignore_index=True))
    tracks = pd.DataFrame(track_rows)
    tracks["device_id"] = tracks["device_id"].astype("Int64")
    flows = _flows(db, flows_src, task_at, task_conn)
    ctx.set_trace_tables(tracks, slices, flows, pd.DataFrame())


def _flows(db: DbFile, sources, task_at, task_conn) -> pd.DataFrame:
    """Flow endpoints: s at the host call, f at the task it launched (same connection)."""
    if task_at is None or task_conn is None:
        return pd.DataFrame()
    t_track, t_start = task_at
    tasks = pd.DataFrame({"connection_id": task_conn.to_numpy(), "t_track": t_track,
                          "t_ts": t_start}).dropna(subset=["connection_id"])
    links = None
    if db.usable("CONNECTION_IDS", D.CONNECTION_IDS) is not None:
        links = db.select("CONNECTION_IDS", D.CONNECTION_IDS)
    rows = []
    for name, conn, (track, start), via_links in sources:
        src = pd.DataFrame({"id": conn.to_numpy(), "s_track": track, "s_ts": start}) \
            .dropna(subset=["id"])
        if via_links:
            if links is None:
                continue
            src = src.merge(links, on="id").rename(columns={"connection_id": "cid"})
        else:
            src = src.rename(columns={"id": "cid"})
        pairs = src.merge(tasks, left_on="cid", right_on="connection_id")
        if len(pairs) == 0:
            continue
        fid = (name + ":" + pairs["cid"].astype("Int64").astype(str)).to_numpy()
        rows.append(pd.DataFrame({"flow_id": fid, "name": name, "cat": name, "phase": "s",
                                  "track_id": pairs["s_track"].to_numpy(),
                                  "ts_ns": pairs["s_ts"].to_numpy()}))
        rows.append(pd.DataFrame({"flow_id": fid, "name": name, "cat": name, "phase": "f",
                                  "track_id": pairs["t_track"].to_numpy(),
                                  "ts_ns": pairs["t_ts"].to_numpy()}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


# --------------------------------------------------------------------------- reader steps

def _text_present(folder: str) -> bool:
    return any(os.path.exists(os.path.join(folder, n))
               for names in D.TEXT_SOURCE.values() for n in names)


def _framework_source(ctx) -> DbSource | None:
    main, side = find_db_files(ctx.base, ctx.dialect.producer)
    if main is None and side is None:
        return None
    source = DbSource(ctx, main, side, ctx.span.device_id)
    if not _text_present(ctx.base):
        source.prefix = "only SQLite export (export_type=db) found; it cannot be read: "
    return source


def read_framework_db(ctx) -> None:
    """torch_npu / MindSpore reader step: the view tables the text output did not give."""
    source = _framework_source(ctx)
    if source is None:
        return
    try:
        read_views(ctx, source)
    finally:
        source.close()


def has_framework_db(ctx) -> bool:
    return find_db_files(ctx.base, ctx.dialect.producer)[0] is not None


def read_framework_db_timeline(ctx) -> None:
    """torch_npu / MindSpore timeline step: the db's timeline when there is no trace file."""
    if ctx.path("trace_view.json") or ctx.path("trace_view.json.gz"):
        return
    source = _framework_source(ctx)
    if source is None:
        return
    try:
        read_timeline(ctx, source)
    finally:
        source.close()


def read_msprof_db(ctx) -> None:
    """msprof reader step: `PROF_*/msprof_{ts}.db` (+ `analyze/communication_analyzer.db`)
    for the tables and the timeline the text export did not give."""
    main, _ = find_db_files(ctx.span.root, "msprof")
    side = os.path.join(ctx.span.root, "analyze", D.DB_FILES["msprof"][1])
    side = side if os.path.isfile(side) else None
    if main is None and side is None:
        return
    source = DbSource(ctx, main, side, ctx.device_id)
    try:
        read_views(ctx, source)
        read_timeline(ctx, source)
    finally:
        source.close()
