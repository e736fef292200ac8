"""End to end: `/advisor` through a real `tensorboard` process, and the `npu-profiler`
command as a subprocess, on the committed planted run (fixtures/advisor_planted: each rank
carries one problem, see fixtures/generate.py ADVISOR_PLANTED) and a clean-ish run."""
from __future__ import annotations

import filecmp
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

import pytest

from fixtures import generate as g
from tests.tb_server import FIXTURES, TensorBoard

pytestmark = pytest.mark.e2e
RUN = "advisor_planted"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# rule -> the rank it was planted on
PLANTED = {"fused_optimizer": 0, "transdata": 1, "host_dispatch": 2, "aicpu_ops": 3,
           "straggler": g.ADVISOR_PLANTED_BASE["straggler_rank"]}
assert g.ADVISOR_PLANTED[0]["optimizer"] == "unfused" and g.ADVISOR_PLANTED[1]["transdata_kernels"]
assert g.ADVISOR_PLANTED[2]["dispatch_stall_us"] and g.ADVISOR_PLANTED[3]["aicpu_op"]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("logdir")
    # Copies, not symlinks: a link out of the logdir is not followed (by design).
    shutil.copytree(os.path.join(FIXTURES, RUN), d / RUN)
    shutil.copytree(os.path.join(FIXTURES, "torch_npu_level1"), d / "torch_npu_level1")
    return str(d)


@pytest.fixture(scope="module")
def tb(logdir):
    with TensorBoard(logdir).loaded() as server:
        yield server


def test_committed_planted_run_is_up_to_date(tmp_path):
    g._make_advisor_planted(str(tmp_path))
    fresh = os.path.join(str(tmp_path), RUN)
    for base, _, files in os.walk(fresh):
        for f in files:
            rel = os.path.relpath(os.path.join(base, f), fresh)
            assert filecmp.cmp(os.path.join(base, f), os.path.join(FIXTURES, RUN, rel),
                               shallow=False), f"stale fixture {rel} (run fixtures/generate.py)"


def _by_rule(findings):
    out = {}
    for f in findings:
        out.setdefault(f["rule"], set()).add(f["rank"])
    return out


def test_route_names_the_planted_rank_of_every_problem(tb):
    d = tb.get("advisor", run=RUN)
    assert d["profiles"] == 4 and d["failed"] == []
    ranks = _by_rule(d["findings"])
    for rule, rank in PLANTED.items():
        assert ranks.get(rule) == {rank}, (rule, ranks.get(rule))
    impacts = [f["impact_us"] for f in d["findings"] if f["impact_us"] is not None]
    assert impacts == sorted(impacts, reverse=True)
    for f in d["findings"]:
        assert set(f) >= {"id", "rule", "severity", "title", "message", "advice", "impact_us",
                          "impact_pct", "worker", "span", "rank", "evidence", "links"}
        assert f["severity"] in ("high", "medium", "low", "info")
        assert f["worker"] == f"rank{f['rank']}"
    rules = {r["rule"]: r for r in d["rules"]}
    assert rules["straggler"]["applies"] and rules["straggler"]["fired"] == 1
    assert rules["dataloader"] == {"rule": "dataloader", "title": rules["dataloader"]["title"],
                                   "applies": False, "fired": 0,
                                   "why_not": "not a GPU (kineto) profile"}
    strag = next(f for f in d["findings"] if f["rule"] == "straggler")
    # With 4 ranks Dixon's Q test at 99% needs the shortest collective far below the others;
    # the planted compute slowdown (x1.3) is found either way.
    assert strag["evidence"]["method"] in ("vote", "excess")
    # Computing time per step of each rank from the generator's truth.
    comp = {}
    for r in g.ADVISOR_PLANTED:
        steps = g.build_job(g.advisor_planted_config(r)).run(rank=r).steps
        comp[r] = statistics.mean(st.breakdown_us["computing"] for st in steps)
    median = statistics.median(comp.values())
    assert strag["evidence"]["value_us"] == pytest.approx(comp[PLANTED["straggler"]], rel=1e-3)
    assert strag["evidence"]["excess_pct"] == pytest.approx(
        (comp[PLANTED["straggler"]] - median) / median * 100, abs=0.2)
    # The distributed view shows the same straggler.
    dist = tb.get("distributed", run=RUN)
    assert [f["rank"] for f in dist["findings"] if f["kind"] == "straggler"] == [PLANTED["straggler"]]


def test_route_one_profile_and_links(tb):
    info = tb.get("run", run=RUN)
    w = next(x for x in info["workers"] if x["name"] == "rank2")
    d = tb.get("advisor", run=RUN, worker="rank2", span=w["spans"][0])
    assert d["profiles"] == 1
    assert {f["rank"] for f in d["findings"]} == {2}
    assert "straggler" not in {f["rule"] for f in d["findings"]}
    assert {r["rule"]: r["applies"] for r in d["rules"]}["straggler"] is False
    hd = next(f for f in d["findings"] if f["rule"] == "host_dispatch")
    trace = next(l for l in hd["links"] if l["view"] == "trace")["params"]
    assert trace["worker"] == "rank2" and trace["start_us"] < trace["end_us"]
    # The linked window holds the Dequeue events around the gap (the trace API agrees).
    s = tb.get("trace/summary", run=RUN, worker="rank2", span=w["spans"][0],
               start_us=trace["start_us"], end_us=trace["end_us"])
    assert s["slices"] > 0


