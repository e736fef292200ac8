"""Loader behaviour with real reader processes: a dying reader spoils only its own span."""
import glob
import os
import shutil
import time

from tb_plugin.cache import ProfileCache
from tb_plugin.loading import Loader
from tests.tb_server import FIXTURES
from tests.unit.crashing_build import build_or_die

KINETO = sorted(glob.glob(os.path.join(FIXTURES, "kineto_gpu", "*.pt.trace.json")))[0]


def _wait(loader, run, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = loader.run_status(run)
        if st["state"] != "loading":
            return st
        time.sleep(0.2)
    raise AssertionError(f"still loading: {loader.run_status(run)}")


def test_a_reader_process_that_dies_fails_only_its_span(tmp_path):
    logdir = tmp_path / "logs"
    (logdir / "mixed").mkdir(parents=True)
    for name in ("a.1.pt.trace.json", "b.2.pt.trace.json", "crash.3.pt.trace.json"):
        shutil.copy(KINETO, logdir / "mixed" / name)
    loader = Loader(str(logdir), cache=ProfileCache(str(tmp_path / "cache")), max_workers=1,
                    build=build_or_die)
    try:
        loader.scan()
        st = _wait(loader, "mixed")
    finally:
        loader.stop()
    assert st["state"] == "ready"
    failed = {e["path"] for e in st["errors"]}
    assert failed == {"mixed/crash.3.pt.trace.json"}
    assert "stopped unexpectedly" in st["errors"][0]["message"]
    states = {s.span.worker: s.state for s in loader.span_states("mixed")}
    assert states == {"a": "ready", "b": "ready", "crash": "error"}


def test_unwritable_cache_root_falls_back_to_a_private_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = ProfileCache(str(blocker / "cache"))
    assert cache.writable
    assert not cache.root.startswith(str(blocker))


def test_timeline_uses_the_cached_index_after_the_second_stage(tmp_path, monkeypatch):
    """After stage 2 the trace routes read the index the reader wrote, even through a
    profile object opened before it (never rebuilt in TensorBoard's memory)."""
    from tb_plugin.analysis import trace as trace_view
    from tb_plugin.analysis import trace_index as ti
    from tb_plugin.cache import open_profile
    from tb_plugin.http import api_trace

    logdir = tmp_path / "logs"
    shutil.copytree(os.path.join(FIXTURES, "torch_npu_level1"), logdir / "level1")
    loader = Loader(str(logdir), cache=ProfileCache(str(tmp_path / "cache")), max_workers=1)
    try:
        loader.scan()
        _wait(loader, "level1")
        deadline = time.time() + 120
        while loader.run_status("level1")["trace_state"] != "ready":
            assert time.time() < deadline, loader.run_status("level1")
            time.sleep(0.2)
        st = loader.span_states("level1")[0]
        assert st.trace_state == "ready"
        # A stale profile object (as opened before the index existed) in the loader's LRU.
        stale = open_profile(loader.cache.entry_dir(st.key))
        assert ti.has_index(stale)
        stale.meta.pop("trace_index")
        loader.open_profiles.put(st.key, stale)

        def no_rebuild(*a, **k):
            raise AssertionError("the index was rebuilt in memory")

        monkeypatch.setattr(ti, "build_index", no_rebuild)
        args = {"run": "level1", "worker": st.span.worker, "span": st.span.span}
        idx, prof = api_trace._index(loader, args)
        assert prof is not stale and ti.has_index(prof)
        assert idx.profile is prof and len(idx.start) == prof.rows["trace_slices"]
        assert trace_view.index_for(prof, st.key) is idx
    finally:
        loader.stop()


def test_the_timeline_is_served_while_its_advice_stage_runs(tmp_path, monkeypatch):
    """Stage 3 (advice, dispatch path) follows the timeline: the timeline answers as soon as
    its index is written; the dispatch path says "loading" until its document is stored; the
    run counts as done once the advice stage has ended, and both documents are then stored
    as made from the entry."""
    import json
    import threading

    import pytest

    from tb_plugin.analysis import dispatch
    from tb_plugin.http import api_dispatch, api_trace
    from tb_plugin.http.responses import ApiError
    from tb_plugin.loading import build
    from tests.analysis.test_dispatch import write_span

    monkeypatch.setenv("NPU_PROFILER_INPROCESS", "1")
    logdir = tmp_path / "logs"
    write_span(str(logdir))
    started, release = threading.Event(), threading.Event()

    def held_advice(span, cache_root, key):
        started.set()
        assert release.wait(120)
        return build.build_advice(span, cache_root, key)

    loader = Loader(str(logdir), cache=ProfileCache(str(tmp_path / "cache")),
                    build_advice=held_advice)
    try:
        loader.scan()
        assert started.wait(120), [vars(s) for r in loader.runs()
                                   for s in loader.span_states(r.name)]
        (run,) = [r.name for r in loader.runs()]
        (st,) = loader.span_states(run)
        assert (st.state, st.trace_state, st.advice_state) == ("ready", "ready", "loading")
        args = {"run": run, "worker": st.span.worker, "span": st.span.span}
        idx, prof = api_trace._index(loader, args)  # the timeline answers now
        assert len(idx.start) == prof.rows["trace_slices"] > 0
        with pytest.raises(ApiError) as err:
            api_dispatch._document(loader, args)
        assert err.value.status == 503 and err.value.extra["state"] == "loading"
        assert loader.run_status(run)["trace_state"] == "loading"
        assert loader.cache.read_derived("dispatch", st.key, f".v{dispatch.VERSION}.json") is None
        release.set()
        deadline = time.time() + 120
        while not st.all_done:
            assert time.time() < deadline
            time.sleep(0.05)
        assert st.advice_state == "ready"
        assert loader.run_status(run)["trace_state"] == "ready"
        stored = loader.cache.read_derived("dispatch", st.key, f".v{dispatch.VERSION}.json")
        assert stored == json.loads(json.dumps(dispatch.document(loader.cache.load(st.key))))
        assert stored["summary"]["calls"] == 3
        advice = glob.glob(os.path.join(loader.cache.root, "advisor", "*", f"{st.key}.*-t.json"))
        assert len(advice) == 1, advice
        assert api_dispatch._document(loader, args) == stored
    finally:
        release.set()
        loader.stop()


def test_a_reader_process_is_started_with_the_loader(tmp_path):
    """Its start and imports overlap TensorBoard's own start, instead of following the
    first scan (which hands its work over once that reader is ready)."""
    (tmp_path / "logs").mkdir()
    loader = Loader(str(tmp_path / "logs"), cache=ProfileCache(str(tmp_path / "cache")),
                    max_workers=2)
    try:
        loader.start()
        deadline = time.time() + 120
        while True:
            executor = loader._pool._pool
            procs = list(getattr(executor, "_processes", None) or {}) if executor else []
            if procs:
                break
            assert time.time() < deadline, "no reader process was started"
            time.sleep(0.1)
        assert len(procs) == 1 and loader.runs() == []  # with nothing found to read
    finally:
        loader.stop(terminate_readers=True)


def test_cached_views_whose_last_span_has_its_timeline_still_get_theirs(tmp_path, monkeypatch):
    """A restart over a cache where every span's views are there, the last span found has
    its timeline too and an earlier one does not (a command that exited while its readers
    were still indexing): the earlier one's timeline is still built (it was queued while
    later spans were pending, and no other event would start it)."""
    from tb_plugin import discovery
    from tb_plugin.loading import build
    from tb_plugin.loading.scan import span_states

    monkeypatch.setenv("NPU_PROFILER_INPROCESS", "1")
    logdir = tmp_path / "logs"
    (logdir / "run").mkdir(parents=True)
    for name in ("a.1.pt.trace.json", "b.2.pt.trace.json"):
        shutil.copy(KINETO, logdir / "run" / name)
    cache = ProfileCache(str(tmp_path / "cache"))
    _, order = span_states(discovery.discover(str(logdir))[0], {})
    assert len(order) == 2
    for st in order:
        build.build_entry(st.span, cache.root, st.key)
    first, last = order
    build.build_trace(last.span, cache.root, last.key)
    assert not cache.load(first.key).meta.trace_ready and cache.load(last.key).meta.trace_ready
    loader = Loader(str(logdir), cache=cache)
    try:
        loader.scan()
        deadline = time.time() + 120
        while not all(st.all_done for st in loader.span_states("run")):
            assert time.time() < deadline, [(s.span.worker, s.trace_state, s.advice_state)
                                            for s in loader.span_states("run")]
            time.sleep(0.1)
        assert {s.span.worker: s.trace_state for s in loader.span_states("run")} == \
            {"a": "ready", "b": "ready"}
        assert cache.load(first.key).meta.trace_ready
    finally:
        loader.stop()


def test_a_restart_over_a_full_cache_does_not_wait_for_a_reader(tmp_path, monkeypatch):
    """Spans whose every stage is in the cache are served by the first scan at once; the
    scan waits for the reader started with the loader only when there is one span to read
    (a reader that never becomes ready stands for a slow machine here)."""
    import concurrent.futures as cf

    from tb_plugin import discovery
    from tb_plugin.loading import build, loader as loader_mod
    from tb_plugin.loading.scan import span_states

    monkeypatch.setenv("NPU_PROFILER_INPROCESS", "1")
    monkeypatch.setattr(loader_mod, "WARM_UP_WAIT_S", 3.0)
    logdir = tmp_path / "logs"
    (logdir / "run").mkdir(parents=True)
    shutil.copy(KINETO, logdir / "run" / "a.1.pt.trace.json")
    cache = ProfileCache(str(tmp_path / "cache"))
    (st,) = span_states(discovery.discover(str(logdir))[0], {})[1]
    for stage in (build.build_entry, build.build_trace, build.build_advice):
        stage(st.span, cache.root, st.key)

    def scan_seconds(loader):
        loader._warming = cf.Future()  # never ready
        t = time.time()
        loader.scan()
        return time.time() - t

    loader = Loader(str(logdir), cache=cache)
    try:
        assert scan_seconds(loader) < 2.0
        assert [s.all_done for s in loader.span_states("run")] == [True]
    finally:
        loader.stop()
    shutil.copy(KINETO, logdir / "run" / "b.2.pt.trace.json")  # one span to read
    loader = Loader(str(logdir), cache=cache)
    try:
        assert scan_seconds(loader) >= 3.0
        deadline = time.time() + 120  # the read ends before the test does
        while not all(s.all_done for s in loader.span_states("run")):
            assert time.time() < deadline
            time.sleep(0.1)
    finally:
        loader.stop()
    # Two spans to read: the pool starts a second reader for them anyway, so the scan
    # sends them at once instead of waiting for the first reader.
    shutil.copy(KINETO, logdir / "run" / "c.3.pt.trace.json")
    shutil.copy(KINETO, logdir / "run" / "d.4.pt.trace.json")
    loader = Loader(str(logdir), cache=cache)
    try:
        assert scan_seconds(loader) < 2.0
        deadline = time.time() + 120
        while not all(s.all_done for s in loader.span_states("run")):
            assert time.time() < deadline
            time.sleep(0.1)
    finally:
        loader.stop()
