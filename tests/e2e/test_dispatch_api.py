"""End to end: `/dispatch` through a real `tensorboard` process on the committed planted run
(fixtures/advisor_planted: rank 2 stalls the host before every third launch, see
fixtures/generate.py ADVISOR_PLANTED). Expected numbers are computed here from the trace
files with the standard library (json, decimal), independently of analysis/dispatch.py."""
from __future__ import annotations

import csv
import glob
import io
import json
import os
import shutil
import statistics
import urllib.request
from decimal import Decimal

import numpy as np
import pytest

from fixtures import generate as g
from tests.tb_server import FIXTURES, TensorBoard

pytestmark = pytest.mark.e2e
RUN = "advisor_planted"
assert g.ADVISOR_PLANTED[2]["dispatch_stall_us"]  # the dispatch-bound rank


def ns(ts) -> int:
    return int(Decimal(str(ts)) * 1000)


def trace_of(rank: int) -> list:
    (path,) = [p for p in glob.glob(os.path.join(FIXTURES, RUN, "*", "ASCEND_PROFILER_OUTPUT",
                                                 "trace_view.json"))
               if os.path.exists(os.path.join(os.path.dirname(os.path.dirname(p)),
                                              f"profiler_info_{rank}.json"))]
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def expected(rank: int) -> dict:
    """Per step (ProfilerStep#N window): Dequeue gaps over 1 ms and the launch delays."""
    ev = trace_of(rank)
    steps = sorted((int(e["name"].split("#")[1]), ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
                   for e in ev if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))

    def step_of(t):
        for sid, a, b in steps:
            if a <= t < b:
                return sid
        return None

    deq = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in ev
                 if e.get("ph") == "X" and e.get("cat") == "dequeue")
    gaps = {sid: [] for sid, _, _ in steps}
    latest = None
    for i, (a, b) in enumerate(deq):
        if i and step_of(a) is not None and step_of(a) == step_of(deq[i - 1][0]) \
                and a - latest > 1_000_000:
            gaps[step_of(a)].append((latest, a))
        latest = b if latest is None else max(latest, b)
    s_ts, f_ts = {}, {}
    for e in ev:
        if e.get("cat") == "HostToDevice":
            (s_ts if e["ph"] == "s" else f_ts)[e["id"]] = ns(e["ts"])
    delays = {sid: [] for sid, _, _ in steps}
    for fid, t in s_ts.items():
        if fid in f_ts and step_of(t) is not None:
            delays[step_of(t)].append(f_ts[fid] - t)
    return {"steps": steps, "gaps": gaps, "delays": delays}


@pytest.fixture(scope="module")
def tb(tmp_path_factory):
    d = tmp_path_factory.mktemp("logdir")
    shutil.copytree(os.path.join(FIXTURES, RUN), d / RUN)
    with TensorBoard(str(d)).loaded() as server:
        yield server


@pytest.fixture(scope="module")
def answers(tb):
    info = tb.get("run", run=RUN)
    assert "dispatch" in [v["id"] if isinstance(v, dict) else v for v in info["views"]]
    out = {}
    for w in info["workers"]:
        rank = int(w["name"].replace("rank", ""))
        out[rank] = tb.get("dispatch", run=RUN, worker=w["name"], span=w["spans"][0],
                           limit=100000)
    assert sorted(out) == [0, 1, 2, 3]
    return out


def test_step_numbers_match_the_trace(answers):
    for rank, d in answers.items():
        exp = expected(rank)
        assert [s["step"] for s in d["steps"]] == [sid for sid, _, _ in exp["steps"]]
        for s in d["steps"]:
            gaps = exp["gaps"][s["step"]]
            assert s["dequeue_gaps_over_1ms"] == len(gaps), (rank, s["step"])
            total = sum(b - a for a, b in gaps) / 1000
            assert s["dequeue_gap_total_us"] == pytest.approx(total, abs=1e-6)
            if gaps:
                a, b = max(gaps, key=lambda x: x[1] - x[0])
                assert s["dequeue_gap_max_us"] == pytest.approx((b - a) / 1000, abs=1e-6)
                assert (s["worst_gap_start_us"], s["worst_gap_end_us"]) == (a / 1000, b / 1000)
            dl = np.array(exp["delays"][s["step"]], dtype=float) / 1000
            assert s["launches"] == len(dl)
            assert s["launch_delay_p50_us"] == pytest.approx(statistics.median(dl), rel=1e-9)
            assert s["launch_delay_p95_us"] == pytest.approx(np.percentile(dl, 95), rel=1e-9)
            assert 0 <= s["dispatch_bound_idle_us"] <= s["device_idle_us"] <= \
                s["end_us"] - s["start_us"]