def test_route_errors(tb):
    assert tb.status("advisor")[0] == 400
    assert tb.status("advisor", run="nope")[0] == 404
    assert tb.status("advisor", run=RUN, worker="nope")[0] == 404
    assert tb.status("advisor", run=RUN, span="nope")[0] == 404


def test_advice_is_cached_per_profile(tb):
    tb.get("advisor", run=RUN)
    files = glob.glob(os.path.join(tb.cache_dir, "v*", "advisor", "*", "*.json"))
    assert len(files) >= 4
    before = {f: os.stat(f).st_mtime_ns for f in files}
    tb.get("advisor", run=RUN)
    assert {f: os.stat(f).st_mtime_ns for f in files} == before


def _cli(logdir, *args, cache):
    env = dict(os.environ, NPU_PROFILER_CACHE_DIR=cache,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "tb_plugin.cli", *args, logdir],
                          capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)


def test_cli_json_text_and_fail_on(logdir, tb, tmp_path):
    cache = str(tmp_path / "cache")
    r = _cli(logdir, "advise", "--run", RUN, "--format", "json", cache=cache)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    (res,) = doc["runs"]
    api = tb.get("advisor", run=RUN)
    assert [(f["id"], round(f["impact_us"] or 0, 3)) for f in res["findings"]] == \
        [(f["id"], round(f["impact_us"] or 0, 3)) for f in api["findings"]]
    text = _cli(logdir, "advise", "--run", RUN, "--progress", cache=cache)
    assert text.returncode == 0
    assert "[HIGH] host_dispatch" in text.stdout and "@ rank2" in text.stdout
    assert "reading 4 profiles" in text.stderr
    high = _cli(logdir, "advise", "--run", RUN, "--fail-on", "high", cache=cache)
    assert high.returncode == 1
    md = _cli(logdir, "advise", "--run", RUN, "--format", "markdown", cache=cache)
    assert md.returncode == 0 and "| severity | rule |" in md.stdout
    # torch_npu_level1 has only low findings (an AI CPU op, MatMul share, long tasks).
    level1 = _cli(logdir, "advise", "--run", "torch_npu_level1", "--format", "json", cache=cache)
    sev = {f["severity"] for f in json.loads(level1.stdout)["runs"][0]["findings"]}
    assert sev and sev <= {"low", "info"}
    ok = _cli(logdir, "advise", "--run", "torch_npu_level1", "--fail-on", "medium", cache=cache)
    assert ok.returncode == 0
    bad = _cli(logdir, "advise", "--run", "nope", cache=cache)
    assert bad.returncode != 0 and "unknown run" in bad.stderr


def test_cli_summary(logdir, tmp_path):
    r = _cli(logdir, "summary", "--format", "json", cache=str(tmp_path / "c"))
    assert r.returncode == 0, r.stderr
    runs = {x["run"]: x for x in json.loads(r.stdout)["runs"]}
    job = g.build_job(g.FIXTURES["torch_npu_level1"])
    profs = runs["torch_npu_level1"]["profiles"]
    assert [p["step_count"] for p in profs] == [len(rr.steps) for rr in job.runs]
    text = _cli(logdir, "summary", cache=str(tmp_path / "c"))
    assert "Run advisor_planted: 4 profiles" in text.stdout and "breakdown:" in text.stdout


def test_cli_thresholds(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    override = tmp_path / "t.json"
    override.write_text(json.dumps({"aicpu_min_us": 55}))
    env["NPU_PROFILER_ADVISOR_THRESHOLDS"] = str(override)
    r = subprocess.run([sys.executable, "-m", "tb_plugin.cli", "thresholds", "--format", "json"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    rows = {t["name"]: t for t in json.loads(r.stdout)["thresholds"]}
    assert rows["aicpu_min_us"]["value"] == 55 and rows["aicpu_min_us"]["default"] == 20
    override.write_text(json.dumps({"no_such_threshold": 1}))
    bad = subprocess.run([sys.executable, "-m", "tb_plugin.cli", "thresholds"],
                         capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    assert bad.returncode == 2 and "t.json" in bad.stderr and "no_such_threshold" in bad.stderr


def test_console_script_when_installed(logdir, tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "npu-profiler")
    if not os.path.exists(script) and shutil.which("npu-profiler") is None:
        pytest.skip("npu-profiler is not installed next to this Python")
    env = dict(os.environ, NPU_PROFILER_CACHE_DIR=str(tmp_path / "c"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([script if os.path.exists(script) else "npu-profiler", "advise", "--run",
                        RUN, "--fail-on", "high", logdir], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 1 and "host_dispatch" in r.stdout
