"""MindSpore data pipeline (MindData) files -> the `pipeline_*` tables (docs/formats.md §2.22,
§2.23).

Two entry steps, one per reader that meets these files:
- `read_legacy` (readers/mindspore_legacy.py, MindSpore <= 2.3 `profiler*/`, `{id}` = device):
  `minddata_pipeline_raw_{id}.csv`, else `pipeline_profiling_{id}.json`; CPU from
  `minddata_cpu_utilization_{id}.json`; the host -> device queue from
  `device_queue_profiling_{id}.txt` (sink mode) else `dataset_iterator_profiling_{id}.txt`
  (feed mode); the chip's get_next queue from `minddata_aicpu_{id}.txt` (Ascend, µs) else
  `minddata_getnext_profiling_{id}.txt` (GPU, ns).
- `read_ascend_ms` (readers/torch_npu.py, MindSpore 2.x `*_ascend_ms/ASCEND_PROFILER_OUTPUT`):
  `minddata_pipeline_raw_*.csv`, `minddata_pipeline_summary_*.json` (else `.csv`),
  `dataset.csv`, and the GetNext rows of `data_preprocess.csv`.

Each runs its file steps with `run_steps`, so one unusable file is one `FileError` and the
other files still load. What is computed here is only what the files state in another
form (queue usage = mean size / capacity, the share of empty samples, an op's CPU = mean
user + mean sys); judging the pipeline is analysis/data_pipeline.py.
"""
from __future__ import annotations

import csv
import json
import math
import os
import re

import numpy as np
import pandas as pd

from . import columns as C
from .context import ReadContext, run_steps
from .us_text import float_to_int64, to_int64

_ID_LIST = re.compile(r"-?\d+")


# --------------------------------------------------------------------------- entry steps

def read_legacy(ctx: ReadContext) -> None:
    """The pipeline files of a MindSpore <= 2.3 profiler dir; `ctx.id` is the device id."""
    state = _State(ctx, str(getattr(ctx, "id", 0)))
    run_steps(ctx, [state.legacy_ops, state.legacy_cpu, state.device_queue, state.get_next,
                    state.store])


def read_ascend_ms(ctx: ReadContext) -> None:
    """The pipeline files of a MindSpore 2.x ASCEND_PROFILER_OUTPUT folder (`ctx.base`)."""
    state = _State(ctx, None)
    run_steps(ctx, [state.ms_raw, state.ms_summary, state.ms_dataset, state.ms_preprocess,
                    state.store])