def test_only_the_planted_rank_is_dispatch_bound(answers):
    gapped = {r for r, d in answers.items() if d["summary"]["dequeue_gaps_over_1ms"] > 0}
    assert gapped == {2}
    # the device idles waiting for the host for a large share of rank 2's steps only
    bound = {r: d["summary"]["dispatch_bound_step_pct"] for r, d in answers.items()}
    assert {r for r, v in bound.items() if v > 20} == {2}, bound
    # and its tasks start right after their launch: the device has nothing queued
    delay = {r: d["summary"]["launch_delay_p50_us"] for r, d in answers.items()}
    assert delay[2] < min(v for r, v in delay.items() if r != 2) / 10, delay
    # the worst gaps are rank 2's stalls (the generator's 1.2 ms before every third launch)
    stall = g.ADVISOR_PLANTED[2]["dispatch_stall_us"]
    worst = answers[2]["worst_gaps"]
    assert len(worst) == 10 and all(stall <= w["gap_us"] < stall * 1.1 for w in worst)
    assert [w["gap_us"] for w in worst] == sorted((w["gap_us"] for w in worst), reverse=True)
    # (absolute µs as JSON numbers keep a quarter µs: epoch µs need 51 of the 53 bits)
    assert all(w["end_us"] - w["start_us"] == pytest.approx(w["gap_us"], abs=0.5) for w in worst)
    assert all(w["before"].startswith("Dequeue@") and w["after"].startswith("Dequeue@")
               for w in worst)


def test_ops_table_and_its_parameters(tb, answers):
    rows = answers[2]["ops"]
    ev = trace_of(2)
    names = [e["name"].split("@", 1)[1] for e in ev
             if e.get("ph") == "X" and e.get("cat") == "dequeue"]
    assert {r["name"]: r["calls"] for r in rows} == {n: names.count(n) for n in set(names)}
    assert answers[2]["total_rows"] == len(set(names))
    assert {r["path"] for r in rows} <= {"aclnn", None}
    # default order: mean queue wait, largest first
    waits = [r["queue_wait_us"] for r in rows]
    assert waits == sorted(waits, reverse=True)
    prof = dict(run=RUN, worker="rank2", span=tb.get("run", run=RUN)["workers"][2]["spans"][0])
    d = tb.get("dispatch", **prof, search="aten::m", sort="name", limit=2, offset=1)
    want = sorted(n for n in set(names) if "aten::m" in n)
    assert d["total_rows"] == len(want) and [r["name"] for r in d["ops"]] == want[1:3]
    assert d["steps"] == answers[2]["steps"]
    with urllib.request.urlopen(f"{tb.api}/dispatch?run={RUN}&worker=rank2&span={prof['span']}"
                                "&format=csv") as r:
        table = list(csv.DictReader(io.StringIO(r.read().decode("utf-8"))))
    assert {x["name"] for x in table} == set(names) and "launch_delay_us" in table[0]


def test_errors_and_cache(tb):
    assert tb.status("dispatch")[0] == 400
    assert tb.status("dispatch", run="nope")[0] == 404
    assert tb.status("dispatch", run=RUN, worker="nope")[0] == 404
    span = tb.get("run", run=RUN)["workers"][0]["spans"][0]
    code, body = tb.status("dispatch", run=RUN, worker="rank0", span=span, sort="nope")
    assert code == 400 and "queue_wait_us" in body["error"]
    # computed in the reader process after the timeline stage, kept per cache entry
    assert len(glob.glob(os.path.join(tb.cache_dir, "v*", "dispatch", "*", "*.json"))) == 4
