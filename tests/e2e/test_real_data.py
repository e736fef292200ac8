"""End to end on real profiler output: a real `tensorboard` process over fixtures/real.

Expected numbers are computed here from the raw files with the standard library, not by
the code under test.
"""
from __future__ import annotations

import gzip
import json
import os
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.tb_server import REAL_DATA, TensorBoard

pytestmark = pytest.mark.e2e

RESNET = os.path.join(REAL_DATA, "kineto_resnet50_w0", "worker0.1623143089861.pt.trace.json.gz")


@pytest.fixture(scope="module")
def tb():
    with TensorBoard(REAL_DATA).loaded(240) as server:
        yield server




def _resnet_events():
    with gzip.open(RESNET, "rt") as fh:
        return json.load(fh)["traceEvents"]


def test_every_real_run_is_discovered_and_loads(tb):
    runs = {r["name"]: r for r in tb.get("runs")["runs"]}
    assert {"kineto_resnet50_w0", "hta_alexnet", "hta_cpu_only",
            "mindinsight_msprof_cann63", "torch213_cnn", "torch213_transformer",
            "torch213_dataloader_w0", "torch213_dataloader_w2",
            "torch213_multithread"} <= set(runs)
    for name, r in runs.items():
        assert r["state"] in ("ready", "error"), name
        assert r["progress"] == 1.0


def test_every_route_answers_for_every_profile(tb):
    for r in tb.get("runs")["runs"]:
        info = tb.get("run", run=r["name"])
        for w in info["workers"]:
            for span in w["spans"]:
                p = dict(run=r["name"], worker=w["name"], span=span)
                for route, extra in [("steps", {}), ("summary", {}), ("kernels", {"group_by": "name"}),
                                     ("kernels", {"group_by": "core"}), ("operators", {}),
                                     ("operators", {"group_by": "name_shape"}), ("memory", {}),
                                     ("memory/allocations", {})]:
                    code, body = tb.status(route, **p, **extra)
                    assert code == 200, (route, p, body)


def test_kineto_kernel_totals_match_the_raw_trace(tb):
    evs = _resnet_events()
    kernels = [e for e in evs if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel"]
    expected_total = sum(float(e["dur"]) for e in kernels)
    names = {e["name"] for e in kernels}
    data = tb.get("kernels", run="kineto_resnet50_w0", worker="worker0", span="1623143089861",
             group_by="name", limit=10000)
    assert data["total_rows"] == len(names)
    assert sum(r["calls"] for r in data["rows"]) == len(kernels)
    assert sum(r["total_us"] for r in data["rows"]) == pytest.approx(expected_total, rel=1e-9)
    by_name: dict[str, float] = {}
    for e in kernels:
        by_name[e["name"]] = by_name.get(e["name"], 0.0) + float(e["dur"])
    top = max(by_name, key=by_name.get)
    assert data["rows"][0]["name"] == top
    assert data["rows"][0]["total_us"] == pytest.approx(by_name[top])


def test_kineto_steps_match_profiler_step_events(tb):
    """torch-tb-profiler's step window: starts at max(host start, previous step end), ends at
    max(host end, end of the device work launched by runtime calls inside the host step);
    trailing steps that launched less than 80% of the previous step's work are dropped."""
    evs = _resnet_events()
    windows = sorted((int(e["name"].split("#")[1]), float(e["ts"]), float(e["ts"]) + float(e["dur"]))
                     for e in evs
                     if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))
    launches = [(float(e["ts"]), float(e["ts"]) + float(e["dur"]), e["args"]["correlation"])
                for e in evs
                if e.get("ph") == "X" and str(e.get("cat", "")).lower() in ("runtime", "cuda_runtime")
                and "correlation" in e.get("args", {})]
    device = {}
    for e in evs:
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() in (
                "kernel", "memcpy", "memset", "gpu_memcpy", "gpu_memset"):
            device.setdefault(e.get("args", {}).get("correlation"), []).append(
                float(e["ts"]) + float(e["dur"]))
    dev_end: dict[int, float] = {}
    launched: dict[int, int] = {}
    for a, b, corr in launches:
        for n, s, e in windows:
            if s <= a and b <= e and corr in device:
                dev_end[n] = max([dev_end.get(n, 0.0)] + device[corr])
                launched[n] = launched.get(n, 0) + len(device[corr])
    expected = {}
    prev_end = windows[0][1]
    for n, s, e in windows:
        start = max(prev_end, s)
        end = max(e, dev_end.get(n, e))
        expected[n] = end - start
        prev_end = end
    data = tb.get("steps", run="kineto_resnet50_w0", worker="worker0", span="1623143089861")
    got = {s["step"]: s for s in data["steps"]}
    steps = [n for n, _, _ in windows]
    last = steps[-1]
    keep = set(steps)
    if launched.get(last, 0) < 0.8 * launched.get(steps[-2], 0):
        keep.discard(last)
    assert set(got) == keep
    for n in keep:
        assert got[n]["total_us"] == pytest.approx(expected[n], abs=1.0), n
        assert sum(got[n]["breakdown"].values()) == pytest.approx(got[n]["total_us"], abs=1.0)
    assert "kernel" in data["categories"]