class _State:
    """What the file steps of one span hand to each other, stored by `store`."""

    def __init__(self, ctx: ReadContext, dev: str | None):
        self.ctx = ctx
        self.dev = dev
        self.ops: pd.DataFrame | None = None
        self.op_cpu: dict[int, float] = {}
        self.queues: list[pd.DataFrame] = []
        self.cpu: list[pd.DataFrame] = []
        self.stages: pd.DataFrame | None = None
        self.summary: dict[str, float] = {}
        self.summary_ops: pd.DataFrame | None = None

    # ---- MindSpore <= 2.3 --------------------------------------------------------------
    def legacy_ops(self, ctx: ReadContext) -> None:
        raw = ctx.path(f"minddata_pipeline_raw_{self.dev}.csv")
        if raw is not None:
            self.ops = _raw_ops(ctx, raw)
            if self.ops is not None:
                return
        js = ctx.path(f"pipeline_profiling_{self.dev}.json")
        if js is not None:
            doc = ctx.json(js)
            if doc is not None:
                self.ops = _profiling_ops(ctx, js, doc)

    def legacy_cpu(self, ctx: ReadContext) -> None:
        path = ctx.path(f"minddata_cpu_utilization_{self.dev}.json")
        if path is None:
            return
        doc = ctx.json(path)
        if doc is None:
            return
        frames = []
        for scope, key in (("device", "device_info"), ("process", "process_info")):
            info = doc.get(key)
            if isinstance(info, dict):
                frames.append(_cpu_frame(scope, None, info))
        op_info = doc.get("op_info")
        if isinstance(op_info, list):
            for op in op_info:
                if not isinstance(op, dict) or not isinstance(op.get("metrics"), dict):
                    continue
                op_id = _int(op.get("op_id"))
                if op_id is None or op_id < 0:  # -1: the whole pipeline, not an op
                    continue
                f = _cpu_frame("op", op_id, op["metrics"])
                frames.append(f)
                if len(f):
                    self.op_cpu[op_id] = float(np.nanmean(f["user_pct"]) + np.nanmean(f["sys_pct"]))
        frames = [f for f in frames if len(f)]
        if not frames:
            ctx.error(path, "no CPU utilization samples (device_info / op_info metrics)")
            return
        self.cpu.extend(frames)

    def device_queue(self, ctx: ReadContext) -> None:
        for name, queue in ((f"device_queue_profiling_{self.dev}.txt", "device_queue"),
                            (f"dataset_iterator_profiling_{self.dev}.txt", "dataset_iterator")):
            path = ctx.path(name)
            if path is not None:
                df = _queue_records(ctx, path, queue)
                if df is not None:
                    self.queues.append(df)
                return  # MindInsight reads the iterator file only without a device queue

    def get_next(self, ctx: ReadContext) -> None:
        for name, us in ((f"minddata_aicpu_{self.dev}.txt", True),
                         (f"minddata_getnext_profiling_{self.dev}.txt", False)):
            path = ctx.path(name)
            if path is not None:
                df = _get_next_records(ctx, path, timestamps_us=us)
                if df is not None:
                    self.queues.append(df)
                return

    # ---- MindSpore 2.x ----------------------------------------------------------------
    def ms_raw(self, ctx: ReadContext) -> None:
        path = _pick(ctx, r"^minddata_pipeline_raw_(\d+)\.csv$")
        if path is not None:
            self.ops = _raw_ops(ctx, path)

    def ms_summary(self, ctx: ReadContext) -> None:
        path = _pick(ctx, r"^minddata_pipeline_summary_(\d+)\.json$")
        doc = None
        if path is not None:
            doc = ctx.json(path)
        else:
            path = _pick(ctx, r"^minddata_pipeline_summary_(\d+)\.csv$")
            if path is not None:
                doc = _summary_csv(ctx, path)
        if doc is None:
            return
        ctx.current = path
        self.summary_ops = _summary_ops(doc)
        if self.summary_ops is not None:
            for op_id, cpu in zip(self.summary_ops["op_id"], self.summary_ops["cpu_pct"]):
                if not pd.isna(cpu):
                    self.op_cpu.setdefault(int(op_id), float(cpu))
        for key in ("per_pipeline_time", "per_push_queue_time", "per_batch_time"):
            v = _scalar(doc.get(key))
            if v is not None:
                self.summary[key] = v

    def ms_dataset(self, ctx: ReadContext) -> None:
        df = ctx.csv("dataset.csv", required=C.required(C.DATASET))
        if df is None:
            return
        c = C.resolve(df, C.DATASET)

        def col(name, kind):
            if name not in c:
                return (np.zeros(len(df), np.int64) if kind == "int" else
                        np.full(len(df), np.nan) if kind == "float" else [""] * len(df))
            s = df[c[name]]
            if kind == "text":
                return s.fillna("").astype(str).to_numpy(dtype=object)
            v = pd.to_numeric(s, errors="coerce")
            return float_to_int64(v) if kind == "int" else v.to_numpy()

        self.stages = pd.DataFrame({
            "operation": col("operation", "text"), "stage": col("stage", "text"),
            "occurrences": col("occurrences", "int"), "avg_us": col("avg_us", "float"),
            "custom_info": col("custom_info", "text")})

    def ms_preprocess(self, ctx: ReadContext) -> None:
        df = ctx.csv("data_preprocess.csv", required=C.required(C.DATA_PREPROCESS))
        if df is None:
            return
        c = C.resolve(df, C.DATA_PREPROCESS)
        rows = df[df[c["node"]].fillna("").astype(str).str.contains("GetNext", regex=False)]
        if not len(rows):
            return
        if "total_us" in c:
            ms = pd.to_numeric(rows[c["total_us"]], errors="coerce").to_numpy() / 1000.0
        elif "total_ms" in c:
            ms = pd.to_numeric(rows[c["total_ms"]], errors="coerce").to_numpy(dtype=np.float64)
        else:
            return
        ts = pd.to_numeric(rows[c["ts_us"]], errors="coerce").round() \
            if "ts_us" in c else pd.Series([np.nan] * len(rows))
        self.queues.append(pd.DataFrame({
            "queue": "get_next", "batch": pd.array(np.arange(1, len(rows) + 1), dtype="Int64"),
            "record": "wait_ms", "value": ms, "capacity": pd.array([pd.NA] * len(rows), dtype="Int64"),
            "ts": to_int64(ts.to_numpy())}))

    # ---- both --------------------------------------------------------------------------
    def store(self, ctx: ReadContext) -> None:
        p = ctx.profile
        ops = self.ops if self.ops is not None else self.summary_ops
        if ops is not None and len(ops):
            ops = ops.copy()
            if self.summary_ops is not None and ops is not self.summary_ops:
                # The summary states the empty-queue share MindSpore computed from samples the
                # raw CSV does not list in 2.x; take it where the CSV gave none.
                emp = dict(zip(self.summary_ops["op_id"], self.summary_ops["queue_empty_pct"]))
                miss = ops["queue_empty_pct"].isna()
                ops.loc[miss, "queue_empty_pct"] = ops.loc[miss, "op_id"].map(emp)
            ops["cpu_pct"] = ops["op_id"].map(self.op_cpu).astype("float64")
            p.set("pipeline_ops", ops)
        if self.queues:
            p.set("pipeline_queues", pd.concat(self.queues, ignore_index=True))
        if self.cpu:
            p.set("pipeline_cpu", pd.concat(self.cpu, ignore_index=True))
        if self.stages is not None and len(self.stages):
            p.set("pipeline_stages", self.stages)
        if self.summary:
            p.set("pipeline_summary", pd.DataFrame({"key": list(self.summary),
                                                    "value": list(self.summary.values())}))


