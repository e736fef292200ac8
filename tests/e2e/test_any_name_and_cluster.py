"""End to end through a real `tensorboard`: traces of any name and msprof-analyze's
cluster_analysis_output/ (issue 11).

The logdir holds copies of fixtures/any_name (a torch_npu `export_chrome_trace` file named
`chrome_trace_14.json`, HTA's trace renamed `rank-0.json.gz`, an msprof timeline outside its
PROF folder, a trace cut off after two events, and a folder of JSON that is not a trace),
the raw 4-rank job fixtures/torch_npu_dist4, msprof-analyze's text output for that job
(fixtures/cluster_analysis) and its db output rendered here by the generator, plus a
tfevents file and a package.json at the top. Expected values are computed here from the
files with json / csv / gzip / sqlite3, or taken from the raw run's own answers.
"""
from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import os
import shutil
import sqlite3

import pytest

from fixtures import generate as g
from tests.tb_server import FIXTURES, TensorBoard

pytestmark = pytest.mark.e2e

RAW = "torch_npu_dist4"
TEXT = "cluster_analysis/cluster_analysis_output"
DB = "db_export/cluster_analysis_output"
EXPECTED_RUNS = {"any_name", "any_name/hta", "any_name/msprof_loose",
                 "any_name/looks_like_trace", RAW, TEXT, DB}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("logdir")
    for name in ("any_name", "cluster_analysis", RAW):
        shutil.copytree(os.path.join(FIXTURES, name), root / name)
    staging = tmp_path_factory.mktemp("staging")
    cfg = dataclasses.replace(g.FIXTURES[RAW], cluster_analysis="db")
    g.write_run(cfg, str(staging))
    shutil.copytree(staging / "cluster_analysis_output", root / DB)
    (root / "events.out.tfevents.1700000000.host").write_bytes(b"\x18\x00\x00\x00brain.Event:2")
    (root / "package.json").write_text(json.dumps({"name": "x", "version": "1.0.0"}))
    return root


@pytest.fixture(scope="module")
def tb(logdir):
    with TensorBoard(str(logdir)).loaded() as server:
        yield server


def test_exactly_the_expected_runs(tb):
    runs = {r["name"]: r for r in tb.get("runs")["runs"]}
    assert set(runs) == EXPECTED_RUNS
    for name in EXPECTED_RUNS - {"any_name/looks_like_trace"}:
        assert runs[name]["state"] == "ready", runs[name]
        assert not runs[name]["errors"], runs[name]


