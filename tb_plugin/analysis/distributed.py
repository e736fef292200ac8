"""Distributed (multi-rank) view: per-rank step breakdowns, communication, links, findings.

Two levels, so that a run with thousands of ranks is never reloaded per request:
- `rank_summary(profile)` (`rank_summary.py`) reduces one rank's Profile to a small
  JSON-able dict, computed once per cache entry and stored as JSON next to the cache (see
  `SummaryStore`); the definitions of its breakdown categories, communication ops and
  matrix links are there.
- `run_view(summaries)` combines the summaries of all ranks into the view (aggregates,
  heatmap, communication tables, matrix, findings); `page_ranks` serves the per-rank detail.
  The findings (straggler, slow link) and their definitions are `distributed_findings.py`.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..lazy import pd
from ..step_categories import step_category_label
from .distributed_findings import findings
from .rank_summary import CATEGORIES, Steps

HEATMAP_MAX_ROWS = 64


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


def run_view(summaries: list[dict], t, outliers: int = 10, max_links: int = 4096) -> dict:
    """The whole-run part of the distributed view (everything except the rank pages).

    `summaries` must carry "rank" and "worker" and be sorted by rank; `t`: the advisor's
    thresholds, for the findings.
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
        "findings": findings(stats, links, summaries, t),
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