def test_msprof_cann63_tasks_become_kernels(tb):
    # Ascend Hardware tasks across the per-iteration timeline files.
    tdir = os.path.join(REAL_DATA, "mindinsight_msprof_cann63",
                        "PROF_000001_20230818142704322_COJGGGCANRMICFBC", "device_0", "timeline")
    count = 0
    for f in sorted(os.listdir(tdir)):
        if f.startswith("msprof_"):
            with open(os.path.join(tdir, f)) as fh:
                evs = json.load(fh)
            pids = {e["pid"] for e in evs if e.get("ph") == "M" and e.get("name") == "process_name"
                    and e.get("args", {}).get("name") in ("Ascend Hardware", "Task Scheduler")}
            # The "Step Trace" thread holds iteration markers, not device tasks.
            markers = {(e["pid"], e["tid"]) for e in evs if e.get("ph") == "M"
                       and e.get("name") == "thread_name"
                       and str(e.get("args", {}).get("name", "")).startswith("Step Trace")}
            count += sum(1 for e in evs if e.get("ph") == "X" and e.get("pid") in pids
                         and (e.get("pid"), e.get("tid")) not in markers)
    assert count > 0
    info = tb.get("run", run="mindinsight_msprof_cann63")
    w = info["workers"][0]
    assert w["producer"] == "msprof" and w["device"] == "npu"
    data = tb.get("kernels", run="mindinsight_msprof_cann63", worker=w["name"], span=w["spans"][0],
             group_by="name", limit=10000)
    assert sum(r["calls"] for r in data["rows"]) == count


def test_unknown_names_are_404_and_bad_parameters_400(tb):
    assert tb.status("run", run="no-such-run")[0] == 404
    assert tb.status("kernels", run="kineto_resnet50_w0", worker="nobody")[0] == 404
    code, body = tb.status("kernels", run="kineto_resnet50_w0", worker="worker0",
                           span="1623143089861", group_by="colour")
    assert code == 400 and "group_by" in body["error"]
    code, body = tb.status("kernels", run="kineto_resnet50_w0", worker="worker0",
                           span="1623143089861", sort="-nonexistent")
    assert code == 400
    code, body = tb.status("kernels", run="kineto_resnet50_w0", worker="worker0",
                           span="1623143089861", limit="-5")
    assert code == 400
    # Two spans: span is required.
    code, body = tb.status("steps", run="kineto_resnet50_w0", worker="worker0")
    assert code == 400 and "span" in body["error"]


def test_csv_export_matches_json(tb):
    p = dict(run="kineto_resnet50_w0", worker="worker0", span="1623143089861", group_by="name")
    rows = tb.get("kernels", **p, limit=10000)["rows"]
    with urllib.request.urlopen(f"{tb.api}/kernels?{urllib.parse.urlencode(dict(p, format='csv'))}") as r:
        assert r.headers["Content-Type"].startswith("text/csv")
        text = r.read().decode("utf-8")
    import csv
    import io
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert len(parsed) == len(rows)
    assert [row["name"] for row in parsed] == [row["name"] for row in rows]
    assert float(parsed[0]["total_us"]) == pytest.approx(rows[0]["total_us"])


def test_trace_download_serves_the_original_file(tb):
    url = f"{tb.api}/trace/download?" + urllib.parse.urlencode(
        dict(run="kineto_resnet50_w0", worker="worker0", span="1623143089861"))
    with urllib.request.urlopen(url) as r:
        body = r.read()
        assert "attachment" in r.headers["Content-Disposition"]
    with open(RESNET, "rb") as fh:
        assert body == fh.read()


def test_static_route_serves_nothing_outside_static(tb):
    for path in ["assets/../../plugin.py", "assets/%2e%2e/%2e%2e/plugin.py",
                 "assets/..%2f..%2fplugin.py"]:
        try:
            with urllib.request.urlopen(f"{tb.api}/{path}") as r:
                assert b"NpuProfilerPlugin" not in r.read()
        except urllib.error.HTTPError as err:
            assert err.code in (400, 404)