# --------------------------------------------------------------------------- ops

def _raw_ops(ctx: ReadContext, path: str) -> pd.DataFrame | None:
    """minddata_pipeline_raw: one row per queued op (the root may have no queue)."""
    df = ctx.read_csv_file(path, required=C.required(C.MINDDATA_PIPELINE_RAW))
    if df is None:
        return None
    c = C.resolve(df, C.MINDDATA_PIPELINE_RAW)
    op_id = pd.Series(to_int64(df[c["op_id"]]), index=df.index)  # (1e30: no id)
    bad = op_id.isna()
    if bad.any():
        ctx.error(path, f"{int(bad.sum())} row(s) without an integer op_id ignored")
        df, op_id = df[~bad], op_id[~bad]
    if not len(df):
        ctx.error(path, "no pipeline ops")
        return None

    def num(name, integer=False):
        if name not in c:
            return pd.Series([np.nan] * len(df), index=df.index)
        return pd.to_numeric(df[c[name]], errors="coerce")

    sizes = (df[c["queue_sizes"]].tolist() if "queue_sizes" in c else [None] * len(df))
    samples = [_id_list(s) for s in sizes]
    n = [len(s) if s else pd.NA for s in samples]
    empty = [100.0 * sum(1 for x in s if x == 0) / len(s) if s else np.nan for s in samples]
    avg = num("queue_avg_size")
    cap = num("queue_capacity")
    usage = num("queue_usage_rate") * 100.0
    # A file without the rate (or the average) still has what it is made of.
    calc_avg = pd.Series([float(np.mean(s)) if s else np.nan for s in samples], index=df.index)
    avg = avg.fillna(calc_avg)
    usage = usage.fillna(100.0 * avg / cap.where(cap > 0))
    children = (df[c["children_ids"]].tolist() if "children_ids" in c else [None] * len(df))
    return pd.DataFrame({
        "op_id": op_id.astype(np.int64).to_numpy(),
        "op_type": df[c["op_type"]].fillna("").astype(str).to_numpy(dtype=object),
        "num_workers": to_int64(num("num_workers")),
        "parent_id": to_int64(num("parent_id")),
        "children_ids": [_id_text(_id_list(x)) for x in children],
        "queue_samples": pd.array(n, dtype="Int64"),
        "queue_avg_size": avg.to_numpy(dtype=np.float64),
        "queue_capacity": to_int64(cap.to_numpy()),
        "queue_usage_pct": usage.to_numpy(dtype=np.float64),
        "queue_empty_pct": np.asarray(empty, dtype=np.float64),
    })


