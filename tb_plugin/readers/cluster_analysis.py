"""msprof-analyze's `cluster_analysis_output/` -> one `Profile` per rank (docs/formats.md §2.26).

Discovery makes the directory a run with one worker `rank{N}` per rank the cluster tables
name (span `cluster`); this reader fills, for `span.rank`, exactly the tables the
per-rank summary of the distributed view is made from (`analysis.rank_summary.
rank_summary`), in the shapes the torch_npu reader gives them, so the distributed view of
a cluster-analysis run and of the raw ranks it was computed from come out of the same code:

steps                cluster_step_trace_time.csv rows `Type == rank`, `Index == rank`
                     (else ClusterStepTraceTime of cluster_analysis.db): the per-rank
                     step_trace_time.csv columns, µs -> ns; total_ns = computing +
                     communication_not_overlapped + free (as in torch_npu.py); start/end 0.
communication_ops    cluster_communication.json `{rank_set: {step: {op@group: {rank:
                     info}}}}` (else ClusterCommAnalyzerTime + ClusterCommAnalyzerBandwidth,
                     or the recipe's ClusterCommunicationTime/Bandwidth): this rank's `info`
                     entries, each read like a communication.json op (same row builder as
                     torch_npu.py); `Total Op Info` entries are sums and are skipped; kind
                     from the op name (send / receive / batchsendrecv -> p2p).
communication_links  cluster_communication_matrix.json (else ClusterCommAnalyzerMatrix /
                     ClusterCommunicationMatrix): the `Total Op Info@group` links (already
                     merged over ranks, global rank ids), each attributed to its source rank
                     and marked `aggregate`; without Total entries every link is kept
                     (non-aggregate). Sum over ranks = the cluster's matrix.
Source rule: the text file when present, else the db table (msprof-analyze writes one or
the other, by `--export_type`). A missing file leaves its table empty; a file that cannot
be read is a per-file error (the other tables still load).

Cost: the JSON files hold every rank; each reader process parses one file once (memoised
by path, size and mtime) and keeps only the rows grouped by rank.
"""
from __future__ import annotations

import os
import re
import sqlite3

import numpy as np
import pandas as pd

from ..discovery import cluster_rank
from ..lru import LRU
from ..model import Profile, ProfileMeta
from ..span_source import SpanSource
from ..step_categories import NPU_STEP_CATEGORIES
from . import columns as C
from .context import ReadContext, run_steps
from .column_conversions import DIALECTS, convert
from .communication_json import op_row, ops_table, transit_size
from .json_numbers import int64_or_none, ms_to_ns, number
from .us_text import us_text_to_ns

STEP_CSV = "cluster_step_trace_time.csv"
COMM_JSON = "cluster_communication.json"
MATRIX_JSON = "cluster_communication_matrix.json"
DB = "cluster_analysis.db"
TOTAL_OP = "Total Op Info"
MAX_JSON_BYTES = 4 << 30
_STEP_DIGITS = re.compile(r"(\d+)")
_by_rank_memo: LRU = LRU(4)


class _Ctx(ReadContext):
    def __init__(self, span: SpanSource, work_dir: str | None):
        meta = ProfileMeta(producer="cluster_analysis", device="npu", rank=span.rank)
        super().__init__(span, work_dir, Profile(meta=meta))
        self.rank = span.rank


def read(span: SpanSource, work_dir: str | None = None) -> Profile:
    return run_steps(_Ctx(span, work_dir), [_read_steps, _read_communication, _read_matrix])


def _step_id(v) -> int | None:
    """`5`, `5.0`, `step5` -> 5; empty (one whole-run row) -> 0."""
    if v is None:
        return 0
    text = str(v).strip()
    if not text:
        return 0
    m = _STEP_DIGITS.search(text)
    return int64_or_none(m.group(1)) if m else None  # (beyond int64: no step, damage)


# ---- steps -----------------------------------------------------------------------------

