"""The trace decoded beside the views stage (`build.build_early_trace`): the timeline stage
takes its tables instead of decoding the trace again, and the entry is the same as when the
timeline stage decodes it itself."""
import glob
import json
import os
import shutil
import time

import pyarrow as pa
import pytest

from tb_plugin import discovery, readers
from tb_plugin.cache import ProfileCache, entry_key
from tb_plugin.loading import Loader, build_entry, build_trace
from tb_plugin.loading import loader as loader_module
from tb_plugin.loading.build import build_early_trace
from tests.tb_server import FIXTURES

LEVEL1 = sorted(glob.glob(os.path.join(FIXTURES, "torch_npu_level1", "*_ascend_pt")))[0]


def _one_span(tmp_path, name="logs"):
    logdir = tmp_path / name
    logdir.mkdir()
    shutil.copytree(LEVEL1, logdir / os.path.basename(LEVEL1))
    runs, _ = discovery.discover(str(logdir))
    (span,) = [s for r in runs.values() for s in r.spans()]
    key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
    return logdir, span, key


def _entry(cache: ProfileCache, key: str) -> tuple[dict, dict]:
    """(meta.json without the timings, {file: Arrow table}) of an entry."""
    directory = cache.entry_dir(key)
    with open(os.path.join(directory, "meta.json")) as fh:
        doc = json.load(fh)
    for k in ("load_seconds", "trace_seconds"):
        doc["meta"].pop(k, None)
    tables = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".arrow"):
            tables[name] = pa.ipc.open_file(pa.memory_map(os.path.join(directory, name))
                                            ).read_all()
    return doc, tables


def _trace_file(span) -> str:
    (path,) = [p for p in span.files if os.path.basename(p) == "trace_view.json"]
    return path


def test_the_timeline_stage_takes_the_early_trace_and_makes_the_same_entry(tmp_path):
    logdir, span, key = _one_span(tmp_path)
    reference = ProfileCache(str(tmp_path / "reference"))
    build_entry(span, reference.root, key)
    build_trace(span, reference.root, key)

    cache = ProfileCache(str(tmp_path / "cache"))
    assert build_early_trace(span, cache.root, key) == {"key": key, "cached": False}
    early = cache.early_trace_dir(key)
    with open(os.path.join(early, "meta.json")) as fh:
        part = json.load(fh)
    assert part["rows"]["slices"] > 0 and part["meta"]["args_file"]
    build_entry(span, cache.root, key)
    # The trace is gone now: the timeline can only come from the early tables.
    os.remove(_trace_file(span))
    build_trace(span, cache.root, key)

    assert not os.path.exists(early)
    meta, tables = _entry(cache, key)
    ref_meta, ref_tables = _entry(reference, key)
    assert meta == ref_meta
    assert meta["rows"]["slices"] == part["rows"]["slices"]
    assert sorted(tables) == sorted(ref_tables)
    for name, table in tables.items():
        assert table.equals(ref_tables[name]), name


def test_a_second_early_decoding_of_the_same_span_does_nothing(tmp_path):
    _, span, key = _one_span(tmp_path)
    cache = ProfileCache(str(tmp_path / "cache"))
    build_early_trace(span, cache.root, key)
    before = os.listdir(cache.early_trace_dir(key))
    assert build_early_trace(span, cache.root, key) == {"key": key, "cached": True}
    assert os.listdir(cache.early_trace_dir(key)) == before


def test_no_early_decoding_of_a_trace_the_views_stage_reads_itself(tmp_path):
    """Without step_trace_time.csv the views need the trace's step windows: the views stage
    reads the trace, so there is nothing to decode early."""
    logdir, span, key = _one_span(tmp_path)
    os.remove(os.path.join(span.root, "ASCEND_PROFILER_OUTPUT", "step_trace_time.csv"))
    runs, _ = discovery.discover(str(logdir))
    (span,) = [s for r in runs.values() for s in r.spans()]
    assert readers.deferred_trace(span) is None
    cache = ProfileCache(str(tmp_path / "cache"))
    assert build_early_trace(span, cache.root, key) == {"key": key, "cached": True}
    assert not os.path.exists(cache.early_trace_dir(key))


def test_an_early_trace_the_entry_does_not_need_is_removed(tmp_path):
    logdir, span, key = _one_span(tmp_path)
    cache = ProfileCache(str(tmp_path / "cache"))
    build_early_trace(span, cache.root, key)
    # The files changed meanwhile: now the views stage reads the trace itself.
    os.remove(os.path.join(span.root, "ASCEND_PROFILER_OUTPUT", "step_trace_time.csv"))
    runs, _ = discovery.discover(str(logdir))
    (span,) = [s for r in runs.values() for s in r.spans()]
    build_entry(span, cache.root, key)
    slices = json.load(open(os.path.join(cache.entry_dir(key), "meta.json")))["rows"]["slices"]
    build_trace(span, cache.root, key)
    assert not os.path.exists(cache.early_trace_dir(key))
    meta, _ = _entry(cache, key)
    assert meta["meta"]["trace_ready"] and not meta["meta"].get("trace_deferred")
    assert meta["rows"]["slices"] == slices


