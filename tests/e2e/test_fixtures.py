"""End to end on the bundled fixtures with a real `tensorboard` process.

Expected values are read from the fixture files here with the standard library (csv/json),
independently of the readers under test.
"""
from __future__ import annotations

import csv
import glob
import os
import shutil
import time

import pytest

from tests.tb_server import FIXTURES, TensorBoard, get_json

pytestmark = pytest.mark.e2e

LEVEL1 = os.path.join(FIXTURES, "torch_npu_level1")


@pytest.fixture(scope="module")
def tb():
    with TensorBoard(FIXTURES).loaded() as server:
        yield server




def read_csv(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def level1_span():
    spans = sorted(glob.glob(os.path.join(LEVEL1, "*_ascend_pt")))
    d = spans[0]
    ts = os.path.basename(d).rsplit("_", 3)[-3]
    return d, ts


def test_every_fixture_run_loads_with_its_producer(tb):
    runs = {r["name"]: r for r in tb.get("runs")["runs"]}
    expected = {"torch_npu_level1": "torch_npu", "torch_npu_dist4": "torch_npu",
                "torch_npu_legacy_2023": "torch_npu", "mindspore_2x": "mindspore",
                "msprof_paddle": "msprof", "kineto_gpu": "kineto", "bad_input": "torch_npu",
                "real/mindinsight_msprof_cann63": "msprof", "real/kineto_resnet50_w0": "kineto",
                "real/hta_alexnet": "kineto", "real/hta_cpu_only": "kineto",
                "real/mindspore_legacy_run1": "mindspore_legacy",
                "real/torch213_cnn": "kineto", "real/torch213_transformer": "kineto",
                "real/torch213_dataloader_w0": "kineto", "real/torch213_dataloader_w2": "kineto",
                "real/torch213_multithread": "kineto"}
    assert set(expected) <= set(runs)
    for name, producer in expected.items():
        assert runs[name]["state"] == "ready", (name, runs[name])
        info = tb.get("run", run=name)
        assert {w["producer"] for w in info["workers"]} == {producer}
        assert info["views"], name
    # No errors on healthy runs.
    for name in expected:
        if name != "bad_input":
            assert runs[name]["errors"] == [], (name, runs[name]["errors"])


def test_every_route_answers_on_every_profile(tb):
    for r in tb.get("runs")["runs"]:
        info = tb.get("run", run=r["name"])
        for w in info["workers"]:
            for span in w["spans"]:
                p = dict(run=r["name"], worker=w["name"], span=span)
                for route, extra in [("steps", {}), ("summary", {}),
                                     ("kernels", {"group_by": "name"}),
                                     ("kernels", {"group_by": "type"}),
                                     ("kernels", {"group_by": "core"}),
                                     ("operators", {"group_by": "name"}),
                                     ("operators", {"group_by": "name_shape"}),
                                     ("memory", {}), ("memory/allocations", {})]:
                    code, body = tb.status(route, **p, **extra)
                    assert code == 200, (route, p, body)


def test_dist4_workers_are_ranks(tb):
    info = tb.get("run", run="torch_npu_dist4")
    assert [w["rank"] for w in info["workers"]] == [0, 1, 2, 3]
    assert [w["name"] for w in info["workers"]] == ["rank0", "rank1", "rank2", "rank3"]
    assert all(w["device"] == "npu" for w in info["workers"])


def test_npu_kernels_match_kernel_details(tb):
    span_dir, span = level1_span()
    rows = read_csv(os.path.join(span_dir, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv"))
    by_core: dict[str, list[float]] = {}
    for r in rows:
        by_core.setdefault(r["Accelerator Core"], []).append(float(r["Duration(us)"]))
    info = tb.get("run", run="torch_npu_level1")
    worker = info["workers"][0]["name"]
    data = tb.get("kernels", run="torch_npu_level1", worker=worker, span=span, group_by="core")
    got = {r["core"]: r for r in data["rows"]}
    assert set(got) == set(by_core)
    for core, durs in by_core.items():
        assert got[core]["calls"] == len(durs)
        assert got[core]["total_us"] == pytest.approx(sum(durs), rel=1e-9, abs=1e-3)
        assert got[core]["max_us"] == pytest.approx(max(durs))
        assert got[core]["min_us"] == pytest.approx(min(durs))
    # Step filter keeps exactly that step's rows.
    step_ids = sorted({int(r["Step Id"]) for r in rows if r.get("Step Id")})
    s0 = step_ids[0]
    data = tb.get("kernels", run="torch_npu_level1", worker=worker, span=span, group_by="core",
             step=s0)
    assert sum(r["calls"] for r in data["rows"]) == sum(1 for r in rows if r.get("Step Id") == str(s0))


def test_npu_steps_match_step_trace_time(tb):
    span_dir, span = level1_span()
    rows = read_csv(os.path.join(span_dir, "ASCEND_PROFILER_OUTPUT", "step_trace_time.csv"))
    info = tb.get("run", run="torch_npu_level1")
    data = tb.get("steps", run="torch_npu_level1", worker=info["workers"][0]["name"], span=span)
    assert data["categories"][:4] == ["computing", "communication_not_overlapped",
                                      "overlapped", "free"]
    got = {s["step"]: s for s in data["steps"]}
    assert set(got) == {int(r["Step"]) for r in rows}
    for r in rows:
        s = got[int(r["Step"])]
        comp = float(r["Computing"])
        nover = float(r["Communication(Not Overlapped)"])
        free = float(r["Free"])
        assert s["breakdown"]["computing"] == pytest.approx(comp, abs=1e-3)
        assert s["breakdown"]["communication_not_overlapped"] == pytest.approx(nover, abs=1e-3)
        assert s["breakdown"]["overlapped"] == pytest.approx(float(r["Overlapped"]), abs=1e-3)
        assert s["total_us"] == pytest.approx(comp + nover + free, abs=1e-3)


def test_operators_match_operator_details(tb):
    span_dir, span = level1_span()
    rows = read_csv(os.path.join(span_dir, "ASCEND_PROFILER_OUTPUT", "operator_details.csv"))
    calls: dict[str, int] = {}
    dev_self: dict[str, float] = {}
    host_total: dict[str, float] = {}
    for r in rows:
        calls[r["Name"]] = calls.get(r["Name"], 0) + 1
        dev_self[r["Name"]] = dev_self.get(r["Name"], 0.0) + float(r["Device Self Duration(us)"])
        host_total[r["Name"]] = host_total.get(r["Name"], 0.0) + float(r["Host Total Duration(us)"])
    info = tb.get("run", run="torch_npu_level1")
    data = tb.get("operators", run="torch_npu_level1", worker=info["workers"][0]["name"],
             span=span, limit=10000)
    got = {r["name"]: r for r in data["rows"]}
    assert set(got) == set(calls)
    for name in calls:
        assert got[name]["calls"] == calls[name]
        assert got[name]["device_self_us"] == pytest.approx(dev_self[name], abs=1e-3)
        assert got[name]["host_total_us"] == pytest.approx(host_total[name], abs=1e-3)
    # Default order: device self time, descending.
    values = [r["device_self_us"] for r in data["rows"]]
    assert values == sorted(values, reverse=True)
    # Search is a case-insensitive substring of the name.
    needle = data["rows"][0]["name"][-4:].upper()
    found = tb.get("operators", run="torch_npu_level1", worker=info["workers"][0]["name"],
              span=span, search=needle, limit=10000)
    assert found["total_rows"] == sum(1 for n in calls if needle.lower() in n.lower())


def test_memory_peaks_match_memory_record(tb):
    span_dir, span = level1_span()
    rows = read_csv(os.path.join(span_dir, "ASCEND_PROFILER_OUTPUT", "memory_record.csv"))
    total = [r for r in rows if r["Component"].strip() == "PTA+GE"]
    assert total
    peak_alloc = max(float(r["Total Allocated(MB)"]) for r in total)
    peak_res = max(float(r["Total Reserved(MB)"]) for r in total)
    info = tb.get("run", run="torch_npu_level1")
    data = tb.get("memory", run="torch_npu_level1", worker=info["workers"][0]["name"], span=span)
    dev = data["devices"][0]
    assert dev["peak_allocated_mb"] == pytest.approx(peak_alloc, rel=1e-6)
    assert dev["peak_reserved_mb"] == pytest.approx(peak_res, rel=1e-6)
    comps = {c["component"] for c in data["curves"]}
    assert {"PTA", "PTA+GE"} <= comps
    # Allocations: a window keeps only blocks alive in it.
    allocs = tb.get("memory/allocations", run="torch_npu_level1",
               worker=info["workers"][0]["name"], span=span, limit=10000)
    assert allocs["total_rows"] > 0
    a = allocs["rows"][len(allocs["rows"]) // 2]
    win = tb.get("memory/allocations", run="torch_npu_level1", worker=info["workers"][0]["name"],
            span=span, start_us=a["alloc_us"], end_us=a["alloc_us"], limit=10000)
    assert 0 < win["total_rows"] <= allocs["total_rows"]
    for r in win["rows"]:
        assert r["alloc_us"] <= a["alloc_us"]
        assert r["release_us"] is None or r["release_us"] >= a["alloc_us"]


def test_bad_input_names_every_broken_file_and_keeps_the_rest(tb):
    run = {r["name"]: r for r in tb.get("runs")["runs"]}["bad_input"]
    assert run["state"] == "ready"
    paths = {e["path"] for e in run["errors"]}
    # The broken span is the later one (fixtures/bad_input/README.md).
    bad_dir = sorted(glob.glob(os.path.join(FIXTURES, "bad_input", "*_ascend_pt")))[-1]
    bad = f"bad_input/{os.path.basename(bad_dir)}/ASCEND_PROFILER_OUTPUT/"
    for f in ["trace_view.json", "kernel_details.csv", "operator_details.csv",
              "operator_memory.csv"]:
        assert bad + f in paths, (f, run["errors"])
    messages = {e["path"]: e["message"] for e in run["errors"]}
    assert "Duration(us)" in messages[bad + "kernel_details.csv"]
    assert "empty" in messages[bad + "operator_details.csv"]
    assert "truncated" in messages[bad + "trace_view.json"].lower()
    # The healthy span is untouched, and the broken span still serves what it could read.
    info = tb.get("run", run="bad_input")
    w = info["workers"][0]
    for span in w["spans"]:
        code, body = tb.status("steps", run="bad_input", worker=w["name"], span=span)
        assert code == 200 and body["steps"], span
    code, mem = tb.status("memory", run="bad_input", worker=w["name"], span=w["spans"][-1])
    assert code == 200 and mem["devices"]


def _wait(predicate, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(0.5)
    return predicate()


def test_live_discovery_empty_logdir_symlink_loop_and_cache_reuse(tmp_path):
    logdir = tmp_path / "logs"
    logdir.mkdir()
    os.symlink(str(logdir), str(logdir / "loop"))  # a symlink loop must not hang discovery
    cache = tmp_path / "cache"
    tb1 = TensorBoard(str(logdir), cache_dir=str(cache)).start()
    try:
        data = tb1.wait_loaded(60)
        assert data["runs"] == []
        # A run copied in while TensorBoard runs appears without a restart.
        shutil.copytree(LEVEL1, str(logdir / "late_run"))
        assert _wait(lambda: any(r["name"] == "late_run" and r["state"] == "ready"
                                 and r["trace_state"] == "ready"
                                 for r in get_json(f"{tb1.api}/runs")["runs"]), 90)
        span = sorted(tb1.get("run", run="late_run")["workers"][0]["spans"])[0]
        first = tb1.get("kernels", run="late_run", span=span, group_by="core")
    finally:
        tb1.stop()
    entries = sorted(glob.glob(str(cache / "v*" / "*" / "*" / "meta.json")))
    assert len(entries) == 2
    mtimes = [os.path.getmtime(p) for p in entries]
    tb2 = TensorBoard(str(logdir), cache_dir=str(cache)).start()
    try:
        tb2.wait_loaded(60)
        again = tb2.get("kernels", run="late_run", span=span, group_by="core")
        assert again == first
    finally:
        tb2.stop()
    # The restart reused the cache entries instead of parsing again.
    assert [os.path.getmtime(p) for p in entries] == mtimes
    assert len(glob.glob(str(cache / "v*" / "*" / "*" / "meta.json"))) == 2


def test_works_behind_path_prefix(tmp_path):
    logdir = tmp_path / "logs"
    shutil.copytree(os.path.join(FIXTURES, "kineto_gpu"), str(logdir / "kineto_gpu"))
    tb = TensorBoard(str(logdir), path_prefix="/x/y").start()
    try:
        data = tb.wait_loaded(60)
        assert [r["name"] for r in data["runs"]] == ["kineto_gpu"]
        assert tb.api.startswith(f"http://127.0.0.1:{tb.port}/x/y/")
    finally:
        tb.stop()
