"""Rank summaries held in memory as columns (summary v3) give the same vote, view and pages
as the list form of summary v2.

The reference vote below is the list-form algorithm written out on plain Python lists
(per-rank dicts keyed by (group, name, ordinal), one collective at a time), independent of
the column-wise code under test; the summaries are hand-written or read from the generated
dist4 fixture, whose collectives the test takes from the profile's table itself.
"""
from __future__ import annotations

import json
import os
import random
import re

import numpy as np
import pytest

from fixtures import generate as g
from tb_plugin.advisor import thresholds as th
from tb_plugin.analysis import distributed as dist
from tb_plugin.analysis import distributed_findings
from tb_plugin.analysis import rank_summary
from tests.advisor.planted import read_all
from tests.tb_server import FIXTURES

CATS = ["computing", "communication_not_overlapped", "overlapped", "free"]
DIXON = {3: 0.994, 4: 0.926, 5: 0.821, 6: 0.740, 7: 0.680, 8: 0.634, 9: 0.598, 10: 0.568}
P2P = re.compile(r"send|recv|receive", re.I)


def _low_outlier(vals):
    v = sorted(vals)
    n = len(v)
    if n < 3 or v[-1] <= v[0]:
        return False
    if n in DIXON:
        return (v[1] - v[0]) / (v[-1] - v[0]) > DIXON[n]
    med = float(np.median(v))
    mad = float(np.median([abs(x - med) for x in v]))
    if mad == 0:
        return v[0] < med
    return 0.6745 * (med - v[0]) / mad > 3.5


def reference_votes(summaries, gap_pct, list_of):
    """The vote over [[group, name, µs]] lists, one collective at a time."""
    per_rank = {}
    for s in summaries:
        seq, counts = {}, {}
        for group, name, d in list_of(s):
            if P2P.search(name):
                continue
            n = counts.get((group, name), 0)
            counts[(group, name)] = n + 1
            seq[(group, name, n)] = d
        if seq:
            per_rank[s["rank"]] = (seq, counts)
    if len(per_rank) < 3:
        return {}, 0
    seen = {}
    for _, counts in per_rank.values():
        for k, n in counts.items():
            seen.setdefault(k, set()).add(n)
    votes, compared = {}, 0
    for key in sorted(k for k, ns in seen.items() if len(ns) == 1):
        for i in range(next(iter(seen[key]))):
            pts = [(r, seq[key + (i,)]) for r, (seq, _) in per_rank.items() if key + (i,) in seq]
            if len(pts) < 3:
                continue
            compared += 1
            lo_rank, lo = min(pts, key=lambda p: p[1])  # the first of equal minima
            med = float(np.median([v for _, v in pts]))
            if med > 0 and (med - lo) / med >= gap_pct / 100.0 and \
                    _low_outlier([v for _, v in pts]):
                votes[lo_rank] = votes.get(lo_rank, 0) + 1
    return votes, compared


def steps_of(rank, n, slow=1.0, missing_breakdown=False):
    return [{"step": 10 + i, "total_us": 1000.0 * slow + 7.25 * ((rank * 3 + i) % 5),
             "breakdown": {} if missing_breakdown and i == 0 else
             {c: 100.0 * (j + 1) * slow + 0.5 * ((rank + i + j) % 3) for j, c in enumerate(CATS)}}
            for i in range(n)]


def list_summary(rank, calls, steps=None):
    ops = [{"name": "allReduce", "group": "g", "calls": 1, "total_us": 10.0 + rank,
            "transit_us": 1.0, "wait_us": 2.0 + (rank % 3), "sync_us": 0.0, "idle_us": 0.0,
            "size_mb": 1.0}]
    return {"rank": rank, "worker": f"w{rank}", "span": "s", "comm_ops": ops, "links": [],
            "comm_source": "communication.json",
            "steps": steps if steps is not None else steps_of(rank, 3),
            "collectives": calls}


def as_document(s):
    """The v3 document of a list-form summary, through JSON as the cache stores it."""
    doc = {**s, "collectives": rank_summary.collectives_document(s["collectives"])}
    return json.loads(json.dumps(doc))


def as_memory(s):
    return rank_summary.in_memory(as_document(s))


