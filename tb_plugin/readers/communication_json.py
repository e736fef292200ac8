"""communication.json and communication_matrix.json of ASCEND_PROFILER_OUTPUT (torch_npu,
MindSpore 2.x) -> the `communication_ops` and `communication_links` tables; the pieces the
cluster analysis' documents share with them (time keys, op kinds, transit sizes).

Both layouts: torch_npu's per step `{"step3": {"collective": {...}, "p2p": {...}}}` and
msprof's flat `{"op@group": {...}, "total": {...}}` (MindSpore copies msprof's file).

communication_matrix.json: every row is kept; `op` is the entry key as written
(`allreduce-top1@group`, `allreduce-total@group`, or msprof's `hcom_x__1_0@group` / `total`),
extra columns `op_name` (the original op, torch_npu's "Op Name"), `group`, `kind`
(collective / p2p) and `aggregate` (True for `*-total@*` / `total` rows). Sum only
`aggregate` rows (torch_npu) or only non-aggregate rows (msprof layout) to avoid double
counting: top1 / middle / bottom rows are representatives repeated from the same links.
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from .context import ReadContext
from .json_numbers import int64_or_none, ms_to_ns, number
from .us_text import us_text_to_ns

COMM_TIME_KEYS = {
    "elapse_ns": "Elapse Time(ms)",
    "transit_ns": "Transit Time(ms)",
    "wait_ns": "Wait Time(ms)",
    "sync_ns": "Synchronization Time(ms)",
    "idle_ns": "Idle Time(ms)",
}
P2P_PREFIXES = ("hcom_send", "hcom_receive", "hcom_batchsendrecv")
_STEP_KEY = re.compile(r"^step(\d*)$")


def _load_json(ctx: ReadContext, name: str) -> dict | None:
    p = ctx.path(name)
    return None if p is None else ctx.json(p)


def step_sections(doc: dict):
    """Yield (step or None, kind or None, {op key: info}) for both layouts:
    torch_npu `{"step3": {"collective": {...}, "p2p": {...}}}` and msprof's flat
    `{"op@group": {...}, "total": {...}}` (MindSpore copies msprof's file)."""
    stepped = [k for k in doc if _STEP_KEY.match(str(k))]
    if stepped and all(isinstance(doc[k], dict) for k in stepped):
        for k in stepped:
            m = _STEP_KEY.match(k)
            step = int64_or_none(m.group(1))  # ("step": no number; beyond int64: damage)
            for kind, ops in doc[k].items():
                if isinstance(ops, dict):
                    yield step, str(kind), ops
    else:
        yield None, None, doc


def op_kind(name: str) -> str:
    return "p2p" if name.lower().startswith(P2P_PREFIXES) else "collective"


def read_communication(ctx: ReadContext) -> None:
    doc = _load_json(ctx, "communication.json")
    if doc is None:
        return
    rows = [op_row(step, str(key), info, kind)
            for step, kind, ops in step_sections(doc) for key, info in ops.items()
            if key not in ("Total Op Info", "total") and isinstance(info, dict)]
    if rows:
        ctx.profile.set("communication_ops", ops_table(rows))


def op_row(step, key: str, info: dict, kind: str | None = None) -> dict:
    """One op entry (`name@group` -> its time and bandwidth info) as a communication_ops row,
    its start still as written (`start_us`, parsed for all rows at once by `ops_table`);
    `kind` is the document's section, else the op name's (`op_kind`)."""
    name, _, group = key.rpartition("@")
    if not name:
        name, group = group, ""
    t = info.get("Communication Time Info")
    t = t if isinstance(t, dict) else {}  # absent or of another type: no times
    row = {"step": step, "name": name, "group": group, "kind": kind or op_kind(name),
           "start_us": t.get("Start Timestamp(us)"),
           "transit_size_mb": transit_size(info.get("Communication Bandwidth Info") or {})}
    for col, k in COMM_TIME_KEYS.items():
        row[col] = ms_to_ns(t.get(k))
    return row


def ops_table(rows: list[dict]) -> pa.Table:
    """`op_row` rows as the communication_ops table, in Arrow (`Profile.set` stores it
    without a pandas frame); the starts parsed in one call, exactly for decimal text."""
    starts = [r["start_us"] for r in rows]
    return pa.table({
        "step": pa.array([r["step"] for r in rows], pa.int64()),
        **{c: pa.array([r[c] for r in rows], pa.string()) for c in ("name", "group", "kind")},
        "transit_size_mb": pa.array([r["transit_size_mb"] for r in rows], pa.float64()),
        **{c: pa.array([r[c] for r in rows], pa.int64()) for c in COMM_TIME_KEYS},
        "start_ns": pa.array(us_text_to_ns([None if v is None else str(v) for v in starts])),
    })


def transit_size(bw: dict) -> float:
    """Total MB moved: RDMA + SDMA (SDMA already aggregates HCCS/PCIE/SIO)."""
    if not isinstance(bw, dict):
        return float("nan")

    def size(t):
        v = bw.get(t)
        return number(v.get("Transit Size(MB)")) if isinstance(v, dict) else float("nan")

    total = 0.0
    seen = False
    parts = ["RDMA"] + (["SDMA"] if "SDMA" in bw else ["HCCS", "PCIE", "SIO"])
    for t in parts:
        v = size(t)
        if np.isfinite(v):
            total += v
            seen = True
    return total if seen else float("nan")


def read_communication_matrix(ctx: ReadContext) -> None:
    doc = _load_json(ctx, "communication_matrix.json")
    if doc is None:
        return
    rows = []
    for step, kind, ops in step_sections(doc):
        for key, links in ops.items():
            if not isinstance(links, dict):
                continue
            key = str(key)
            head, _, group = key.rpartition("@")
            aggregate = key == "total" or head.endswith("-total")
            for link, info in links.items():
                if not isinstance(info, dict):
                    continue
                src, _, dst = str(link).partition("-")
                s, d = int64_or_none(src), int64_or_none(dst)
                if s is None:
                    continue
                op_name = str(info.get("Op Name") or (head if not aggregate else ""))
                rows.append({
                    "step": step,
                    "op": key,
                    "src_rank": s,
                    "dst_rank": s if d is None else d,
                    "transport": str(info.get("Transport Type") or ""),
                    "transit_size_mb": number(info.get("Transit Size(MB)")),
                    "transit_ns": ms_to_ns(info.get("Transit Time(ms)")),
                    "bandwidth_gbps": number(info.get("Bandwidth(GB/s)")),
                    "op_name": op_name,
                    "group": group if head else "",
                    "kind": kind or (op_kind(op_name) if op_name else ""),
                    "aggregate": aggregate,
                })
    if not rows:
        return
    ctx.profile.set("communication_links", links_table(rows), keep_extra=True)


_LINK_TYPES = {"step": "int64", "op": "string", "src_rank": "int64", "dst_rank": "int64",
               "transport": "string", "transit_size_mb": "float64", "transit_ns": "int64",
               "bandwidth_gbps": "float64", "op_name": "string", "group": "string",
               "kind": "string", "aggregate": "bool_"}


def links_table(rows: list[dict]) -> pa.Table:
    """`read_communication_matrix`'s rows as the communication_links table, in Arrow
    (`Profile.set` stores it without a pandas frame; every step and rank fits int64)."""
    return pa.table({c: pa.array([r[c] for r in rows], getattr(pa, t)())
                     for c, t in _LINK_TYPES.items()})
