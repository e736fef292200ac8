"""The per-rank summary of the distributed view: what is computed once per rank at load
time and cached, so that a run with thousands of ranks is never reloaded per request.

`rank_summary(profile)` reduces one rank's Profile to a small JSON-able dict (per step:
total and the common breakdown; communication ops grouped by type and group; the links
this rank sent on; its collective calls for the vote, as columns). It is computed once
per cache entry and stored as JSON next to the cache (see `SummaryStore`), so a restart
does not touch the rank's tables again. In memory a summary holds its steps and its
collective calls as numpy columns (`Steps`, `Collectives`: ~12 bytes per call, 48 per
step), so thousands of ranks fit; both read like the lists of the document. The
whole-run view over the summaries is `distributed.py`, its findings
`distributed_findings.py`.

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
"""
from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence

import numpy as np

from ..cache import DerivedStore
from ..lazy import pd
from ..lru import LRU
from ..model import Profile
from ..step_categories import NPU_STEP_CATEGORIES, category_names
from .kernels import view_rows

CATEGORIES = category_names(NPU_STEP_CATEGORIES)  # the common breakdown of every rank
SUMMARY_VERSION = 3  # 3: collectives as columns (v2 documents are made again)
SUMMARY_SUFFIX = f".v{SUMMARY_VERSION}.json"  # the summary document kept per cache entry
_P2P = re.compile(r"send|recv|receive", re.I)

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


def _texts(table, column: str) -> list[str]:
    """A text or category column of an Arrow table as Python strings (missing: "")."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.fill_null(table.column(column).cast(pa.large_string()), "").to_pylist()


def _numbers(table, column: str, dtype) -> np.ndarray:
    """A number column of an Arrow table as numpy (missing floats: NaN)."""
    return np.asarray(table.column(column).to_numpy(), dtype=dtype)


def _comm_ops(profile: Profile) -> tuple[list[dict], str | None]:
    if profile.has("communication_ops"):
        # The table's columns as arrays (no pandas frame: a summary is made per rank, in
        # the views stage). Grouped by (op type, group) in sorted order with numpy: a rank
        # has tens to thousands of ops, where a pandas groupby's fixed cost (~2 ms) was
        # most of it.
        ops = profile.arrow_table("communication_ops")
        names = [op_type(n) for n in _texts(ops, "name")]
        groups = _texts(ops, "group")
        keys = list(zip(names, groups))
        uniq = sorted(set(keys))
        at = {k: i for i, k in enumerate(uniq)}
        inverse = np.fromiter((at[k] for k in keys), np.int64, len(keys))
        calls = np.bincount(inverse, minlength=len(uniq))
        sums = {}
        for col in ("elapse_ns", "transit_ns", "wait_ns", "sync_ns", "idle_ns"):
            total = np.zeros(len(uniq), np.int64)  # exact integer sums
            np.add.at(total, inverse, _numbers(ops, col, np.int64))
            sums[col] = total.tolist()
        # Non-finite sizes are not summed; a group with no finite size has none (NaN).
        size = _numbers(ops, "transit_size_mb", np.float64)
        finite = np.isfinite(size)
        per_group: list[list[float]] = [[] for _ in uniq]
        for i, v in zip(inverse[finite].tolist(), size[finite].tolist()):
            per_group[i].append(v)
        sizes = [math.fsum(v) if v else None for v in per_group]
        rows = [{"name": str(name), "group": str(group), "calls": int(n),
                 "total_us": el / 1000.0, "transit_us": tr / 1000.0, "wait_us": wa / 1000.0,
                 "sync_us": sy / 1000.0, "idle_us": idl / 1000.0, "size_mb": _num(sz)}
                for (name, group), n, el, tr, wa, sy, idl, sz in zip(
                    uniq, calls.tolist(), sums["elapse_ns"], sums["transit_ns"],
                    sums["wait_ns"], sums["sync_ns"], sums["idle_ns"], sizes)]
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
    if not profile.has("communication_links"):
        return []
    links = profile.arrow_table("communication_links")  # (as arrays: see _comm_ops)
    agg = np.asarray(links.column("aggregate").fill_null(False).to_numpy(), dtype=bool) \
        if "aggregate" in links.column_names else np.zeros(links.num_rows, dtype=bool)
    rows = agg if agg.any() else np.ones(links.num_rows, dtype=bool)
    src = _numbers(links, "src_rank", np.int64)[rows]
    dst = _numbers(links, "dst_rank", np.int64)[rows]
    keep = src != dst
    if not keep.any():
        return []
    src, dst = src[keep], dst[keep]
    transport = np.array(_texts(links, "transport"), dtype=object)[rows][keep]
    size = _numbers(links, "transit_size_mb", np.float64)[rows]
    size = np.where(np.isnan(size), 0.0, size)[keep]
    time_ns = _numbers(links, "transit_ns", np.int64)[rows][keep]
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
    if profile.has("communication_ops"):
        ops = profile.arrow_table("communication_ops")  # (as arrays: see _comm_ops)
        order = np.argsort(_numbers(ops, "start_ns", np.int64), kind="stable").tolist()
        names, groups, kinds = (_texts(ops, c) for c in ("name", "group", "kind"))
        el = _numbers(ops, "elapse_ns", np.int64).tolist()
        return [[groups[i], names[i], el[i] / 1000.0] for i in order if kinds[i] != "p2p"]
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