def random_run(seed, n_ranks):
    """Ranks with shared, repeated, unicode, p2p and inconsistent ops, some with none."""
    rnd = random.Random(seed)
    names = [("g0", f"hcom_allReduce__{i}_0_1") for i in range(6)] + \
        [("g1", "hcom_allGather__7"), ("组-ü", "hcom_broadcast_∑"), ("g0", "hcom_send__3"),
         ("g0", "hcom_receive__3"), ("", "AllReduce")]
    slow = rnd.choice([r for r in range(n_ranks) if r % 7 != 3 and r % 5 != 4])
    out = []
    for r in range(n_ranks):
        if r % 7 == 3:  # no collectives at all
            out.append(list_summary(r, []))
            continue
        calls = []
        for rep in range(3):
            for group, name in names:
                times = 1
                if name == "hcom_allGather__7" and r == 1:
                    times = 2  # called a different number of times: never compared
                for _ in range(times):
                    base = 100.0 + rnd.choice([0.0, 0.5, 1.0, 2.0]) + rep
                    calls.append([group, name, 40.0 if r == slow and rnd.random() < 0.8
                                  else base])
        if r % 5 == 4:
            calls = [c for c in calls if P2P.search(c[1])]  # only point-to-point ops
        out.append(list_summary(r, calls))
    return out


@pytest.mark.parametrize("seed,n_ranks", [(1, 3), (2, 5), (3, 8), (4, 10), (5, 11), (6, 40),
                                          (7, 2), (8, 64)])
def test_vote_is_the_same_for_lists_documents_and_memory(seed, n_ranks):
    t = th.load()
    sums = random_run(seed, n_ranks)
    want = reference_votes(sums, t["straggler_vote_gap_pct"], lambda s: s["collectives"])
    if n_ranks >= 5:
        assert want[1] > 0  # the case compares collectives
    for form in (lambda s: s, as_document, as_memory):
        got = distributed_findings.straggler_votes([form(s) for s in sums], t)
        assert got == want
        assert list(got[0]) == list(want[0])  # same order of first votes too


@pytest.mark.parametrize("batch", [1, 7, 100])
def test_vote_in_batches_of_pairs_is_the_same(batch, monkeypatch):
    t = th.load()
    sums = random_run(9, 24)
    want = reference_votes(sums, t["straggler_vote_gap_pct"], lambda s: s["collectives"])
    assert want[0]
    monkeypatch.setattr(distributed_findings, "VOTE_BATCH_CALLS", batch)
    got = distributed_findings.straggler_votes([as_memory(s) for s in sums], t)
    assert got == want and list(got[0]) == list(want[0])


def test_vote_ties_and_flat_collectives():
    t = th.load()
    # 12 ranks (robust z): two equal minima (the first rank is voted), and a flat op (MAD 0).
    sums = [list_summary(r, [["g", "tie", 10.0 if r in (4, 9) else 100.0 + r % 2],
                             ["g", "flat", 50.0 if r == 6 else 100.0]]) for r in range(12)]
    want = reference_votes(sums, t["straggler_vote_gap_pct"], lambda s: s["collectives"])
    assert want == ({4: 1, 6: 1}, 2)
    assert distributed_findings.straggler_votes([as_memory(s) for s in sums], t) == want


def test_view_and_pages_are_the_same_for_lists_and_memory():
    sums = random_run(11, 20)
    for s in sums[:3]:
        s["steps"] = steps_of(s["rank"], 5, slow=1.4 if s["rank"] == 1 else 1.0,
                              missing_breakdown=True)
    sums[5]["steps"] = []
    want = dist.run_view(sums, th.load())
    mem = [as_memory(s) for s in sums]
    assert json.dumps(dist.run_view(mem, th.load()), sort_keys=True) == json.dumps(want, sort_keys=True)
    for sort in ("rank", "-avg_total_us", "avg_computing_us", "-avg_wait_us"):
        a = dist.page_ranks(sums, sort, 2, 7)
        b = dist.page_ranks(mem, sort, 2, 7)
        assert json.dumps(b, sort_keys=True) == json.dumps(a, sort_keys=True)
    # The memory form reads like the list it replaces.
    assert list(mem[0]["steps"]) == sums[0]["steps"]
    assert list(mem[0]["collectives"]) == sums[0]["collectives"]
    assert mem[0] == sums[0] and mem[1] != sums[0]


