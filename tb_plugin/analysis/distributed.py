"""Distributed (multi-rank) view: per-rank step breakdowns, communication, links, findings.

Two levels, so that a run with thousands of ranks is never reloaded per request:
- `rank_summary(profile)` reduces one rank's Profile to a small JSON-able dict (per step:
  total and the common breakdown; communication ops grouped by type and group; the links
  this rank sent on; its collective calls for the vote, as columns). It is computed once
  per cache entry and stored as JSON next to the cache (see `SummaryStore`), so a restart
  does not touch the rank's tables again. In memory a summary holds its steps and its
  collective calls as numpy columns (`Steps`, `Collectives`: ~12 bytes per call, 48 per
  step), so thousands of ranks fit; both read like the lists of the document.
- `run_view(summaries)` combines the summaries of all ranks into the view (aggregates,
  heatmap, communication tables, matrix, findings); `page_ranks` serves the per-rank detail.

Definitions:
- Breakdown categories, the same for every producer: `computing`,
  `communication_not_overlapped`, `overlapped`, `free` (ns in the model, µs here).
  NPU profiles carry them in `steps.bd_*` (overlap analysis / step_trace_time.csv). For
  other profiles (kineto GPU) they are derived per step from the device kernels of that
  step: communication kernels are NCCL / gloo / HCCL kernels (name match), computing is the
  union of the other kernels' intervals, overlapped the intersection of both unions,
  communication_not_overlapped = union(communication) - overlapped, free = step time -
  computing - communication_not_overlapped (never below 0). Step time is the producer's.
- Communication ops: NPU from communication.json (`communication_ops`), grouped by op type
  (`hcom_allReduce__123_0_1` -> `allReduce`) and group; elapse / transit / wait / sync /
  idle summed; bandwidth_gbps = transit_size_mb / transit time in ms (MB/ms = GB/s as
  msprof-analyze writes it). GPU: NCCL / gloo kernels grouped by their collective
  (`ncclDevKernel_AllReduce_Sum_f32_RING_LL` -> `AllReduce`); transit / wait / size are
  unknown (null).
- Matrix: links src -> dst from communication_matrix.json; when a rank's file has the
  msprof-analyze aggregate entries (`<op>-total`, `total`), only those are summed (the
  other entries are samples: top1 / middle / bottom), else every entry is. Self links
  (src == dst, LOCAL) are dropped. bandwidth_gbps = size_mb / time_ms.
- Straggler, first by the vote over collectives (msprof-analyze's slow_rank recipe): the
  collectives of each rank, in order, are matched across ranks by (group, op name, ordinal);
  send / receive ops and (group, op) pairs called a different number of times on different
  ranks are dropped. Among the ranks of one collective the slow rank arrives last and so
  waits least: the *shortest* duration is tested as an outlier (Dixon's Q at 99% for up to
  10 ranks, a median/MAD robust z-score above 3.5 for more) and must also be at least
  `straggler_vote_gap_pct` below the median; each outlier is one vote for its rank. Ranks
  with votes from at least `straggler_vote_share` of the compared collectives are
  stragglers. When the vote names no rank (or no rank has per-op durations), the fallback is
  the mean computing time per step (mean step time when no rank has a computing category):
  a rank exceeding the median over ranks by more than `straggler_excess_pct`. Up to 5 are
  reported, largest first. Evidence: its value, the median, the excess, its mean wait time
  per step, the other ranks' median wait time per step (waiting for the slow rank) and the
  votes.
- Slow link: a link whose bandwidth is below `slow_link_ratio` (50%) of the median bandwidth
  of the links with the same transport (at least 3 such links). Up to 10, slowest first.
Thresholds come from the advisor's table (`tb_plugin.advisor.thresholds`).
"""
from __future__ import annotations

import math
import re
import threading
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..cache import DerivedStore
from ..lru import LRU
from ..model import NPU_STEP_CATEGORIES, Profile, category_names, step_category_label
from .kernels import view_rows

CATEGORIES = category_names(NPU_STEP_CATEGORIES)  # the common breakdown of every rank
SUMMARY_VERSION = 3  # 3: collectives as columns (v2 documents are made again)
SUMMARY_SUFFIX = f".v{SUMMARY_VERSION}.json"  # the summary document kept per cache entry
# Dixon's Q (r10) critical values at 99% confidence, n = 3..10 ranks.
DIXON_Q99 = {3: 0.994, 4: 0.926, 5: 0.821, 6: 0.740, 7: 0.680, 8: 0.634, 9: 0.598, 10: 0.568}
ROBUST_Z = 3.5
_P2P = re.compile(r"send|recv|receive", re.I)
HEATMAP_MAX_ROWS = 64

_COMM_KERNEL = re.compile(r"nccl|gloo|hccl|allreduce|allgather|reducescatter|broadcast|all2all"
                          r"|alltoall", re.I)
_NCCL_TYPE = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)", re.I)
_HCOM_TYPE = re.compile(r"^(?:hcom_)?([A-Za-z][A-Za-z0-9]*?)(?:_+\d*(?:_\d+)*)?$")


def op_type(name: str) -> str:
    """The communication type of an op name: hcom_allReduce__123_0_1 -> allReduce."""
    name = str(name or "")
    m = _NCCL_TYPE.search(name)
    if m:
        return m.group(1)
    m = _HCOM_TYPE.match(name)
    if m:
        return m.group(1)
    return name


# ---- per rank ------------------------------------------------------------------------------

