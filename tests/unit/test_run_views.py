"""`/run` and `/runs` answer from the span facts kept when each build finished (never by
opening profiles), with the views of the registry; the run status is a pure function."""
import json
import os
import shutil
import time

import pytest
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from tb_plugin.cache import ProfileCache
from tb_plugin.http import api_runs, views
from tb_plugin.loading import Loader, SpanFacts, SpanState
from tb_plugin.loading.status import run_status
from tb_plugin.span_source import SpanSource
from tests.tb_server import FIXTURES

DIST4 = os.path.join(FIXTURES, "torch_npu_dist4")
KINETO_ONE = os.path.join(FIXTURES, "kineto_gpu", "gpu-host_8811.1735000009500000123.pt.trace.json")


def _get(handler, loader, **args):
    req = Request(EnvironBuilder(query_string=args).get_environ())
    resp = handler(req, loader)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return json.loads(resp.get_data())


def _wait_all(loader, runs, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        sts = [loader.run_status(r) for r in runs]
        if all(s["state"] != "loading" and s["trace_state"] != "loading" for s in sts):
            return
        time.sleep(0.2)
    raise AssertionError([loader.run_status(r) for r in runs])


def _views_by_opening_profiles(loader, run):
    """The views as the old `/run` found them: open every ready profile of the run."""
    # The advisor is listed for every ready profile (its rules say what they lack).
    table_views = [("overview", ("steps",)), ("advisor", None), ("operators", ("operators",)),
                   ("kernels", ("kernels",)),
                   ("memory", ("memory_records", "memory_allocations", "module_memory")),
                   ("trace", ("slices", "counters")), ("dispatch", ("slices",))]
    found = set()
    for st in loader.span_states(run):
        prof = loader.cache.load(st.key)
        found.add("advisor")
        for v, tabs in table_views:
            if tabs is not None and any(prof.rows.get(t, 0) > 0 for t in tabs) or (
                    v in ("trace", "dispatch") and prof.meta.trace_deferred):
                found.add(v)
    return [v for v, _ in table_views if v in found]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runviews")
    logdir = tmp / "logs"
    shutil.copytree(DIST4, logdir / "dist4")
    (logdir / "one").mkdir()
    shutil.copy(KINETO_ONE, logdir / "one" / os.path.basename(KINETO_ONE))
    loader = Loader(str(logdir), cache=ProfileCache(str(tmp / "cache")), max_workers=1)
    loader.scan()
    _wait_all(loader, ["dist4", "one"])
    yield loader
    loader.stop()


def test_run_lists_the_registry_views_without_opening_profiles(loaded, monkeypatch):
    expected = {r: _views_by_opening_profiles(loaded, r) for r in ("dist4", "one")}
    # The four ranks each have step_trace_time, operator/kernel details, memory records and
    # a trace_view.json (see the fixture), and four profiler_info_{rank}.json.
    assert expected["dist4"] == ["overview", "advisor", "operators", "kernels", "memory", "trace",
                                 "dispatch"]

    def no_open(*a, **k):
        raise AssertionError("a profile was opened to answer /run or /runs")

    monkeypatch.setattr(loaded.open_profiles, "get", no_open)
    monkeypatch.setattr(loaded.cache, "load", no_open)
    info = _get(api_runs.run, loaded, run="dist4")
    assert info["views"] == expected["dist4"] + ["distributed"]
    assert info["titles"]["distributed"] == "Distributed" and set(info["titles"]) == set(info["views"])
    assert [w["rank"] for w in info["workers"]] == [0, 1, 2, 3]
    assert all(w["device"] == "npu" for w in info["workers"])
    one = _get(api_runs.run, loaded, run="one")
    assert one["views"] == expected["one"] and "distributed" not in one["views"]
    assert one["workers"][0]["device"] == "gpu" and one["workers"][0]["producer"] == "kineto"
    runs = _get(api_runs.runs, loaded)
    assert [r["name"] for r in runs["runs"]] == ["dist4", "one"]
    assert all(r["state"] == "ready" and r["trace_state"] == "ready" for r in runs["runs"])


def test_facts_are_renewed_after_the_timeline_stage(loaded):
    for st in loaded.span_states("dist4"):
        prof = loaded.cache.load(st.key)
        assert st.trace_state == "ready" and st.facts.trace_ready
        assert st.facts.rows == {k: int(v) for k, v in prof.rows.items()}
        assert st.facts.rows.get("slices", 0) > 0  # written by the second stage
        assert st.facts.errors == [e.to_json() for e in prof.errors]


def test_every_view_is_declared_once_and_served_by_its_route_module():
    from tb_plugin import plugin

    ids = [v.id for v in views.VIEWS]
    assert len(ids) == len(set(ids))
    for v in views.VIEWS:
        assert v.routes.ROUTES and set(v.routes.ROUTES) <= set(plugin.ROUTES)
        assert bool(v.per_profile) != bool(v.when_run) or not v.listed
    assert set(api_runs.ROUTES) <= set(plugin.ROUTES)


def _state(tmp_path, name, **kw):
    span = SpanSource(logdir=str(tmp_path), run="r", worker=name, span="1", producer="kineto",
                      root=str(tmp_path / "r" / name), files=())
    st = SpanState(span=span, key=name)
    for k, v in kw.items():
        setattr(st, k, v)
    return st


def test_run_status_is_computed_from_the_states(tmp_path):
    empty = SpanFacts(rows={"kernels": 0}, errors=[], has_data=False)
    good = SpanFacts(rows={"kernels": 3}, errors=[{"path": "r/a", "message": "bad row"}],
                     has_data=True)
    states = [_state(tmp_path, "a", state="ready", facts=good, trace_state="ready",
                     advice_state="ready"),
              _state(tmp_path, "b", state="loading")]
    s = run_status("r", states)
    assert (s["state"], s["progress"], s["trace_state"], s["trace_progress"]) == \
        ("loading", 0.5, "loading", 0.5)
    # A timeline served whose advice stage still runs is not done yet; a failed advice
    # stage is done (its documents are made on request).
    advising = _state(tmp_path, "a", state="ready", facts=good, trace_state="ready",
                      advice_state="loading")
    s = run_status("r", [advising])
    assert (s["trace_state"], s["trace_progress"]) == ("loading", 0.0)
    advising.advice_failed()
    s = run_status("r", [advising])
    assert (s["trace_state"], s["trace_progress"], s["errors"]) == \
        ("ready", 1.0, [{"path": "r/a", "message": "bad row"}])
    states[1] = _state(tmp_path, "b", state="error", error="boom")
    s = run_status("r", states)
    assert s["state"] == "ready" and s["progress"] == 1.0 and s["trace_state"] == "ready"
    assert s["errors"] == [{"path": "r/a", "message": "bad row"},
                           {"path": "r/b", "message": "boom"}]
    only_empty = [_state(tmp_path, "c", state="ready", facts=empty, trace_state="error",
                         trace_error="no index")]
    s = run_status("r", only_empty)
    assert s["state"] == "error" and s["errors"] == [{"path": "r/c", "message": "no index"}]
    assert run_status("r", [])["state"] == "ready"


def test_the_plugin_module_imports_nothing_heavy():
    """TensorBoard imports the plugin at its start; the plugin starts its first reader
    before importing pandas and the rest of itself (the reader then imports on another
    core meanwhile), so the module itself must stay light."""
    import subprocess
    import sys

    code = ("import sys, tb_plugin.plugin, tb_plugin.loading.dask_pool; "
            "print(sorted(m for m in ('pandas', 'pyarrow', 'tb_plugin.loading.loader', "
            "'tb_plugin.http.views') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]", out
