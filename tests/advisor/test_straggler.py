"""The straggler vote over collectives (analysis.distributed_findings, used by the advisor's
straggler rule and the distributed view) on hand-written summaries and on the planted 4-rank
fixture."""
from __future__ import annotations

import os

import pytest

from fixtures import generate as g
from tb_plugin.advisor import thresholds as th
from tb_plugin.advisor.engine import advise_ranks
from tb_plugin.analysis import distributed_findings
from tb_plugin.analysis import rank_summary
from tests.tb_server import FIXTURES

from .planted import read_all


def summary(rank, collectives, computing=1000.0, wait=None):
    steps = [{"step": 1, "total_us": 2000.0,
              "breakdown": {"computing": computing, "communication_not_overlapped": 100.0,
                            "overlapped": 0.0, "free": 10.0}}]
    ops = [{"name": "allReduce", "group": "g", "calls": 1, "total_us": 1.0, "transit_us": 1.0,
            "wait_us": wait, "sync_us": 0.0, "idle_us": 0.0, "size_mb": 1.0}] if wait is not None else []
    return {"rank": rank, "worker": f"rank{rank}", "span": "s", "steps": steps,
            "comm_ops": ops, "links": [], "collectives": collectives}


def test_vote_names_the_rank_with_the_shortest_collectives():
    normal = [100.0, 101.0, 99.0, 102.0]
    sums = []
    for r in range(5):
        col = []
        for i in range(6):
            col.append(["g", f"hcom_allReduce__{i}", 50.0 if r == 4 else normal[(r + i) % 4]])
        col.append(["g", "hcom_send__1", 1.0 if r == 0 else 500.0])    # p2p: not voted
        # called twice on rank 3, once elsewhere: inconsistent, not voted
        col += [["h", "hcom_broadcast__1", 10.0 if r == 2 else 90.0]] * (2 if r == 3 else 1)
        sums.append(summary(r, col))
    # Dixon: (99 - 50) / (102 - 50) = 0.94 > 0.821 (n = 5) for each of the 6 allreduces.
    assert distributed_findings.straggler_votes(sums, th.load()) == ({4: 6}, 6)
    res = advise_ranks(sums, th.load())
    (f,) = [x for x in res["findings"] if x["rule"] == "straggler"]
    assert f["rank"] == 4 and f["evidence"]["method"] == "vote" and f["evidence"]["votes"] == 6
    assert f["worker"] == "rank4"


def test_no_vote_for_jitter_and_fallback_to_computing_excess():
    sums = [summary(r, [["g", f"op{i}", 100.0 + ((r * 7 + i) % 5)] for i in range(4)],
                    computing=1300.0 if r == 1 else 1000.0, wait=1.0 if r == 1 else 30.0)
            for r in range(4)]
    assert distributed_findings.straggler_votes(sums, th.load())[0] == {}
    res = advise_ranks(sums, th.load())
    (f,) = [x for x in res["findings"] if x["rule"] == "straggler"]
    assert f["rank"] == 1 and f["evidence"]["method"] == "excess"
    assert f["evidence"]["excess_pct"] == pytest.approx(30.0)
    # impact: the others wait 30 µs per step for it, it waits 1 µs
    assert f["impact_us"] == pytest.approx(29.0)


def test_even_ranks_have_no_straggler():
    sums = [summary(r, [["g", f"op{i}", 100.0] for i in range(4)]) for r in range(4)]
    res = advise_ranks(sums, th.load())
    assert [x for x in res["findings"] if x["rule"] == "straggler"] == []
    assert {r["rule"]: r["applies"] for r in res["rules"]}["straggler"] is True


def test_vote_on_the_generated_dist4_run():
    job = g.build_job(g.FIXTURES["torch_npu_dist4"])
    sums = []
    for span, p in read_all(os.path.join(FIXTURES, "torch_npu_dist4")):
        s = rank_summary.rank_summary(p)
        sums.append({**s, "rank": span.rank, "worker": span.worker, "span": span.span})
    sums.sort(key=lambda s: s["rank"])
    votes, compared = distributed_findings.straggler_votes(sums, th.load())
    assert compared == len(job.run(rank=0).comm_ops)
    assert set(votes) == {job.straggler_rank}
    res = advise_ranks(sums, th.load())
    ranks = {f["rule"]: f["rank"] for f in res["findings"]}
    assert ranks["straggler"] == job.straggler_rank
    assert ranks["slow_link"] == job.slow_link[0]
    link = next(f for f in res["findings"] if f["rule"] == "slow_link")
    assert link["evidence"]["bandwidth_gbps"] / link["evidence"]["median_bandwidth_gbps"] == \
        pytest.approx(job.config.slow_link_factor, rel=0.01)
