"""Per-profile fixed cost, as behaviour: the timeline stage makes the dispatch analysis once
for the advisor's host_dispatch rule and the stored /dispatch document, and reader processes
keep their imported objects out of the collector's full walks."""
from __future__ import annotations

import gc
import json

from tb_plugin import discovery
from tb_plugin.advisor import thresholds as advisor_thresholds
from tb_plugin.analysis import dispatch
from tb_plugin.cache import ProfileCache, entry_key
from tb_plugin.loading import build
from tb_plugin.loading.pool import ReaderPool
from tests.analysis.test_dispatch import write_span
from tests.unit.crashing_build import freeze_count_in_reader


def _load(tmp_path, monkeypatch):
    root = str(tmp_path / "logdir")
    write_span(root)
    runs, _ = discovery.discover(root)
    (span,) = [s for r in runs.values() for s in r.spans()]
    cache = ProfileCache(str(tmp_path / "cache"))
    key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
    calls = []
    real = dispatch.path_tables

    def counted(profile):
        calls.append(profile)
        return real(profile)

    monkeypatch.setattr(dispatch, "path_tables", counted)
    build.build_entry(span, cache.root, key)
    views_calls = len(calls)
    build.build_trace(span, cache.root, key)
    build.build_advice(span, cache.root, key)
    return cache, key, views_calls, calls


def test_timeline_stage_makes_the_dispatch_analysis_once(tmp_path, monkeypatch):
    cache, key, views_calls, calls = _load(tmp_path, monkeypatch)
    assert views_calls == 0  # the views stage does not analyze dispatch
    # the host_dispatch rule (gap threshold 1000 µs, the view's own) and the document
    assert advisor_thresholds.load()["dispatch_gap_us"] * 1000 == dispatch.GAP_NS
    assert len(calls) == 1
    assert not dispatch._SHARED  # nothing kept after the stage
    # Both consumers got their answer: the stored document equals one made afresh from the
    # entry, and the rule ran on the analysis (it applies: the trace has Dequeue events).
    stored = cache.read_derived("dispatch", key, f".v{dispatch.VERSION}.json")
    fresh = json.loads(json.dumps(dispatch.document(cache.load(key))))
    assert stored == fresh
    assert stored["summary"]["kind"] == "task_queue" and stored["summary"]["calls"] == 3
    advice_files = [p for p in (tmp_path / "cache").rglob("*.json") if "advisor" in str(p)]
    assert advice_files, "the advice was stored"
    advice = json.loads(advice_files[0].read_text())
    rule = next(r for r in advice["rules"] if r["rule"] == "host_dispatch")
    assert rule["applies"] is True, rule  # it ran on the shared analysis, and did not fail


def test_a_different_gap_threshold_is_analyzed_on_its_own(tmp_path, monkeypatch):
    # Sharing is per gap: the rule with its own threshold must not read the view's gaps.
    path = tmp_path / "thresholds.json"
    path.write_text(json.dumps({"dispatch_gap_us": 5000}))
    monkeypatch.setenv("NPU_PROFILER_ADVISOR_THRESHOLDS", str(path))
    _, _, _, calls = _load(tmp_path, monkeypatch)
    assert len(calls) == 2


def test_reader_processes_freeze_their_imports_and_tensorboard_does_not():
    pool = ReaderPool(max_workers=1, inprocess=False)
    try:
        in_reader = pool.submit(freeze_count_in_reader).result(timeout=180)
    finally:
        pool.shutdown()
    assert in_reader > 10_000  # the modules, classes and functions of pandas, pyarrow, ours
    before = gc.get_freeze_count()
    build.prepare_reader_process()  # here: the main process (in-process loading)
    assert gc.get_freeze_count() == before
