"""End to end, graph mode: a real `tensorboard` process over copies of the MindInsight
sample (real), the MindSpore 2.x and the msprof (PaddlePaddle) fixtures.

MindInsight's expected values for `mindspore_legacy_run1` are those of its public test suite
(mindspore-ai/mindinsight tests/st/func/profiler/test_analyse.py test_summary_for_step_trace,
tests/st/func/profiler/test_op_analyser.py test_query_aicore_type_1); the rest is computed
here from the files with the standard library.
"""
from __future__ import annotations

import csv
import glob
import json
import os
import shutil
from decimal import Decimal

import pytest

from tests.tb_server import FIXTURES, TensorBoard

pytestmark = pytest.mark.e2e

RUNS = {"legacy": os.path.join(FIXTURES, "real", "mindspore_legacy_run1"),
        "ms2x": os.path.join(FIXTURES, "mindspore_2x"),
        "paddle": os.path.join(FIXTURES, "msprof_paddle")}


def _rows(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def tb(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("graphmode")
    for name, src in RUNS.items():
        shutil.copytree(src, logdir / name)
    with TensorBoard(str(logdir)).loaded(240) as server:
        yield server


def _profile(tb, run):
    info = tb.get("run", run=run)
    w = info["workers"][0]
    return dict(run=run, worker=w["name"], span=w["spans"][0])


def test_legacy_phases_and_op_types_are_mindinsights(tb):
    p = _profile(tb, "legacy")
    s = tb.get("summary", **p)
    a = s["phases"]["average"]
    assert s["phases"]["steps_total"] == 322
    for key, want_ms in (("total_us", 205.3809), ("iteration_interval_us", 0.2038),
                         ("fp_and_bp_us", 118.054), ("tail_us", 87.1231)):
        assert abs(a[key] / 1000 - want_ms) <= 0.005 * want_ms, key
    assert (a["iteration_interval_pct"], a["fp_and_bp_pct"], a["tail_pct"]) == (0.1, 57.48, 42.42)
    t = tb.get("kernels/op_types", **p, limit=100)
    assert t["source"] == "file" and t["total_rows"] == 24
    rows = {r["type"]: r for r in t["rows"]}
    for name, total, calls, avg in (("MatMul", 2807.82, 25, 112.313), ("Cast", 104.32, 27, 3.864),
                                    ("Conv2D", 38.97, 6, 6.495)):
        assert abs(rows[name]["total_us"] - total) <= 0.005 * total
        assert rows[name]["calls"] == calls
        assert abs(rows[name]["avg_us"] - avg) <= 0.005 * avg
    assert [r["type"] for r in t["rows"][:2]] == ["MatMul", "Cast"]


def test_mindspore_operators_have_times_and_steps_are_per_step(tb):
    p = _profile(tb, "ms2x")
    ops = tb.get("operators", **p, limit=1000)
    out = glob.glob(os.path.join(RUNS["ms2x"], "*_ascend_ms", "ASCEND_PROFILER_OUTPUT"))[0]
    doc = json.load(open(os.path.join(out, "trace_view.json")))
    ev = doc if isinstance(doc, list) else doc["traceEvents"]
    ms = [e for e in ev if e.get("ph") == "X" and e.get("pid") == 1
          and not e["name"].startswith("ProfilerStep#")]
    host_total = {}
    for e in ms:
        n = e["name"].split("Kernel::KernelLaunch::", 1)[-1]
        host_total[n] = host_total.get(n, 0) + Decimal(str(e["dur"]))
    got = {r["name"]: r for r in ops["rows"]}
    assert set(got) == set(host_total)
    for n, want in host_total.items():
        assert abs(got[n]["host_total_us"] - float(want)) <= 0.01, n
    assert sum(r["device_self_us"] for r in ops["rows"]) > 0
    steps = tb.get("steps", **p)["steps"]
    want_steps = sorted(int(e["name"].split("#")[1]) for e in ev
                        if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
    assert [s["step"] for s in steps] == want_steps
    api = tb.get("kernels/api_statistic", **p, limit=500)
    assert api["total_rows"] == len(_rows(os.path.join(out, "api_statistic.csv")))


def test_msprof_phases_and_op_statistic(tb):
    p = _profile(tb, "paddle")
    s = tb.get("summary", **p)
    f = glob.glob(os.path.join(RUNS["paddle"], "PROF_*", "mindstudio_profiler_output", "step_trace_*.csv"))[0]
    rows = _rows(f)
    want = sum(float(r["FP to BP Time(us)"]) for r in rows) / len(rows)
    assert abs(s["phases"]["average"]["fp_and_bp_us"] - want) <= 1e-3
    assert [st["step"] for st in s["phases"]["steps"]] == [int(r["Iteration ID"]) for r in rows]
    red = [x for x in s["phases"]["steps"][0]["phases"] if x["phase"] == "reduce"]
    assert abs(red[0]["dur_us"] - float(rows[0]["Reduce Duration(us)"])) <= 1e-3
    t = tb.get("kernels/op_types", **p, limit=100)
    stat = _rows(glob.glob(os.path.join(RUNS["paddle"], "PROF_*", "mindstudio_profiler_output",
                                        "op_statistic_*.csv"))[0])
    assert t["source"] == "file" and t["total_rows"] == len(stat)
    top = max(stat, key=lambda r: float(r["Total Time(us)"]))
    assert t["rows"][0]["type"] == top["OP Type"]
    assert abs(t["rows"][0]["ratio_pct"] - float(top["Ratio(%)"])) <= 1e-6
    only = tb.get("kernels/op_types", **p, core="AI_CORE", limit=100)
    assert {r["core_type"] for r in only["rows"]} == {"AI_CORE"}
    code, body = tb.status("kernels/op_types", **p, core="x" * 5000)
    assert code == 400 and "too long" in body["error"]