def _profiling_ops(ctx: ReadContext, path: str, doc: dict) -> pd.DataFrame | None:
    """pipeline_profiling json -> the ops MindSpore's parser would write: breadth first from
    op 0; an op without an output queue (inline) is dropped and its children are attached
    to its parent. The root is kept even without a queue."""
    info = doc.get("op_info")
    if not isinstance(info, list):
        ctx.error(path, "no 'op_info' list")
        return None
    ops = {}
    for op in info:
        if isinstance(op, dict) and _int(op.get("op_id")) is not None:
            ops[_int(op["op_id"])] = op
    if 0 not in ops:
        ctx.error(path, "no root op (op_id 0)")
        return None

    def queue(op):
        m = op.get("metrics")
        q = m.get("output_queue") if isinstance(m, dict) else None
        return q if isinstance(q, dict) else None

    def kids(op):
        ch = op.get("children")
        return [i for i in (_int(x) for x in ch) if i is not None] if isinstance(ch, list) else []

    def queued_below(op_id, seen):
        """The nearest queued descendants of op `op_id` (inline ops looked through)."""
        out = []
        for k in kids(ops[op_id]):
            if k not in ops or k in seen:
                continue
            seen.add(k)
            out.extend([k] if queue(ops[k]) is not None else queued_below(k, seen))
        return out

    rows, parent = [], {0: None}
    order, seen = [0], {0}
    i = 0
    while i < len(order):
        op_id = order[i]
        i += 1
        children = queued_below(op_id, seen)
        for k in children:
            parent[k] = op_id
        order.extend(children)
        op = ops[op_id]
        q = queue(op) or {}
        sizes = [x for x in (_num(v) for v in q.get("size") or []) if x is not None]
        cap = _int(q.get("length"))
        avg = float(np.mean(sizes)) if sizes else np.nan
        rows.append({
            "op_id": op_id, "op_type": str(op.get("op_type", "")),
            "num_workers": _int(op.get("num_workers")), "parent_id": parent[op_id],
            "children_ids": _id_text(children), "queue_samples": len(sizes) if sizes else None,
            "queue_avg_size": avg, "queue_capacity": cap,
            "queue_usage_pct": 100.0 * avg / cap if sizes and cap else np.nan,
            "queue_empty_pct": (100.0 * sum(1 for x in sizes if x == 0) / len(sizes)
                                if sizes else np.nan)})
    df = pd.DataFrame(rows)
    for col in ("num_workers", "parent_id", "queue_samples", "queue_capacity"):
        df[col] = pd.array([pd.NA if v is None or (isinstance(v, float) and math.isnan(v))
                            else int(v) for v in df[col]], dtype="Int64")
    return df