def _union_len(starts: np.ndarray, ends: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """Total length of the union of [start, end) intervals, and the merged intervals."""
    if len(starts) == 0:
        return 0, starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > run_end[:-1]]
    idx = np.flatnonzero(new)
    ms = s[idx]
    me = np.maximum.reduceat(run_end, idx)
    return int((me - ms).sum()), ms, me


def _derived_breakdown(profile: Profile, steps: pd.DataFrame) -> dict[int, dict[str, float]]:
    """Per step {category: ns} from the step's kernels (GPU / profiles without overlap data)."""
    k = view_rows(profile)
    out: dict[int, dict[str, float]] = {}
    if len(k) == 0 or len(steps) == 0:
        return out
    stepcol = k["step"]
    valid = stepcol.notna().to_numpy(dtype=bool)
    if not valid.any():
        return out
    k = k[valid]
    step_ids = k["step"].to_numpy(dtype=np.int64)
    start = k["start_ns"].to_numpy(dtype=np.int64)
    end = start + k["dur_ns"].to_numpy(dtype=np.int64)
    codes, labels = _codes(k["name"])
    is_comm_label = np.array([bool(_COMM_KERNEL.search(str(x))) for x in labels], dtype=bool)
    comm = is_comm_label[codes] if len(labels) else np.zeros(len(k), dtype=bool)
    totals = dict(zip(steps["step"].to_numpy(dtype=np.int64).tolist(),
                      steps["total_ns"].to_numpy(dtype=np.int64).tolist()))
    for sid in np.unique(step_ids):
        m = step_ids == sid
        c_len, cs, ce = _union_len(start[m & ~comm], end[m & ~comm])
        m_len, ms, me = _union_len(start[m & comm], end[m & comm])
        all_len, _, _ = _union_len(np.r_[cs, ms], np.r_[ce, me])
        overlapped = c_len + m_len - all_len
        not_ov = m_len - overlapped
        total = totals.get(int(sid), all_len)
        out[int(sid)] = {"computing": c_len, "communication_not_overlapped": not_ov,
                         "overlapped": overlapped,
                         "free": max(0, total - c_len - not_ov)}
    return out


def _codes(series: pd.Series):
    from .tables import key_codes

    return key_codes(series)


def _num(v) -> float | None:
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def step_breakdown(profile: Profile) -> list[dict]:
    """[{"step", "total_us", "breakdown": {category: us}}] with the common categories."""
    steps = profile.table("steps")
    if len(steps) == 0:
        return []
    steps = steps.sort_values("step", kind="stable")
    have = all(f"bd_{c}" in steps.columns for c in ("computing", "free"))
    derived = {} if have else _derived_breakdown(profile, steps)
    out = []
    cols = {c: (pd.to_numeric(steps[f"bd_{c}"], errors="coerce").to_numpy(dtype=np.float64)
                if f"bd_{c}" in steps.columns else None) for c in CATEGORIES}
    for i, (sid, total) in enumerate(zip(steps["step"].to_numpy(dtype=np.int64).tolist(),
                                         steps["total_ns"].to_numpy(dtype=np.int64).tolist())):
        if have:
            bd = {c: (0.0 if cols[c] is None or not math.isfinite(cols[c][i]) else cols[c][i] / 1000.0)
                  for c in CATEGORIES}
        elif sid in derived:
            bd = {c: derived[sid][c] / 1000.0 for c in CATEGORIES}
        else:
            bd = {}
        out.append({"step": int(sid), "total_us": total / 1000.0, "breakdown": bd})
    return out


def _comm_ops(profile: Profile) -> tuple[list[dict], str | None]:
    ops = profile.table("communication_ops")
    if len(ops):
        df = pd.DataFrame({
            "name": [op_type(n) for n in ops["name"].astype("string").fillna("").tolist()],
            "group": ops["group"].astype("string").fillna("").to_numpy(dtype=object),
            "elapse": ops["elapse_ns"].to_numpy(dtype=np.int64),
            "transit": ops["transit_ns"].to_numpy(dtype=np.int64),
            "wait": ops["wait_ns"].to_numpy(dtype=np.int64),
            "sync": ops["sync_ns"].to_numpy(dtype=np.int64),
            "idle": ops["idle_ns"].to_numpy(dtype=np.int64),
            "size": pd.to_numeric(ops["transit_size_mb"], errors="coerce").to_numpy(dtype=np.float64),
            "calls": np.ones(len(ops), dtype=np.int64),
        })
        # Non-finite sizes are not summed; a group with no finite size has none (NaN).
        df["size"] = df["size"].where(np.isfinite(df["size"]))
        by = df.groupby(["name", "group"], sort=True)
        g = by[["calls", "elapse", "transit", "wait", "sync", "idle"]].sum()
        g["size"] = by["size"].sum(min_count=1)
        rows = [{"name": str(name), "group": str(group), "calls": int(calls),
                 "total_us": el / 1000.0, "transit_us": tr / 1000.0, "wait_us": wa / 1000.0,
                 "sync_us": sy / 1000.0, "idle_us": idl / 1000.0, "size_mb": _num(size)}
                for (name, group), calls, el, tr, wa, sy, idl, size in zip(
                    g.index, g["calls"].tolist(), g["elapse"].tolist(), g["transit"].tolist(),
                    g["wait"].tolist(), g["sync"].tolist(), g["idle"].tolist(),
                    g["size"].tolist())]
        return rows, "communication.json"
    if not profile.has("kernels"):
        return [], None
    k = view_rows(profile)
    codes, labels = _codes(k["name"])
    comm_labels = [i for i, x in enumerate(labels) if _COMM_KERNEL.search(str(x))]
    if not comm_labels:
        return [], None
    mask = np.isin(codes, comm_labels)
    sel_codes = codes[mask]
    dur = k["dur_ns"].to_numpy(dtype=np.int64)[mask]
    types = np.array([op_type(labels[c]) for c in range(len(labels))], dtype=object)
    df = pd.DataFrame({"name": types[sel_codes], "dur": dur})
    g = df.groupby("name", sort=True)["dur"].agg(["count", "sum"])
    rows = [{"name": str(n), "group": "", "calls": int(r["count"]), "total_us": r["sum"] / 1000.0,
             "transit_us": None, "wait_us": None, "sync_us": None, "idle_us": None,
             "size_mb": None} for n, r in g.iterrows()]
    return rows, "kernels"