def _csv_steps_by_rank(ctx: _Ctx) -> dict | None:
    """{rank: rows} of cluster_step_trace_time.csv, converted once per file state per
    process (every rank's reader reads the same file)."""
    p = ctx.path(STEP_CSV)
    if p is None:
        return None
    st = os.stat(p)
    key = (p, st.st_size, st.st_mtime_ns)
    hit = _by_rank_memo.get(key)
    if hit is not None:
        return hit
    df = ctx.csv(STEP_CSV, required=C.required(C.CLUSTER_STEP_TRACE_TIME))
    if df is None:
        return {}
    out = pd.DataFrame(convert(df, C.CLUSTER_STEP_TRACE_TIME, DIALECTS["torch_npu"]))
    out["step"] = [_step_id(v) for v in df[C.resolve(df, C.CLUSTER_STEP_TRACE_TIME)["step"]]]
    hit = _split_steps(out)
    _by_rank_memo.put(key, hit)
    return hit


def _split_steps(out: pd.DataFrame) -> dict:
    """Rank rows (`Type == rank`) by their `Index`; stage rows are maxima, not a rank's."""
    is_rank = (out["type"].astype("string").str.strip().str.lower() == "rank").fillna(False)
    out = out[is_rank.to_numpy(dtype=bool)]
    ranks = out["index"].map(cluster_rank)  # (the rule discovery lists the ranks by)
    out = out.drop(columns=["type", "index"])
    return {int(r): g.reset_index(drop=True) for r, g in out.groupby(ranks.to_numpy())
            if r is not None}


def _read_steps(ctx: _Ctx) -> None:
    by_rank = _csv_steps_by_rank(ctx)
    if by_rank is None:
        db = _db_steps(ctx)
        by_rank = {} if db is None else _split_steps(db)
    out = by_rank.get(ctx.rank)
    if out is None:
        return
    out = out[out["step"].notna()].reset_index(drop=True)
    if len(out) == 0:
        return
    out["step"] = out["step"].astype(np.int64)
    breakdown = [c.column for c in NPU_STEP_CATEGORIES]
    for c in breakdown:
        if c not in out.columns:
            out[c] = np.zeros(len(out), np.int64)
    out["total_ns"] = (out["bd_computing"] + out["bd_communication_not_overlapped"]
                       + out["bd_free"])
    out["start_ns"] = np.zeros(len(out), np.int64)
    out["end_ns"] = np.zeros(len(out), np.int64)
    order = ["step", "start_ns", "end_ns", "total_ns", *breakdown]
    out = out[order + [c for c in out.columns if c not in order]]
    ctx.profile.set("steps", out.sort_values("step", kind="stable").reset_index(drop=True),
                    keep_extra=True)


def _connect(ctx: _Ctx) -> sqlite3.Connection | None:
    p = ctx.path(DB)
    if p is None:
        return None
    ctx.current = p
    return sqlite3.connect("file:" + os.path.abspath(p) + "?mode=ro", uri=True, timeout=2.0)


def _select(con: sqlite3.Connection, tables: tuple[str, ...], spec: C.Table, where: str = "",
            args: tuple = ()) -> pd.DataFrame | None:
    """The first of `tables` that exists, its columns named by `spec` (a columns.py table:
    the db column variants, found by PRAGMA table_info), rows filtered by `where`; None
    when no table exists."""
    have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    table = next((t for t in tables if t in have), None)
    if table is None:
        return None
    cols = {r[1] for r in con.execute(f'PRAGMA table_info("{table}")')}
    picks = []
    for name, column in spec.items():
        col = next((v for v in column.headers if v in cols), None)
        picks.append(f'"{col}" AS "{name}"' if col else f'NULL AS "{name}"')
    sql = f'SELECT {", ".join(picks)} FROM "{table}"' + (f" WHERE {where}" if where else "")
    rows = con.execute(sql, args).fetchall()
    return pd.DataFrame(rows, columns=list(spec)) if rows else pd.DataFrame(
        {name: pd.Series([], dtype=object) for name in spec})