def _summary_ops(doc: dict) -> pd.DataFrame | None:
    """The per-op lists of minddata_pipeline_summary (aligned by position)."""
    ids = doc.get("op_ids")
    if not isinstance(ids, list) or not ids:
        return None
    n = len(ids)

    def lst(key):
        v = doc.get(key)
        return list(v) + [None] * (n - len(v)) if isinstance(v, list) else [None] * n

    names = lst("op_names")
    workers, avg, util, empty = lst("num_workers"), lst("queue_average_size"), \
        lst("queue_utilization_pct"), lst("queue_empty_freq_pct")
    children, parents, cpu = lst("children_ids"), lst("parent_id"), lst("avg_cpu_pct")

    def na(v):  # -1 means "not available" in MindSpore's summary
        x = _num(v)
        return None if x is None or x < 0 else x

    rows = []
    for i in range(n):
        a, u = na(avg[i]), na(util[i])
        ratio = a * 100.0 / u if a is not None and u else math.nan
        cap = _int(round(ratio)) if math.isfinite(ratio) else None  # (_int: None past int64)
        p = _int(parents[i])
        rows.append({
            "op_id": _int(ids[i]), "op_type": str(names[i] or ""),
            "num_workers": _int(workers[i]), "parent_id": p if p is not None and p >= 0 else None,
            "children_ids": _id_text(_id_list(children[i])), "queue_samples": None,
            "queue_avg_size": a if a is not None else np.nan, "queue_capacity": cap,
            "queue_usage_pct": u if u is not None else np.nan,
            "queue_empty_pct": na(empty[i]) if na(empty[i]) is not None else np.nan,
            "cpu_pct": na(cpu[i]) if na(cpu[i]) is not None else np.nan})
    df = pd.DataFrame(rows)
    df = df[df["op_id"].notna()].reset_index(drop=True)
    df["op_id"] = df["op_id"].astype(np.int64)
    for col in ("num_workers", "parent_id", "queue_samples", "queue_capacity"):
        df[col] = pd.array([pd.NA if v is None or (isinstance(v, float) and math.isnan(v))
                            else int(v) for v in df[col]], dtype="Int64")
    return df


def _summary_csv(ctx: ReadContext, path: str) -> dict | None:
    """minddata_pipeline_summary_*.csv: one key per row (`key,v1,v2,...`), as MindSpore
    writes it; a file with the keys as its header row is read too."""
    ctx.current = path
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = [r for r in csv.reader(fh) if r]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        ctx.error(path, f"cannot read file: {exc}")
        return None
    if not rows:
        ctx.error(path, "file is empty")
        return None
    if "op_ids" in rows[0][1:] or "pipeline_ops" in rows[0][1:]:  # keys as header
        keys = rows[0]
        return {k: [_cell(r[i]) for r in rows[1:] if i < len(r)] for i, k in enumerate(keys)}
    return {r[0].strip(): [_cell(x) for x in r[1:]] for r in rows}


# --------------------------------------------------------------------------- queues, CPU

def _whitespace_table(ctx: ReadContext, path: str, width: int) -> pd.DataFrame | None:
    ctx.current = path
    try:
        if os.path.getsize(path) == 0:
            ctx.error(path, "file is empty")
            return None
        df = pd.read_csv(path, sep=r"\s+", header=None, names=list(range(width)),
                         dtype=str, engine="c", on_bad_lines="skip", comment=None)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        ctx.error(path, f"cannot read file: {exc}")
        return None
    return df


def _queue_records(ctx: ReadContext, path: str, queue: str) -> pd.DataFrame | None:
    """`type extra batch value [timestamp]` lines: type 0 a time (extra 0 get, 1 push,
    2 batch; value ms), type 1 the queue size (extra = capacity, value = rows)."""
    df = _whitespace_table(ctx, path, 5)
    if df is None:
        return None
    num = df.apply(pd.to_numeric, errors="coerce")
    ok = num[0].isin([0, 1]) & num[1].notna() & num[2].notna() & num[3].notna()
    if (~ok).sum():
        ctx.error(path, f"{int((~ok).sum())} malformed line(s) ignored")
    num = num[ok]
    if not len(num):
        ctx.error(path, "no queue or time records")
        return None
    is_size = (num[0] == 1).to_numpy()
    kind = np.where(is_size, "size", pd.Series(num[1]).map(
        {0: "get_ms", 1: "push_ms", 2: "batch_ms"}).fillna("").to_numpy())
    keep = kind != ""
    cap = np.where(is_size, num[1].to_numpy(), np.nan)
    return pd.DataFrame({
        "queue": queue, "batch": to_int64(num[2].to_numpy()),
        "record": kind, "value": num[3].to_numpy(dtype=np.float64),
        "capacity": to_int64(cap),
        "ts": to_int64(num[4].to_numpy()),
    })[keep].reset_index(drop=True)