def _links(profile: Profile) -> list[dict]:
    links = profile.table("communication_links")
    if len(links) == 0:
        return []
    agg = links["aggregate"].astype(bool).to_numpy() if "aggregate" in links.columns else \
        np.zeros(len(links), dtype=bool)
    if agg.any():
        links = links[agg]
    src = links["src_rank"].to_numpy(dtype=np.int64)
    dst = links["dst_rank"].to_numpy(dtype=np.int64)
    keep = src != dst
    if not keep.any():
        return []
    src, dst = src[keep], dst[keep]
    transport = links["transport"].astype("string").fillna("").to_numpy(dtype=object)[keep]
    size = pd.to_numeric(links["transit_size_mb"], errors="coerce").fillna(0).to_numpy()[keep]
    time_ns = links["transit_ns"].to_numpy(dtype=np.int64)[keep]
    # One row per (src, dst) in sorted order; sums by bincount over the pair's index.
    pairs, inverse = np.unique(np.stack([src, dst], axis=1), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n = np.bincount(inverse, minlength=len(pairs))
    size_sum = np.bincount(inverse, weights=size, minlength=len(pairs))
    time_sum = np.bincount(inverse, weights=time_ns, minlength=len(pairs))
    # The link's transport: the one most of its entries name (ties: the one seen first).
    votes: list[dict] = [{} for _ in range(len(pairs))]
    for i, t in zip(inverse.tolist(), transport.tolist()):
        votes[i][t] = votes[i].get(t, 0) + 1
    return [{"src": int(s), "dst": int(d), "transport": str(max(v, key=v.get)),
             "size_mb": float(sz), "time_us": float(t) / 1000.0, "entries": int(c)}
            for (s, d), v, sz, t, c in zip(pairs.tolist(), votes, size_sum.tolist(),
                                           time_sum.tolist(), n.tolist())]


def _collectives(profile: Profile) -> list[list]:
    """[[group, op name, duration µs]] of the rank's collectives in start order (for the
    straggler vote): communication.json ops, else NCCL / HCCL kernels (group "")."""
    ops = profile.table("communication_ops")
    if len(ops):
        ops = ops.sort_values("start_ns", kind="stable")
        names = ops["name"].astype("string").fillna("").tolist()
        groups = ops["group"].astype("string").fillna("").tolist()
        kinds = ops["kind"].astype(str).tolist()
        el = ops["elapse_ns"].to_numpy(dtype=np.int64)
        return [[g, n, int(e) / 1000.0] for g, n, k, e in zip(groups, names, kinds, el)
                if k != "p2p"]
    if not profile.has("kernels"):
        return []
    k = view_rows(profile)
    codes, labels = _codes(k["name"])
    comm = [i for i, x in enumerate(labels) if _COMM_KERNEL.search(str(x))]
    if not comm:
        return []
    mask = np.isin(codes, comm)
    order = np.argsort(k["start_ns"].to_numpy(dtype=np.int64)[mask], kind="stable")
    sel = codes[mask][order]
    dur = k["dur_ns"].to_numpy(dtype=np.int64)[mask][order]
    return [["", op_type(labels[c]), int(d) / 1000.0] for c, d in zip(sel, dur)]


def collectives_document(calls: list[list]) -> dict:
    """The columnar form of [[group, name, µs]] kept in the summary document: each distinct
    group and name once, then per call an index into each and the duration (op names are
    distinct per call in torch_npu runs, `hcom_allReduce__100_0_1`, their groups are not)."""
    groups: dict = {}
    names: dict = {}
    gi, ni, dur = [], [], []
    for g, n, d in calls:
        gi.append(groups.setdefault(g, len(groups)))
        ni.append(names.setdefault(n, len(names)))
        dur.append(d)
    return {"groups": list(groups), "names": list(names), "group": gi, "name": ni,
            "dur_us": dur}


def rank_summary(profile: Profile) -> dict:
    """The small per-rank summary the distributed view is built from (JSON-able)."""
    ops, source = _comm_ops(profile)
    return {
        "version": SUMMARY_VERSION,
        "rank": profile.meta.rank,
        "producer": profile.meta.producer,
        "device": profile.meta.device,
        "steps": step_breakdown(profile),
        "comm_ops": ops,
        "comm_source": source,
        "links": _links(profile),
        "collectives": collectives_document(_collectives(profile)),
    }


# ---- the summaries held in memory --------------------------------------------------------------
# A summary document is JSON; held as parsed JSON, thousands of ranks would cost ~3.6 × its
# size in Python objects (a list, two strings and a float per collective call). In memory the
# per-call and per-step parts are numpy columns instead: the (group, name) pairs of every rank
# are interned once per process (ranks of one job share their op names), so a call costs a
# 4-byte pair code and an 8-byte duration, a step 8 bytes per number.

class _PairTable:
    """Process-wide codes of (group, op name) pairs, with whether the op is point-to-point
    (never voted); grows with the distinct pairs seen, not with ranks."""

    def __init__(self):
        self._codes: dict = {}  # group -> {op name: code}
        self.pairs: list[tuple[str, str]] = []
        self._p2p: list[bool] = []
        self._p2p_flags = np.zeros(0, dtype=bool)
        self._lock = threading.Lock()

    def codes(self, groups: list, names: list, gi: np.ndarray, ni: np.ndarray) -> np.ndarray:
        """The codes of the pairs (groups[gi[k]], names[ni[k]])."""
        out = np.empty(len(gi), dtype=np.int32)
        with self._lock:
            for g in np.unique(gi).tolist():
                table = self._codes.setdefault(groups[g], {})
                at = np.flatnonzero(gi == g)
                sel = [names[i] for i in ni[at].tolist()]
                found = [table.get(n) for n in sel]
                for k, c in enumerate(found):
                    if c is None:
                        n = sel[k]
                        c = table.get(n)
                        if c is None:
                            c = table[n] = len(self.pairs)
                            self.pairs.append((groups[g], n))
                            self._p2p.append(bool(_P2P.search(n)))
                        found[k] = c
                out[at] = found
        return out

    def p2p(self, codes: np.ndarray) -> np.ndarray:
        with self._lock:
            if len(self._p2p_flags) != len(self._p2p):
                self._p2p_flags = np.array(self._p2p, dtype=bool)
            flags = self._p2p_flags
        return flags[codes]


PAIRS = _PairTable()


class Collectives(Sequence):
    """A rank's collective calls in start order as columns (`code` into PAIRS, `dur_us`);
    reads like the list [[group, name, µs], ...] it replaces."""

    __slots__ = ("code", "dur_us")
    __hash__ = None

    def __init__(self, code: np.ndarray, dur_us: np.ndarray):
        self.code = code
        self.dur_us = dur_us

    @classmethod
    def of(cls, value) -> "Collectives":
        """From a summary's "collectives": this form, the document's columns, or the list."""
        if isinstance(value, Collectives):
            return value
        if isinstance(value, dict):
            groups, names = value["groups"], value["names"]
            local = np.asarray(value["group"], dtype=np.int64) * max(len(names), 1) + \
                np.asarray(value["name"], dtype=np.int64)
            durs = value["dur_us"]
        else:
            rows = list(value or [])
            groups = list(dict.fromkeys(g for g, _, _ in rows))
            names = list(dict.fromkeys(n for _, n, _ in rows))
            gi = {g: i for i, g in enumerate(groups)}
            ni = {n: i for i, n in enumerate(names)}
            local = np.array([gi[g] * max(len(names), 1) + ni[n] for g, n, _ in rows],
                             dtype=np.int64)
            durs = [d for _, _, d in rows]
        # Each distinct pair of the rank is looked up once.
        uniq, inverse = np.unique(local, return_inverse=True)
        width = max(len(names), 1)
        code = PAIRS.codes(groups, names, uniq // width, uniq % width)
        return cls(code[inverse.reshape(-1)], np.asarray(durs, dtype=np.float64).reshape(-1))

    def __len__(self):
        return len(self.code)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        g, n = PAIRS.pairs[int(self.code[i])]
        return [g, n, float(self.dur_us[i])]

    def __eq__(self, other):
        """Equal to the same calls in any form (document columns or list)."""
        if isinstance(other, (dict, list)):
            other = Collectives.of(other)
        if isinstance(other, Collectives):
            return np.array_equal(self.code, other.code) and \
                np.array_equal(self.dur_us, other.dur_us)
        return NotImplemented

    def nbytes(self) -> int:
        return self.code.nbytes + self.dur_us.nbytes


class Steps(Sequence):
    """A rank's steps as columns (`step`, `total_us`, `breakdown` n x CATEGORIES with NaN
    where a step has no value); reads like the list [{"step", "total_us", "breakdown"}]."""

    __slots__ = ("step", "total_us", "breakdown")
    __hash__ = None

    def __init__(self, step: np.ndarray, total_us: np.ndarray, breakdown: np.ndarray):
        self.step = step
        self.total_us = total_us
        self.breakdown = breakdown

    @classmethod
    def of(cls, value) -> "Steps":
        if isinstance(value, Steps):
            return value
        rows = list(value or [])
        nan = math.nan
        bds = [x.get("breakdown") or {} for x in rows]
        bd = np.array([[nan if (v := b.get(c)) is None else v for c in CATEGORIES] for b in bds],
                      dtype=np.float64).reshape(len(rows), len(CATEGORIES))
        return cls(np.array([x["step"] for x in rows], dtype=np.int64),
                   np.array([x["total_us"] for x in rows], dtype=np.float64), bd)

    def __len__(self):
        return len(self.step)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        row = self.breakdown[i]
        return {"step": int(self.step[i]), "total_us": float(self.total_us[i]),
                "breakdown": {c: float(v) for c, v in zip(CATEGORIES, row.tolist())
                              if not math.isnan(v)}}

    def __eq__(self, other):
        """Equal to the same steps in any form (the document's list of dicts)."""
        if isinstance(other, list):
            other = Steps.of(other)
        if isinstance(other, Steps):
            return np.array_equal(self.step, other.step) and \
                np.array_equal(self.total_us, other.total_us) and \
                np.array_equal(self.breakdown, other.breakdown, equal_nan=True)
        return NotImplemented

    def nbytes(self) -> int:
        return self.step.nbytes + self.total_us.nbytes + self.breakdown.nbytes


def in_memory(doc: dict) -> dict:
    """The summary as held in memory: its steps and collectives as columns (every consumer
    also takes the document or the old list forms)."""
    return {**doc, "steps": Steps.of(doc.get("steps")),
            "collectives": Collectives.of(doc.get("collectives"))}


_SHARED_SUMMARIES: LRU = LRU(8192)


class SummaryStore:
    """Per-rank summaries: memory LRU (of the in-memory form), then the JSON the cache keeps
    for the entry (`ProfileCache.derived_path("distributed", key, ...)`), then computed from
    the profile (its tables released afterwards)."""

    def __init__(self, size: int | None = None):
        # Without a size, one memory for every store of the process (the distributed view's
        # and the advisor's), so a rank's summary is held once.
        self._docs = DerivedStore("distributed", size or 0, hold=in_memory,
                                  memory=_SHARED_SUMMARIES if size is None else None)

    def get(self, cache_root: str, key: str, load_profile) -> dict | None:
        def compute():
            prof = load_profile()
            if prof is None:
                return None
            summary = rank_summary(prof)
            prof.release()
            return summary

        return self._docs.get(cache_root, key, SUMMARY_SUFFIX, compute)


# ---- whole run -----------------------------------------------------------------------------

def _column_mean(values: np.ndarray) -> float | None:
    values = values[~np.isnan(values)]
    return float(values.mean()) if len(values) else None


def rank_stats(s: dict) -> dict:
    """Mean per step of the rank's total, breakdown categories and communication wait."""
    steps = Steps.of(s.get("steps"))
    n = len(steps)
    out = {"rank": s["rank"], "worker": s.get("worker"), "step_count": n,
           "avg_total_us": float(steps.total_us.mean()) if n else None}
    for j, c in enumerate(CATEGORIES):
        out[f"avg_{c}_us"] = _column_mean(steps.breakdown[:, j])
    waits = [o["wait_us"] for o in s.get("comm_ops", []) if o.get("wait_us") is not None]
    comm = [o["total_us"] for o in s.get("comm_ops", [])]
    div = max(n, 1)
    out["avg_comm_us"] = sum(comm) / div if comm else None
    out["avg_wait_us"] = sum(waits) / div if waits else None
    return out


def _percentiles(values: np.ndarray) -> dict:
    if len(values) == 0:
        return {"min": None, "p25": None, "median": None, "p75": None, "max": None, "mean": None}
    q = np.percentile(values, [0, 25, 50, 75, 100])
    return {"min": float(q[0]), "p25": float(q[1]), "median": float(q[2]), "p75": float(q[3]),
            "max": float(q[4]), "mean": float(values.mean())}


def _histogram(values: np.ndarray, bins: int = 20) -> dict:
    if len(values) == 0:
        return {"edges": [], "counts": []}
    lo, hi = float(values.min()), float(values.max())
    if hi <= lo:
        hi = lo + 1.0
    counts, edges = np.histogram(values, bins=bins, range=(lo, hi))
    return {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}


def _heatmap(summaries: list[dict], step_ids: list[int]) -> dict:
    """Rank x step step time; more than HEATMAP_MAX_ROWS ranks are bucketed (max kept)."""
    n = len(summaries)
    ids = np.asarray(step_ids, dtype=np.int64)
    grid = np.full((n, len(step_ids)), np.nan)
    for i, s in enumerate(summaries):
        steps = Steps.of(s.get("steps"))
        if len(steps):  # every step is one of step_ids (their union)
            grid[i, np.searchsorted(ids, steps.step)] = steps.total_us
    per = max(1, math.ceil(n / HEATMAP_MAX_ROWS))
    rows, values = [], []
    for b in range(0, n, per):
        chunk = grid[b:b + per]
        lo, hi = summaries[b]["rank"], summaries[min(b + per, n) - 1]["rank"]
        rows.append({"label": f"rank {lo}" if per == 1 else f"ranks {lo}-{hi}",
                     "ranks": [lo, hi]})
        with warnings.catch_warnings():  # a step no rank of the bucket has: NaN, said below
            warnings.simplefilter("ignore", RuntimeWarning)
            mx = np.nanmax(chunk, axis=0) if len(chunk) else np.full(len(step_ids), np.nan)
        values.append([None if not math.isfinite(v) else float(v) for v in mx])
    return {"steps": step_ids, "rows": rows, "values": values, "ranks_per_row": per,
            "aggregate": "max" if per > 1 else None}


def comm_table(summaries: list[dict], by_rank: bool) -> pd.DataFrame:
    """Communication ops per (rank,) type and group across ranks."""
    rows = []
    for s in summaries:
        for o in s.get("comm_ops") or []:
            rows.append({"rank": s["rank"], **o})
    cols = ["name", "group", "calls", "total_us", "avg_us", "transit_us", "wait_us", "sync_us",
            "idle_us", "wait_ratio", "size_mb", "bandwidth_gbps"]
    if by_rank:
        cols = ["rank"] + cols
    if not rows:
        return pd.DataFrame({c: pd.array([], dtype="string") if c in ("name", "group")
                             else np.zeros(0) for c in cols})
    df = pd.DataFrame(rows)
    for c in ("transit_us", "wait_us", "sync_us", "idle_us", "size_mb"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    keys = ["rank", "name", "group"] if by_rank else ["name", "group"]
    g = df.groupby(keys, sort=True).agg(
        calls=("calls", "sum"), total_us=("total_us", "sum"),
        transit_us=("transit_us", lambda s: s.sum(min_count=1)),
        wait_us=("wait_us", lambda s: s.sum(min_count=1)),
        sync_us=("sync_us", lambda s: s.sum(min_count=1)),
        idle_us=("idle_us", lambda s: s.sum(min_count=1)),
        size_mb=("size_mb", lambda s: s.sum(min_count=1)),
        ranks=("rank", "nunique")).reset_index()
    g["avg_us"] = g["total_us"] / g["calls"]
    g["wait_ratio"] = g["wait_us"] / g["total_us"].where(g["total_us"] > 0)
    g["bandwidth_gbps"] = g["size_mb"] / (g["transit_us"] / 1000.0).where(g["transit_us"] > 0)
    if not by_rank:
        cols = cols + ["ranks"]
    g["name"] = g["name"].astype("string")
    g["group"] = g["group"].astype("string")
    return g[cols].sort_values("total_us", ascending=False, kind="stable").reset_index(drop=True)


def links_table(summaries: list[dict]) -> pd.DataFrame:
    rows = [l for s in summaries for l in s.get("links") or []]
    cols = ["link", "src", "dst", "transport", "size_mb", "time_us", "bandwidth_gbps"]
    if not rows:
        return pd.DataFrame({c: pd.array([], dtype="string") if c in ("link", "transport")
                             else np.zeros(0) for c in cols})
    df = pd.DataFrame(rows)
    g = df.groupby(["src", "dst"], sort=True).agg(
        transport=("transport", "first"), size_mb=("size_mb", "sum"),
        time_us=("time_us", "sum")).reset_index()
    g["bandwidth_gbps"] = g["size_mb"] / (g["time_us"] / 1000.0).where(g["time_us"] > 0)
    g["link"] = pd.array([f"{s}-{d}" for s, d in zip(g["src"], g["dst"])], dtype="string")
    g["transport"] = g["transport"].astype("string")
    return g[cols].sort_values("bandwidth_gbps", ascending=True, kind="stable",
                               na_position="last").reset_index(drop=True)


def _thresholds(thresholds):
    if thresholds is not None:
        return thresholds
    from ..advisor.thresholds import load

    return load()


def _low_outliers(cols: np.ndarray) -> np.ndarray:
    """Is the smallest value of each column of a (ranks x calls) matrix an outlier of its
    column (Dixon's Q / robust z, see above)?"""
    n = cols.shape[0]
    v = np.sort(cols, axis=0)
    if n < 3:
        return np.zeros(cols.shape[1], dtype=bool)
    spread = v[-1] > v[0]
    with np.errstate(all="ignore"):
        if n in DIXON_Q99:
            return spread & ((v[1] - v[0]) / (v[-1] - v[0]) > DIXON_Q99[n])
        med = np.median(v, axis=0)
        mad = np.median(np.abs(v - med), axis=0)
        z = 0.6745 * (med - v[0]) / mad
    return spread & np.where(mad == 0, v[0] < med, z > ROBUST_Z)


VOTE_BATCH_CALLS = 2_000_000  # calls voted at once: bounds the vote's transient memory


def _vote_batch(parts: list, gap: float) -> list:
    """[(pair, [row of each voted rank, in call order], collectives compared)] for the calls
    of `parts` [(row, codes, durations)], which hold every call of their pairs."""
    code = np.concatenate([c for _, c, _ in parts])
    dur = np.concatenate([d for _, _, d in parts])
    row = np.repeat(np.array([r for r, _, _ in parts], dtype=np.int32),
                    [len(c) for _, c, _ in parts])
    # Calls grouped by (pair, rank) in call order: the ordinal and the count of each.
    order = np.lexsort((row, code))
    code, row, dur = code[order], row[order], dur[order]
    del order
    first = np.r_[True, (code[1:] != code[:-1]) | (row[1:] != row[:-1])]
    starts = np.flatnonzero(first)
    del first
    counts = np.diff(np.r_[starts, len(code)])
    run_code = code[starts]
    # A pair is consistent when every rank that has it calls it equally often.
    pair_starts = np.flatnonzero(np.r_[True, run_code[1:] != run_code[:-1]])
    cmin = np.minimum.reduceat(counts, pair_starts)
    cmax = np.maximum.reduceat(counts, pair_starts)
    nranks = np.diff(np.r_[pair_starts, len(run_code)])
    run_offsets = np.r_[starts, len(code)]
    # Pairs with the same number of ranks and of calls are voted as one matrix: their
    # blocks (ranks x calls each) side by side, one column per collective.
    shapes: dict = {}
    for p, nr, lo_n, hi_n in zip(pair_starts.tolist(), nranks.tolist(), cmin.tolist(),
                                 cmax.tolist()):
        if lo_n == hi_n and nr >= 3:
            shapes.setdefault((nr, lo_n), []).append(p)
    out = []
    for (nr, n_calls), ps in shapes.items():
        starts_p = run_offsets[np.asarray(ps, dtype=np.int64)]
        idx = starts_p[:, None] + np.arange(nr * n_calls)[None, :]
        mat = dur[idx].reshape(len(ps), nr, n_calls).transpose(1, 0, 2).reshape(nr, -1)
        mat_rows = row[idx[:, ::n_calls]]  # (pairs, ranks): each block's rows
        del idx
        lo = np.argmin(mat, axis=0)
        low = mat[lo, np.arange(mat.shape[1])]
        med = np.median(mat, axis=0)
        with np.errstate(all="ignore"):
            hit = (med > 0) & ((med - low) / med >= gap) & _low_outliers(mat)
        hit = hit.reshape(len(ps), n_calls)
        lo = lo.reshape(len(ps), n_calls)
        for j, p in enumerate(ps):
            voted = mat_rows[j, lo[j][hit[j]]].tolist()
            out.append((PAIRS.pairs[int(run_code[p])], voted, n_calls))
    return out


def straggler_votes(summaries: list[dict], thresholds=None) -> tuple[dict, int]:
    """({rank: votes}, collectives compared): the vote over collectives described above.

    Column-wise: each call is (pair code, ordinal of the call among the rank's calls of that
    pair); a consistent pair with n calls on R ranks is an R x n matrix, one column per
    collective, its rows in the summaries' order. The pairs are voted in batches of code
    ranges (`VOTE_BATCH_CALLS`), their results counted in the order of the pairs' names."""
    t = _thresholds(thresholds)
    per_rank: dict = {}  # rank -> (codes, durations) without point-to-point calls
    for s in summaries:
        c = Collectives.of(s.get("collectives"))
        keep = ~PAIRS.p2p(c.code) if len(c) else np.zeros(0, dtype=bool)
        if keep.all() and len(c):  # no copy of a rank without point-to-point calls
            per_rank[s["rank"]] = (c.code, c.dur_us)
        elif keep.any():
            per_rank[s["rank"]] = (c.code[keep], c.dur_us[keep])
        # a later summary of the same rank replaces it, in its first place (a dict)
    if len(per_rank) < 3:
        return {}, 0
    ranks = list(per_rank)
    data = list(per_rank.values())
    total = sum(len(c) for c, _ in data)
    lo_code = min(int(c.min()) for c, _ in data)
    hi_code = max(int(c.max()) for c, _ in data) + 1
    batches = min(max(1, -(-total // VOTE_BATCH_CALLS)), hi_code - lo_code)
    edges = np.linspace(lo_code, hi_code, batches + 1).round().astype(np.int64)
    results = []
    for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist()):
        if batches == 1:
            parts = [(i, c, d) for i, (c, d) in enumerate(data)]
        else:
            parts = []
            for i, (c, d) in enumerate(data):
                m = (c >= lo) & (c < hi)
                if m.any():
                    parts.append((i, c[m], d[m]))
        if parts:
            results.extend(_vote_batch(parts, t["straggler_vote_gap_pct"] / 100.0))
    results.sort(key=lambda x: x[0])
    votes: dict = {}
    compared = 0
    for _, voted, n_calls in results:
        compared += n_calls
        for i in voted:
            votes[ranks[i]] = votes.get(ranks[i], 0) + 1
    return votes, compared


def straggler_findings(stats: list[dict], summaries: list[dict] | None = None,
                       thresholds=None) -> list[dict]:
    t = _thresholds(thresholds)
    out: list[dict] = []
    if len(stats) < 2:
        return out
    use_comp = any(s.get("avg_computing_us") is not None for s in stats)
    key = "avg_computing_us" if use_comp else "avg_total_us"
    what = "computing time" if use_comp else "step time"
    vals = [(s, s.get(key)) for s in stats if s.get(key) is not None]
    if len(vals) < 2:
        return out
    median = float(np.median([v for _, v in vals]))
    waits = {s["rank"]: s.get("avg_wait_us") for s in stats}
    votes, compared = straggler_votes(summaries or [], t)
    voted = {r for r, n in votes.items() if compared and n / compared >= t["straggler_vote_share"]}
    if voted:
        slow = sorted([(s, v) for s, v in vals if s["rank"] in voted],
                      key=lambda x: (-votes[x[0]["rank"]], -x[1]))[:5]
        method = "vote"
    else:
        slow = sorted([(s, v) for s, v in vals if median > 0 and
                       (v - median) / median > t["straggler_excess_pct"] / 100.0],
                      key=lambda x: -x[1])[:5]
        method = "excess"
    for s, v in slow:
        others = [w for r, w in waits.items() if r != s["rank"] and w is not None]
        others_wait = float(np.median(others)) if others else None
        excess = (v - median) / median if median > 0 else 0.0
        if method == "vote":
            msg = (f"Rank {s['rank']} is a straggler: in {votes[s['rank']]} of {compared} "
                   f"collectives it was the last to arrive (its collective time is the "
                   f"shortest, the others wait for it). Its {what} per step is {v:,.0f} µs, "
                   f"{excess * 100:.1f}% above the median of {median:,.0f} µs.")
        else:
            msg = (f"Rank {s['rank']} is a straggler: its {what} per step is "
                   f"{v:,.0f} µs, {excess * 100:.1f}% above the median of {median:,.0f} µs.")
        own_wait = s.get("avg_wait_us")
        if others_wait is not None and own_wait is not None:
            msg += (f" The other ranks wait {others_wait:,.0f} µs per step in "
                    f"communication (median), rank {s['rank']} waits {own_wait:,.0f} µs.")
        out.append({"kind": "straggler", "rank": s["rank"], "link": None, "message": msg,
                    "evidence": {"metric": key, "value_us": v, "median_us": median,
                                 "excess_pct": excess * 100.0, "excess_us": v - median,
                                 "avg_step_us": s.get("avg_total_us"),
                                 "rank_wait_us": own_wait,
                                 "others_median_wait_us": others_wait,
                                 "ranks_compared": len(vals), "method": method,
                                 "votes": votes.get(s["rank"], 0),
                                 "collectives_compared": compared}})
    return out


def slow_link_findings(links: pd.DataFrame, thresholds=None) -> list[dict]:
    t = _thresholds(thresholds)
    out: list[dict] = []
    if len(links) == 0:
        return out
    df = links[links["bandwidth_gbps"].notna()]
    found = []
    for transport, grp in df.groupby("transport", sort=True):
        if len(grp) < 3:
            continue
        med = float(grp["bandwidth_gbps"].median())
        if med <= 0:
            continue
        for _, r in grp[grp["bandwidth_gbps"] < t["slow_link_ratio"] * med].iterrows():
            found.append((r, med))
    found.sort(key=lambda x: x[0]["bandwidth_gbps"] / x[1])
    for r, med in found[:10]:
        link = f"{int(r['src'])}-{int(r['dst'])}"
        out.append({"kind": "slow_link", "rank": None, "link": link,
                    "message": (f"Link {int(r['src'])} → {int(r['dst'])} ({r['transport']}) "
                                f"is slow: {r['bandwidth_gbps']:.2f} GB/s, "
                                f"{r['bandwidth_gbps'] / med * 100:.0f}% of the median "
                                f"{med:.2f} GB/s of {r['transport']} links."),
                    "evidence": {"src": int(r["src"]), "dst": int(r["dst"]),
                                 "transport": str(r["transport"]),
                                 "bandwidth_gbps": float(r["bandwidth_gbps"]),
                                 "median_bandwidth_gbps": med,
                                 "size_mb": float(r["size_mb"]),
                                 "time_us": float(r["time_us"])}})
    return out


def findings(stats: list[dict], links: pd.DataFrame, summaries: list[dict] | None = None,
             thresholds=None) -> list[dict]:
    """The distributed view's findings (the advisor's straggler / slow_link rules use the
    same functions)."""
    return straggler_findings(stats, summaries, thresholds) + \
        slow_link_findings(links, thresholds)


def run_view(summaries: list[dict], outliers: int = 10, max_links: int = 4096) -> dict:
    """The whole-run part of the distributed view (everything except the rank pages).

    `summaries` must carry "rank" and "worker" and be sorted by rank.
    """
    stats = [rank_stats(s) for s in summaries]
    steps = [Steps.of(s.get("steps")) for s in summaries]
    sids = np.concatenate([x.step for x in steps] + [np.zeros(0, dtype=np.int64)])
    totals = np.concatenate([x.total_us for x in steps] + [np.zeros(0)])
    step_ids = np.unique(sids).tolist()
    avg = np.array([s["avg_total_us"] for s in stats if s["avg_total_us"] is not None])
    dist = {"avg_step_us": _percentiles(avg), "histogram": _histogram(avg)}
    for c in CATEGORIES:
        vals = np.array([s[f"avg_{c}_us"] for s in stats if s[f"avg_{c}_us"] is not None])
        dist[f"avg_{c}_us"] = _percentiles(vals)
    # Every (step, step time) of every rank, grouped once (ranks x steps can be ~10^6).
    order = np.argsort(sids, kind="stable")
    bounds = np.searchsorted(sids[order], step_ids + [np.iinfo(np.int64).max])
    per_step = [{"step": sid, **_percentiles(totals[order[bounds[i]:bounds[i + 1]]])}
                for i, sid in enumerate(step_ids)]
    dist["per_step"] = per_step
    ranked = sorted([s for s in stats if s["avg_total_us"] is not None],
                    key=lambda s: -s["avg_total_us"])
    links = links_table(summaries)
    comm = comm_table(summaries, by_rank=False)
    from .tables import to_records

    return {
        "rank_count": len(summaries),
        "categories": list(CATEGORIES),
        "category_labels": {c: step_category_label(c) for c in CATEGORIES},
        "steps": step_ids,
        "distribution": dist,
        "slowest": ranked[:outliers],
        "fastest": ranked[::-1][:outliers],
        "heatmap": _heatmap(summaries, step_ids),
        "comm_source": next((s.get("comm_source") for s in summaries if s.get("comm_source")), None),
        "comm_ops": to_records(comm),
        "matrix": {"rank_count": len(summaries), "total_links": int(len(links)),
                   "links": to_records(links.head(max_links))} if len(links) else None,
        "findings": findings(stats, links, summaries),
    }


def page_ranks(summaries: list[dict], sort: str = "rank", offset: int = 0,
               limit: int = 64) -> tuple[list[dict], int]:
    """One page of ranks with their per-step detail, ordered by `sort` (rank | -rank |
    avg_total_us | -avg_total_us | avg_<category>_us | -...)."""
    stats = [rank_stats(s) for s in summaries]
    desc = sort.startswith("-")
    key = sort.lstrip("-+")
    valid = {"rank", "avg_total_us", "avg_comm_us", "avg_wait_us"} | {f"avg_{c}_us" for c in CATEGORIES}
    if key not in valid:
        raise ValueError(f"unknown rank_sort {key!r}; valid: {', '.join(sorted(valid))}")
    idx = list(range(len(stats)))
    present = [i for i in idx if stats[i].get(key) is not None]
    missing = [i for i in idx if stats[i].get(key) is None]
    present.sort(key=lambda i: stats[i][key], reverse=desc)
    order = present + missing
    page = order[offset:offset + limit]
    out = []
    for i in page:
        s = summaries[i]
        steps = s.get("steps") or []
        out.append({"rank": s["rank"], "worker": s.get("worker"),
                    "steps": list(steps) if isinstance(steps, Steps) else steps,
                    "stats": stats[i]})
    return out, len(order)