def _query_steps(ctx: _Ctx) -> pd.DataFrame | None:
    con = _connect(ctx)
    if con is None:
        return None
    try:
        spec = C.CLUSTER_DB_STEP_TRACE
        df = _select(con, ("ClusterStepTraceTime",), spec,
                     "lower(type) = 'rank' AND CAST(\"index\" AS INTEGER) = ?", (ctx.rank,))
    finally:
        con.close()
    if df is None:
        return None
    out = pd.DataFrame({"type": df["type"], "index": df["index"],
                        "step": [_step_id(v) for v in df["step"]]})
    for name, column in spec.items():
        if column.kind == "us":
            us = pd.to_numeric(df[name], errors="coerce").fillna(0.0).to_numpy(np.float64)
            out[name] = us_text_to_ns([repr(float(v)) for v in us])
    return out


# ---- communication ---------------------------------------------------------------------

def _json_by_rank(ctx: _Ctx, name: str, split) -> dict | None:
    """{rank: [rows]} of a cluster JSON, parsed once per (path, size, mtime) per process."""
    p = ctx.path(name)
    if p is None:
        return None
    st = os.stat(p)
    key = (p, st.st_size, st.st_mtime_ns)
    hit = _by_rank_memo.get(key)
    if hit is None:
        doc = ctx.json(p, max_bytes=MAX_JSON_BYTES)
        if doc is None:
            return {}
        hit = split(doc)
        _by_rank_memo.put(key, hit)
    return hit


def _sections(doc: dict):
    """(step, op key, value) of `{rank_set: {step: {op@group: value}}}`."""
    for steps in doc.values():
        if not isinstance(steps, dict):
            continue
        for step, ops in steps.items():
            if not isinstance(ops, dict):
                continue
            sid = _step_id(step)
            for key, value in ops.items():
                if isinstance(value, dict):
                    yield sid, str(key), value


def _split_comm(doc: dict) -> dict:
    by_rank: dict = {}
    for step, key, per_rank in _sections(doc):
        if key.split("@")[0] == TOTAL_OP:
            continue
        for rank, info in per_rank.items():
            r = cluster_rank(rank)
            if r is not None and isinstance(info, dict):
                by_rank.setdefault(r, []).append(op_row(step, key, info))
    return by_rank


def _read_communication(ctx: _Ctx) -> None:
    by_rank = _json_by_rank(ctx, COMM_JSON, _split_comm)
    rows = (by_rank or {}).get(ctx.rank, []) if by_rank is not None else _db_comm(ctx)
    if not rows:
        return
    ctx.profile.set("communication_ops", ops_table(rows))


def _query_comm(ctx: _Ctx) -> list[dict]:
    con = _connect(ctx)
    if con is None:
        return []
    try:
        t = _select(con, ("ClusterCommAnalyzerTime", "ClusterCommunicationTime"),
                    C.CLUSTER_DB_COMM_TIME, "rank_id = ? AND hccl_op_name != ?",
                    (ctx.rank, TOTAL_OP))
        bw = _select(con, ("ClusterCommAnalyzerBandwidth", "ClusterCommunicationBandwidth"),
                     C.CLUSTER_DB_COMM_BANDWIDTH, "rank_id = ? AND hccl_op_name != ?",
                     (ctx.rank, TOTAL_OP))
    finally:
        con.close()
    if t is None or len(t) == 0:
        return []
    sizes: dict = {}
    if bw is not None and len(bw):
        # One row per (op, band, package size): the band's transit size repeats per package.
        first = bw.drop_duplicates(["step", "op", "group", "band"])
        for (step, op, group), g in first.groupby(["step", "op", "group"], dropna=False):
            blocks = {str(b): {"Transit Size(MB)": s} for b, s in zip(g["band"], g["size_mb"])}
            sizes[(step, op, group)] = transit_size(blocks)
    rows = []
    for r in t.itertuples(index=False):
        info = {"Communication Time Info": {
            "Start Timestamp(us)": r.start_us, "Elapse Time(ms)": r.elapse_ms,
            "Transit Time(ms)": r.transit_ms, "Wait Time(ms)": r.wait_ms,
            "Synchronization Time(ms)": r.sync_ms, "Idle Time(ms)": r.idle_ms}}
        row = op_row(_step_id(r.step), f"{r.op}@{r.group or ''}", info)
        row["transit_size_mb"] = sizes.get((r.step, r.op, r.group), float("nan"))
        rows.append(row)
    return rows