def test_memory_form_is_a_few_bytes_per_call_and_step():
    group = "10.0.0.1%enp189s0_60000_0_1717200000000000"  # as torch_npu names groups
    calls = [[group, f"hcom_allReduce__{i}_0_1", 100.0 + i] for i in range(1000)]
    s = as_memory(list_summary(0, calls, steps_of(0, 50)))
    assert len(s["collectives"]) == 1000 and s["collectives"].nbytes() == 12 * 1000
    assert s["steps"].nbytes() == 50 * (8 + 8 + 8 * len(CATS))
    # The document keeps each distinct group once.
    doc = rank_summary.collectives_document(calls)
    assert doc["groups"] == [group] and doc["group"] == [0] * 1000
    assert len(json.dumps(doc)) < len(json.dumps(calls)) * 0.6


def test_dist4_summaries_vote_like_their_tables(tmp_path):
    """The generated dist4 run: the collectives list made in the test from each profile's
    communication_ops table, voted the list way, equals the vote over stored summaries."""
    job = g.build_job(g.FIXTURES["torch_npu_dist4"])
    lists, mem = [], []
    store = rank_summary.SummaryStore(8)
    for i, (span, p) in enumerate(read_all(os.path.join(FIXTURES, "torch_npu_dist4"))):
        ops = p.table("communication_ops").sort_values("start_ns", kind="stable")
        calls = [[str(gr), str(n), int(e) / 1000.0] for gr, n, k, e in
                 zip(ops["group"], ops["name"], ops["kind"], ops["elapse_ns"]) if k != "p2p"]
        lists.append({"rank": span.rank, "collectives": calls})
        s = store.get(str(tmp_path), f"{i:02d}" * 16, lambda p=p: p)
        mem.append({**s, "rank": span.rank})
    order = sorted(range(len(lists)), key=lambda i: lists[i]["rank"])
    lists, mem = [lists[i] for i in order], [mem[i] for i in order]
    t = th.load()
    want = reference_votes(lists, t["straggler_vote_gap_pct"], lambda s: s["collectives"])
    assert set(want[0]) == {job.straggler_rank}
    assert distributed_findings.straggler_votes(mem, t) == want
    # Read again from the documents the store wrote (fresh memory).
    again = [{**rank_summary.SummaryStore(8).get(str(tmp_path), f"{i:02d}" * 16, lambda: None),
              "rank": lists[j]["rank"]} for j, i in enumerate(order)]
    assert distributed_findings.straggler_votes(again, t) == want


def test_v2_documents_are_not_read(tmp_path):
    key = "ab" * 16
    old = os.path.join(str(tmp_path), "distributed", key[:2], f"{key}.v2.json")
    os.makedirs(os.path.dirname(old))
    with open(old, "w", encoding="utf-8") as fh:
        json.dump({"version": 2, "rank": 0, "steps": [], "collectives": [["g", "x", 1.0]]}, fh)
    made = []

    def load():
        from tests.analysis.test_distributed import npu_rank

        made.append(1)
        return npu_rank(0, 6_000, 100)

    s = rank_summary.SummaryStore(8).get(str(tmp_path), key, load)
    assert made == [1] and s["version"] == rank_summary.SUMMARY_VERSION == 3
    assert os.path.isfile(os.path.join(str(tmp_path), "distributed", key[:2],
                                       f"{key}.v3.json"))


def test_stores_share_one_memory(tmp_path):
    """The distributed view's and the advisor's stores hold a rank's summary once."""
    from tb_plugin.advisor import runs
    from tb_plugin.http import api_distributed
    from tests.analysis.test_distributed import npu_rank

    key = "cd" * 16
    a = api_distributed._summaries.get(str(tmp_path), key, lambda: npu_rank(0, 6_000, 100))
    b = runs._summaries.get(str(tmp_path), key, lambda: None)
    assert b is a and list(a["steps"])[0]["total_us"] == 10.0


def test_an_unreadable_document_is_made_again(tmp_path):
    from tests.analysis.test_distributed import npu_rank

    key = "ef" * 16
    path = os.path.join(str(tmp_path), "distributed", key[:2],
                        f"{key}{rank_summary.SUMMARY_SUFFIX}")
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as fh:
        fh.write(b'{"version": 3, "steps": [tru')
    s = rank_summary.SummaryStore(8).get(str(tmp_path), key, lambda: npu_rank(0, 6_000, 100))
    assert s["rank"] == 0 and list(s["steps"])[1]["total_us"] == 12.0
    with open(path, encoding="utf-8") as fh:
        assert json.load(fh)["steps"][1]["total_us"] == 12.0
