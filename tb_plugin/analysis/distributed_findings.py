"""Findings of the distributed view: stragglers and slow links, from the per-rank
summaries (`rank_summary.py`) and the whole-run tables of `distributed.py` (`rank_stats`,
`links_table`); the advisor's straggler / slow_link rules use the same functions.

Definitions:
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
Thresholds (`t`) are the advisor's table (`tb_plugin.advisor.thresholds`), passed in by the
caller (the distributed view's route, the advisor's rules).
"""
from __future__ import annotations

import numpy as np

from ..lazy import pd
from .rank_summary import PAIRS, Collectives

# Dixon's Q (r10) critical values at 99% confidence, n = 3..10 ranks.
DIXON_Q99 = {3: 0.994, 4: 0.926, 5: 0.821, 6: 0.740, 7: 0.680, 8: 0.634, 9: 0.598, 10: 0.568}
ROBUST_Z = 3.5


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


def straggler_votes(summaries: list[dict], t) -> tuple[dict, int]:
    """({rank: votes}, collectives compared): the vote over collectives described above.

    Column-wise: each call is (pair code, ordinal of the call among the rank's calls of that
    pair); a consistent pair with n calls on R ranks is an R x n matrix, one column per
    collective, its rows in the summaries' order. The pairs are voted in batches of code
    ranges (`VOTE_BATCH_CALLS`), their results counted in the order of the pairs' names."""
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


def straggler_findings(stats: list[dict], summaries: list[dict] | None, t) -> list[dict]:
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


def slow_link_findings(links: pd.DataFrame, t) -> list[dict]:
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


def findings(stats: list[dict], links: pd.DataFrame, summaries: list[dict] | None,
             t) -> list[dict]:
    """The distributed view's findings (the advisor's straggler / slow_link rules use the
    same functions)."""
    return straggler_findings(stats, summaries, t) + slow_link_findings(links, t)