def _events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def test_chrome_trace_14_shows_timeline_and_operators(tb, logdir):
    info = tb.get("run", run="any_name")
    assert [w["name"] for w in info["workers"]] == ["chrome_trace_14"]
    assert info["workers"][0]["producer"] == "chrome_trace"
    assert {"trace", "operators", "overview"} <= set(info["views"])
    events = _events(str(logdir / "any_name" / "chrome_trace_14.json"))
    # Operators as torch-tb-profiler counts them (docs/exactness.md): no ProfilerStep,
    # DataLoader or Optimizer ranges.
    ranges = ("ProfilerStep#", "enumerate(DataLoader)", "Optimizer.")
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"
           and not e["name"].startswith(ranges)]
    rows = tb.get("operators", run="any_name", group_by="name", limit=10000)["rows"]
    assert sum(r["calls"] for r in rows) == len(ops)
    assert sum(r["host_total_us"] for r in rows) == pytest.approx(sum(e["dur"] for e in ops))
    steps = sorted(int(e["name"].split("#")[1]) for e in events
                   if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
    assert [s["step"] for s in tb.get("steps", run="any_name")["steps"]] == steps
    tr = tb.get("trace/tracks", run="any_name")
    tracks = tr["tracks"]
    names = {e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    assert {t["process"] for t in tracks} <= names
    assert {t["kind"] for t in tracks if t["process"] == "Ascend Hardware"} == {"device"}
    hw = next(t for t in tracks if t["process"] == "Ascend Hardware" and t["slices"])
    vp = tb.get("trace/viewport", run="any_name", start_us=tr["start_us"], end_us=tr["end_us"],
                width_px=8000, tracks=str(hw["id"]))
    shown = sum(len(lane["slices"]) + sum(b[2] for b in lane["blocks"]) for lane in vp["lanes"])
    assert shown == hw["slices"] > 0


def test_renamed_hta_trace_is_kineto(tb, logdir):
    info = tb.get("run", run="any_name/hta")
    assert [(w["name"], w["producer"]) for w in info["workers"]] == [("rank-0", "kineto")]
    assert "kernels" in info["views"]
    events = _events(str(logdir / "any_name" / "hta" / "rank-0.json.gz"))
    n = sum(1 for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel")
    rows = tb.get("kernels", run="any_name/hta", group_by="name", limit=10000)["rows"]
    assert sum(r["calls"] for r in rows) == n > 0


def test_msprof_timeline_outside_its_folder_is_a_generic_trace(tb, logdir):
    info = tb.get("run", run="any_name/msprof_loose")
    assert [w["producer"] for w in info["workers"]] == ["chrome_trace"]
    assert "trace" in info["views"]
    events = _events(str(logdir / "any_name" / "msprof_loose" / "step_trace_0_2_1.json"))
    n = sum(1 for e in events if e.get("ph") == "X")
    tracks = tb.get("trace/tracks", run="any_name/msprof_loose")["tracks"]
    assert sum(t["slices"] for t in tracks) == n


def test_a_trace_cut_off_is_a_per_file_error(tb):
    run = next(r for r in tb.get("runs")["runs"] if r["name"] == "any_name/looks_like_trace")
    assert [e["path"] for e in run["errors"]] == ["any_name/looks_like_trace/exported.json"]
    assert "invalid JSON" in run["errors"][0]["message"]


# ---- cluster_analysis_output ------------------------------------------------------------------

def _dist(tb, run):
    return tb.get("distributed", run=run, rank_limit=4096)


@pytest.mark.parametrize("run", [TEXT, DB])
def test_cluster_run_has_the_distributed_view(tb, run):
    info = tb.get("run", run=run)
    assert "distributed" in info["views"]
    assert [(w["name"], w["rank"], w["producer"]) for w in info["workers"]] == \
        [(f"rank{r}", r, "cluster_analysis") for r in range(4)]


def _close(a, b, path=""):
    """Equal within rounding (the cluster files carry the ms / µs values the ranks wrote,
    summed over ranks in another order)."""
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-3), path
    else:
        assert a == b, path


@pytest.mark.parametrize("run", [TEXT, DB])
def test_cluster_distributed_answers_equal_the_raw_ranks(tb, run):
    raw, got = _dist(tb, RAW), _dist(tb, run)
    for key in ("rank_count", "categories", "steps", "distribution", "slowest", "fastest",
                "heatmap", "comm_ops", "matrix", "comm_source"):
        _close(raw[key], got[key], key)
    # Findings: the same kinds, ranks and links, with the same evidence.
    _close([(f["kind"], f["rank"], f["link"], f["evidence"]) for f in raw["findings"]],
           [(f["kind"], f["rank"], f["link"], f["evidence"]) for f in got["findings"]])
    assert {f["kind"] for f in got["findings"]} == {"straggler", "slow_link"}
    for a, b in zip(raw["ranks"], got["ranks"]):
        _close({k: v for k, v in a.items() if k != "worker"},
               {k: v for k, v in b.items() if k != "worker"})
    for group_by in ("op", "rank"):
        _close(tb.get("distributed/comm_ops", run=RAW, group_by=group_by)["rows"],
               tb.get("distributed/comm_ops", run=run, group_by=group_by)["rows"])
    _close(tb.get("distributed/links", run=RAW)["rows"],
           tb.get("distributed/links", run=run)["rows"])


def test_cluster_steps_are_the_csv_rank_rows(tb, logdir):
    with open(logdir / TEXT / "cluster_step_trace_time.csv", newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Type"] == "rank"]
    d = _dist(tb, TEXT)
    for r in rows:
        rank = next(x for x in d["ranks"] if x["rank"] == int(r["Index"]))
        step = next(s for s in rank["steps"] if s["step"] == int(r["Step"]))
        assert step["breakdown"]["computing"] == pytest.approx(float(r["Computing"]))
        assert step["total_us"] == pytest.approx(
            float(r["Computing"]) + float(r["Communication(Not Overlapped)"]) + float(r["Free"]))


def test_cluster_db_links_are_the_total_op_rows(tb, logdir):
    con = sqlite3.connect(str(logdir / DB / "cluster_analysis.db"))
    rows = con.execute("SELECT src_rank, dst_rank, sum(transit_size), sum(transit_time) "
                       "FROM ClusterCommAnalyzerMatrix WHERE hccl_op_name = 'Total Op Info' "
                       "AND src_rank != dst_rank GROUP BY src_rank, dst_rank").fetchall()
    con.close()
    links = {(r["src"], r["dst"]): r for r in tb.get("distributed/links", run=DB)["rows"]}
    assert set(links) == {(int(s), int(d)) for s, d, _, _ in rows}
    for s, d, size, time_ms in rows:
        assert links[(int(s), int(d))]["size_mb"] == pytest.approx(size)
        assert links[(int(s), int(d))]["time_us"] == pytest.approx(time_ms * 1000, abs=0.01)


def test_every_route_answers_for_every_new_profile(tb):
    """No route fails on the new producers (an empty table is an answer, a 500 is not)."""
    for run in sorted(EXPECTED_RUNS - {RAW}):
        info = tb.get("run", run=run)
        for w in info["workers"]:
            for span in w["spans"]:
                p = dict(run=run, worker=w["name"], span=span)
                for route, extra in [("summary", {}), ("steps", {}),
                                     ("kernels", {"group_by": "name"}), ("operators", {}),
                                     ("operators", {"group_by": "name_shape"}), ("memory", {}),
                                     ("memory/allocations", {}), ("trace/tracks", {}),
                                     ("advisor", {})]:
                    code, body = tb.status(route, **p, **extra)
                    assert code in (200, 404), (route, p, code, body)
                    if code == 404:  # only "this profile has no timeline"
                        assert route == "trace/tracks" and w["producer"] == "cluster_analysis"