def _get_next_records(ctx: ReadContext, path: str, timestamps_us: bool) -> pd.DataFrame | None:
    """`GetNext... start end queue_size` lines -> a size and a wait_ms record per batch."""
    df = _whitespace_table(ctx, path, 4)
    if df is None:
        return None
    df = df[df[0].fillna("").str.startswith("GetNext")]
    if not len(df):
        ctx.error(path, "no GetNext lines")
        return None
    start = pd.to_numeric(df[1], errors="coerce").to_numpy(dtype=np.float64)
    end = pd.to_numeric(df[2], errors="coerce").to_numpy(dtype=np.float64)
    size = pd.to_numeric(df[3], errors="coerce").to_numpy(dtype=np.float64)
    per_ms = 1e3 if timestamps_us else 1e6
    ts = np.round(start)
    batch = pd.array(np.arange(1, len(df) + 1), dtype="Int64")
    na = pd.array([pd.NA] * len(df), dtype="Int64")
    ts_col = to_int64(ts)
    parts = [pd.DataFrame({"queue": "get_next", "batch": batch, "record": "wait_ms",
                           "value": (end - start) / per_ms, "capacity": na, "ts": ts_col})]
    if not np.isnan(size).all():
        parts.insert(0, pd.DataFrame({"queue": "get_next", "batch": batch, "record": "size",
                                      "value": size, "capacity": na, "ts": ts_col}))
    return pd.concat(parts, ignore_index=True)


def _cpu_frame(scope: str, op_id: int | None, metrics: dict) -> pd.DataFrame:
    def series(key):
        v = metrics.get(key)
        return [_num(x) for x in v] if isinstance(v, list) else []

    cols = {k: series(f"{k}_utilization") for k in ("user", "sys", "io", "idle")}
    n = max(len(cols["user"]), len(cols["sys"]))
    if n == 0:
        return pd.DataFrame()

    def pad(v):
        return np.array([np.nan if x is None else x for x in v] + [np.nan] * (n - len(v)),
                        dtype=np.float64)[:n]

    return pd.DataFrame({"scope": scope, "op_id": pd.array([op_id] * n, dtype="Int64"),
                         "sample": np.arange(n, dtype=np.int64),
                         **{f"{k}_pct": pad(v) for k, v in cols.items()}})


# --------------------------------------------------------------------------- helpers

def _pick(ctx: ReadContext, pattern: str) -> str | None:
    """The file of `ctx.base` matching `pattern` whose number is the span's device (else the
    first in name order)."""
    rx = re.compile(pattern)
    try:
        names = sorted(n for n in os.listdir(ctx.base) if rx.match(n))
    except OSError:
        return None
    dev = getattr(ctx.span, "device_id", None)
    names.sort(key=lambda n: rx.match(n).group(1) != str(dev))
    for n in names:
        p = ctx.path(n)
        if p is not None:
            return p
    return None


def _id_list(text) -> list[int]:
    """"[2, 3]" (or a list, or "2;3") -> [2, 3]; empty / missing -> []."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return []
    if isinstance(text, (list, tuple)):
        return [int(x) for x in (_num(v) for v in text) if x is not None]
    if isinstance(text, (int, float)):
        return [int(text)]
    return [int(x) for x in _ID_LIST.findall(str(text))]


def _id_text(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)


def _num(v) -> float | None:
    if isinstance(v, bool):
        return None
    try:
        x = float(v) if isinstance(v, (int, float)) else float(str(v).strip())
    except (TypeError, ValueError, OverflowError):  # (an integer beyond float's range)
        return None
    return x if math.isfinite(x) else None


def _int(v) -> int | None:
    """An id or count; None when it is none or beyond int64 (damage, e.g. 1e300)."""
    x = _num(v)
    return int(x) if x is not None and abs(x) < 2.0 ** 63 else None


def _scalar(v) -> float | None:
    """A summary figure: a number or a one-element list; -1 (not available) -> None."""
    if isinstance(v, list):
        vals = [x for x in (_num(e) for e in v) if x is not None]
        v = float(np.mean(vals)) if vals else None
    x = _num(v)
    return None if x is None or x < 0 else x


def _cell(text: str):
    """A summary CSV cell: a number, a JSON list ("[1, 2]"), or text."""
    t = text.strip()
    if t.startswith("["):
        try:
            return json.loads(t)
        except ValueError:
            return _id_list(t)
    x = _num(t)
    return x if x is not None else t