STAGED_SPANS = [s for fixture in sorted(os.listdir(FIXTURES))
                if os.path.isdir(os.path.join(FIXTURES, fixture))
                for r in discovery.discover(os.path.join(FIXTURES, fixture))[0].values()
                for s in r.spans() if s.producer in readers.STAGED]


@pytest.mark.parametrize("span", STAGED_SPANS, ids=lambda s: s.rel(s.root))
def test_deferred_trace_is_the_trace_the_views_stage_leaves(span):
    profile = readers.read(span, None, stage="views")
    trace = readers.deferred_trace(span)
    has_trace_file = any(os.path.basename(p).startswith("trace_view.json") for p in span.files)
    assert (trace is not None) == (bool(profile.meta.trace_deferred) and has_trace_file)
    if trace is not None:
        assert os.path.basename(trace).startswith("trace_view.json")


def _wait_traced(loader, timeout=120):
    deadline = time.time() + timeout
    while loader.run_status(".")["trace_state"] != "ready":
        assert time.time() < deadline, loader.run_status(".")
        time.sleep(0.2)


def test_the_loader_decodes_a_lone_span_s_trace_beside_its_views(tmp_path, monkeypatch):
    """One span, two readers: the second reader decodes the trace while the first builds the
    views (the size rule set to any size here), and the timeline stage takes that decoding."""
    monkeypatch.setattr(loader_module, "EARLY_TRACE_MIN_VIEWS_BYTES", 0)
    logdir, span, key = _one_span(tmp_path)
    reference = ProfileCache(str(tmp_path / "reference"))
    build_entry(span, reference.root, key)
    build_trace(span, reference.root, key)

    loader = Loader(str(logdir), cache=ProfileCache(str(tmp_path / "cache")), max_workers=2)
    try:
        loader.scan()
        _wait_traced(loader)
        (st,) = loader.span_states(".")
        assert st.state == "ready" and st.trace_state == "ready"
        assert loader._early_started == {(span.run, span.worker, span.span)}
        assert not os.path.exists(loader.cache.early_trace_dir(key))
        meta, tables = _entry(loader.cache, key)
    finally:
        loader.stop()
    ref_meta, ref_tables = _entry(reference, key)
    assert meta["rows"] == ref_meta["rows"] and meta["errors"] == ref_meta["errors"]
    for name in ("slices.arrow", "flows.arrow", "tracks.arrow", "trace_slices.arrow"):
        assert tables[name].equals(ref_tables[name]), name


def test_the_loader_does_not_decode_early_below_the_size_rule(tmp_path):
    logdir, span, key = _one_span(tmp_path)
    views = sum(os.path.getsize(p) for p in span.files if p != _trace_file(span))
    assert views < loader_module.EARLY_TRACE_MIN_VIEWS_BYTES
    assert loader_module._early_trace_bytes(span) == 0
    loader = Loader(str(logdir), cache=ProfileCache(str(tmp_path / "cache")), max_workers=2)
    try:
        loader.scan()
        _wait_traced(loader)
        assert loader._early_started == set()
    finally:
        loader.stop()


def test_an_early_trace_of_a_span_whose_views_fail_is_removed(tmp_path, monkeypatch):
    from tests.unit.crashing_build import views_fail_slowly

    monkeypatch.setattr(loader_module, "EARLY_TRACE_MIN_VIEWS_BYTES", 0)
    logdir, span, key = _one_span(tmp_path)
    loader = Loader(str(logdir), cache=ProfileCache(str(tmp_path / "cache")), max_workers=2,
                    build=views_fail_slowly)
    try:
        loader.scan()
        deadline = time.time() + 120
        while loader.run_status(".")["state"] == "loading" or loader._early_running:
            assert time.time() < deadline, loader.run_status(".")
            time.sleep(0.2)
        (st,) = loader.span_states(".")
        assert st.state == "error" and "on purpose" in st.error
        assert loader._early_started == {(span.run, span.worker, span.span)}
        assert not os.path.exists(loader.cache.early_trace_dir(key))
    finally:
        loader.stop()


def test_cache_info_counts_early_traces_and_clear_removes_them(tmp_path):
    from tb_plugin import cache_maintenance

    _, span, key = _one_span(tmp_path)
    cache = ProfileCache(str(tmp_path / "cache"))
    assert cache_maintenance.stats(cache)["early_traces"] == 0
    build_early_trace(span, cache.root, key)
    info = cache_maintenance.stats(cache)
    assert info["early_traces"] == 1 and info["entries"] == 0 and info["unfinished"] == 0
    early_bytes = sum(os.path.getsize(os.path.join(cache.early_trace_dir(key), f))
                      for f in os.listdir(cache.early_trace_dir(key)))
    assert info["bytes"] >= early_bytes > 0
    cache_maintenance.clear(cache)
    assert not os.path.exists(cache.early_trace_dir(key))
    assert cache_maintenance.stats(cache)["early_traces"] == 0