# ---- matrix ------------------------------------------------------------------------------

def _link_row(step, op: str, src: int, dst: int, transport, size, time_ms, bw,
              aggregate: bool) -> dict:
    head, _, group = op.rpartition("@")
    return {"step": step, "op": op, "src_rank": src, "dst_rank": dst,
            "transport": str(transport or ""), "transit_size_mb": number(size),
            "transit_ns": ms_to_ns(time_ms), "bandwidth_gbps": number(bw),
            "op_name": "" if aggregate else head, "group": group, "kind": "",
            "aggregate": aggregate}


def _split_matrix(doc: dict) -> dict:
    entries = list(_sections(doc))
    has_total = any(k.split("@")[0] == TOTAL_OP for _, k, _ in entries)
    by_rank: dict = {}
    for step, key, links in entries:
        total = key.split("@")[0] == TOTAL_OP
        if has_total and not total:
            continue
        for link, info in links.items():
            src, _, dst = str(link).partition("-")
            s, d = cluster_rank(src), cluster_rank(dst)
            if s is None or not isinstance(info, dict):
                continue
            by_rank.setdefault(s, []).append(_link_row(
                step, key, s, s if d is None else d, info.get("Transport Type"),
                info.get("Transit Size(MB)"), info.get("Transit Time(ms)"),
                info.get("Bandwidth(GB/s)"), total))
    return by_rank


def _read_matrix(ctx: _Ctx) -> None:
    by_rank = _json_by_rank(ctx, MATRIX_JSON, _split_matrix)
    rows = (by_rank or {}).get(ctx.rank, []) if by_rank is not None else _db_matrix(ctx)
    if not rows:
        return
    out = pd.DataFrame(rows)
    out["step"] = out["step"].astype("Int64")
    ctx.profile.set("communication_links", out, keep_extra=True)


def _query_matrix(ctx: _Ctx) -> list[dict]:
    con = _connect(ctx)
    if con is None:
        return []
    try:
        tables = ("ClusterCommAnalyzerMatrix", "ClusterCommunicationMatrix")
        spec = C.CLUSTER_DB_MATRIX
        n_total = _select(con, tables, {"op": spec["op"]}, "hccl_op_name = ? LIMIT 1",
                          (TOTAL_OP,))
        has_total = n_total is not None and len(n_total) > 0
        where = "CAST(src_rank AS INTEGER) = ?" + (" AND hccl_op_name = ?" if has_total else "")
        df = _select(con, tables, spec, where,
                     (ctx.rank, TOTAL_OP) if has_total else (ctx.rank,))
    finally:
        con.close()
    if df is None:
        return []
    rows = []
    for r in df.itertuples(index=False):
        s, d = cluster_rank(r.src), cluster_rank(r.dst)
        if s is None:
            continue
        rows.append(_link_row(_step_id(r.step), f"{r.op}@{r.group or ''}", s,
                              s if d is None else d, r.transport, r.size_mb, r.time_ms,
                              r.bandwidth, has_total))
    return rows


def _guarded(query, empty):
    """A db query whose sqlite errors (locked, half-written, not a database, wrong schema)
    become this file's error; the other tables still load."""
    def run(ctx: _Ctx):
        try:
            return query(ctx)
        except sqlite3.Error as exc:
            ctx.error(os.path.join(ctx.base, DB), f"cannot read the database: {exc}")
            return empty
    return run


_db_steps = _guarded(_query_steps, None)
_db_comm = _guarded(_query_comm, [])
_db_matrix = _guarded(_query_matrix, [])
