"""End to end: the distributed view of the generated 4-rank torch_npu run (fixtures/
torch_npu_dist4) through a real `tensorboard` process.

Expected values come from the generator's ground truth (planted straggler rank 2 and slow
link 1->2) and from the fixture files read here with the standard library.
"""
from __future__ import annotations

import csv
import glob
import json
import os
import statistics
import urllib.error
import urllib.parse
import urllib.request

import pytest

from fixtures import generate as g
from tb_plugin.discovery import FOLLOW_EXTERNAL_SYMLINKS_ENV
from tests.tb_server import FIXTURES, TensorBoard

pytestmark = pytest.mark.e2e
FOLLOW_LINKS = {FOLLOW_EXTERNAL_SYMLINKS_ENV: "1"}
RUN = "torch_npu_dist4"
DIST = os.path.join(FIXTURES, RUN)


@pytest.fixture(scope="module")
def tb(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("logdir")
    # Runs linked in from outside the logdir, as a user who opted in to following them.
    os.symlink(DIST, logdir / RUN)
    os.symlink(os.path.join(FIXTURES, "torch_npu_level1"), logdir / "torch_npu_level1")
    with TensorBoard(str(logdir), extra_env=FOLLOW_LINKS).loaded(240) as server:
        yield server


@pytest.fixture(scope="module")
def truth():
    return g.build_job(g.FIXTURES[RUN])



def status(tb, route, **params):
    try:
        tb.get(route, **params)
        return 200
    except urllib.error.HTTPError as e:
        return e.code


def rank_dirs():
    out = {}
    for d in glob.glob(os.path.join(DIST, "*_ascend_pt")):
        info = glob.glob(os.path.join(d, "profiler_info_*.json"))[0]
        out[int(info.rsplit("_", 1)[1].split(".")[0])] = os.path.join(d, "ASCEND_PROFILER_OUTPUT")
    return out


def test_run_lists_distributed_view(tb):
    assert "distributed" in tb.get("run", run=RUN)["views"]
    assert "distributed" not in tb.get("run", run="torch_npu_level1")["views"]


def test_findings_name_the_planted_straggler_and_slow_link(tb, truth):
    d = tb.get("distributed", run=RUN)
    kinds = {f["kind"]: f for f in d["findings"]}
    assert kinds["straggler"]["rank"] == truth.straggler_rank == 2
    assert [f["rank"] for f in d["findings"] if f["kind"] == "straggler"] == [2]
    src, dst = truth.slow_link
    assert kinds["slow_link"]["link"] == f"{src}-{dst}"
    assert [f["link"] for f in d["findings"] if f["kind"] == "slow_link"] == [f"{src}-{dst}"]
    ev = kinds["straggler"]["evidence"]
    # The generator stretches the straggler's compute by straggler_factor (1.3).
    assert ev["excess_pct"] == pytest.approx((truth.config.straggler_factor - 1) * 100, abs=3)
    # The others wait for it; it hardly waits itself.
    assert ev["others_median_wait_us"] > 10 * ev["rank_wait_us"]
    lk = kinds["slow_link"]["evidence"]
    assert lk["bandwidth_gbps"] / lk["median_bandwidth_gbps"] == pytest.approx(
        truth.config.slow_link_factor, rel=0.01)


def test_rank_steps_match_step_trace_time(tb):
    d = tb.get("distributed", run=RUN)
    assert d["total_ranks"] == 4 and [r["rank"] for r in d["ranks"]] == [0, 1, 2, 3]
    for rank, out_dir in rank_dirs().items():
        with open(os.path.join(out_dir, "step_trace_time.csv"), encoding="utf-8-sig") as fh:
            rows = list(csv.DictReader(fh))
        got = next(r for r in d["ranks"] if r["rank"] == rank)
        for file_row, step in zip(rows, got["steps"]):
            assert step["step"] == int(file_row["Step"])
            assert step["breakdown"]["computing"] == pytest.approx(float(file_row["Computing"]))
            assert step["breakdown"]["free"] == pytest.approx(float(file_row["Free"]))
            assert step["breakdown"]["communication_not_overlapped"] == pytest.approx(
                float(file_row["Communication(Not Overlapped)"]))


def _comm_file_totals(path):
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    calls = elapse = wait = 0
    for step in doc.values():
        for ops in step.values():
            for key, info in ops.items():
                if key == "Total Op Info":
                    continue
                t = info["Communication Time Info"]
                calls += 1
                elapse += t["Elapse Time(ms)"]
                wait += t["Wait Time(ms)"]
    return calls, elapse * 1000, wait * 1000


def test_comm_ops_per_rank_match_communication_json(tb):
    rows = tb.get("distributed/comm_ops", run=RUN, group_by="rank")["rows"]
    for rank, out_dir in rank_dirs().items():
        calls, elapse_us, wait_us = _comm_file_totals(os.path.join(out_dir, "communication.json"))
        mine = [r for r in rows if r["rank"] == rank]
        assert sum(r["calls"] for r in mine) == calls
        assert sum(r["total_us"] for r in mine) == pytest.approx(elapse_us)
        assert sum(r["wait_us"] for r in mine) == pytest.approx(wait_us)
    agg = tb.get("distributed/comm_ops", run=RUN)["rows"]
    assert agg[0]["name"] == "allReduce" and agg[0]["ranks"] == 4


def test_links_match_communication_matrix(tb):
    links = tb.get("distributed/links", run=RUN)
    expected = {}
    for rank, out_dir in rank_dirs().items():
        with open(os.path.join(out_dir, "communication_matrix.json"), encoding="utf-8") as fh:
            doc = json.load(fh)
        for step in doc.values():
            for ops in step.values():
                for key, ls in ops.items():
                    if "-total@" not in key:
                        continue
                    for link, info in ls.items():
                        s, t = link.split("-")
                        if s != t:
                            e = expected.setdefault(link, [0.0, 0.0])
                            e[0] += info["Transit Size(MB)"]
                            e[1] += info["Transit Time(ms)"]
    assert links["total_rows"] == len(expected)
    for row in links["rows"]:
        size, ms = expected[row["link"]]
        assert row["size_mb"] == pytest.approx(size)
        assert row["bandwidth_gbps"] == pytest.approx(size / ms)
    assert links["rows"][0]["link"] == "1-2"  # default order: slowest first


def test_paging_sorting_and_errors(tb):
    d = tb.get("distributed", run=RUN, rank_sort="-avg_computing_us", rank_limit=1)
    assert [r["rank"] for r in d["ranks"]] == [2] and d["total_ranks"] == 4
    d = tb.get("distributed", run=RUN, rank_offset=3, rank_limit=10)
    assert [r["rank"] for r in d["ranks"]] == [3]
    assert d["heatmap"]["rows"][2]["label"] == "rank 2"
    med = statistics.median(r["avg_total_us"] for r in d["slowest"])
    assert d["distribution"]["avg_step_us"]["median"] == pytest.approx(med)
    assert status(tb, "distributed", run=RUN, rank_sort="nope") == 400
    assert status(tb, "distributed", run="nope") == 404
    assert status(tb, "distributed", run=RUN, span="nope") == 404
    assert status(tb, "distributed") == 400
    csv_text = urllib.request.urlopen(
        f"{tb.api}/distributed/links?run={RUN}&format=csv").read().decode()
    assert csv_text.splitlines()[0].startswith("link,src,dst")

