"""Analysis results stored with each cache entry (analysis/stored.py): every stored result is
the one the same analysis computes from the finished entry (after the timeline stage too),
on every fixture; requests with other arguments are computed; a damaged stored file is
computed instead."""
import logging
import os

import numpy as np
import pandas as pd
import pytest

from tb_plugin import discovery
from tb_plugin.analysis import kernel_counters, overview, stored
from tb_plugin.cache import ProfileCache, entry_key
from tb_plugin.http.requests import _results, profile_result
from tb_plugin.loading import build_entry, build_trace
from tb_plugin.model import Profile, ProfileMeta
from tests.tb_server import FIXTURES


def _spans():
    runs, _ = discovery.discover(FIXTURES)
    return [s for r in sorted(runs.values(), key=lambda r: r.name) for s in r.spans()]


def _key(span) -> str:
    return entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every fixture span through both load stages: (cache, [(span, key)])."""
    cache = ProfileCache(str(tmp_path_factory.mktemp("stored-cache")))
    out = []
    for span in _spans():
        key = _key(span)
        build_entry(span, cache.root, key)
        build_trace(span, cache.root, key)
        out.append((span, key))
    return cache, out


def _equal(a, b) -> None:
    if isinstance(b, pd.DataFrame):
        assert isinstance(a, pd.DataFrame)
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    else:
        assert a == b


def test_every_stored_result_is_what_the_finished_entry_computes(built):
    cache, spans = built
    count = {s.name: 0 for s in stored.STORED}
    for span, key in spans:
        prof = cache.load(key)
        names = prof.meta.stored_results or {}
        assert prof.meta.trace_ready
        for s in stored.STORED:
            if s.name not in names:
                continue
            kept = stored.read(prof, s)
            assert kept is not None, (span.root, s.name)
            # The reference: the analysis on a fresh copy of the entry, tables read back.
            _equal(kept, s.compute(cache.load(key), **s.kwargs))
            count[s.name] += 1
    # Not vacuous: each stored analysis was stored (and compared) for most fixture spans.
    assert all(n >= len(spans) // 2 for n in count.values()), count


def test_answers_come_from_the_stored_file_and_other_arguments_are_computed(built, tmp_path):
    cache, spans = built
    span, key = next((s, k) for s, k in spans if s.producer == "torch_npu"
                     and "kernels-by-name" in (cache.load(k).meta.stored_results or {}))
    prof = cache.load(key)
    steps = stored.read(prof, stored.lookup(overview.steps, {}))
    assert steps["steps"], "a torch_npu fixture has steps"
    # Marked in the stored file: the answer shows the mark, so it was read, not computed.
    marked = dict(steps, categories=steps["categories"] + ["stored-mark"])
    path = os.path.join(prof.directory, "stored-overview-steps.json")
    original = open(path, "rb").read()
    try:
        import msgspec

        with open(path, "wb") as fh:
            fh.write(msgspec.json.encode(marked))
        _results.clear()
        assert profile_result(prof, key, overview.steps)["categories"][-1] == "stored-mark"
    finally:
        with open(path, "wb") as fh:
            fh.write(original)
        _results.clear()
    # Defaults spelt out or left out find the same stored result.
    assert stored.lookup(kernel_counters.table_with_counters, {}) is \
        stored.lookup(kernel_counters.table_with_counters, {"group_by": "name", "step": None})
    # Another grouping is not stored: computed, and equal to the analysis itself.
    assert stored.lookup(kernel_counters.table_with_counters, {"group_by": "type"}) is None
    by_type = profile_result(prof, key, kernel_counters.table_with_counters, group_by="type")
    _equal(by_type, kernel_counters.table_with_counters(cache.load(key), group_by="type"))
    _results.clear()


def test_a_damaged_stored_file_is_computed_instead(built, tmp_path, caplog):
    cache, spans = built
    span, key = next((s, k) for s, k in spans
                     if "kernels-by-name" in (cache.load(k).meta.stored_results or {}))
    prof = cache.load(key)
    path = os.path.join(prof.directory, "stored-kernels-by-name.arrow")
    original = open(path, "rb").read()
    try:
        with open(path, "wb") as fh:
            fh.write(original[: len(original) // 3])
        with caplog.at_level(logging.WARNING, logger="tb_plugin.analysis.stored"):
            got = stored.result(cache.load(key), kernel_counters.table_with_counters,
                                group_by="name", step=None)
        assert "unreadable" in caplog.text
    finally:
        with open(path, "wb") as fh:
            fh.write(original)
    _equal(got, kernel_counters.table_with_counters(cache.load(key)))


def test_a_document_json_cannot_hold_exactly_is_not_stored(tmp_path):
    """A step time that is NaN (JSON has no NaN): the steps document is left out and made
    on request; the documents without one are stored."""
    steps = pd.DataFrame({"step": np.array([1, 2], dtype=np.int64),
                          "total_ns": np.array([1000.0, np.nan])})
    prof = Profile(tables={"steps": steps}, meta=ProfileMeta(producer="torch_npu"),
                   directory=None)
    written = stored.write_all(prof, str(tmp_path))
    assert "overview-steps" not in written
    assert not os.path.exists(tmp_path / "stored-overview-steps.json")
    assert written.get("operators-by-name") == "arrow"
    assert os.path.isfile(tmp_path / "stored-operators-by-name.arrow")


def test_results_whose_tables_the_timeline_stage_rewrites_are_made_again(built, tmp_path):
    """`refresh`: a rewritten steps table makes the steps and key-figure documents again
    (from the new table), and leaves the kernels' stored table as it was."""
    import shutil

    cache, spans = built
    span, key = next((s, k) for s, k in spans if s.producer == "torch_npu"
                     and cache.load(k).rows.get("steps", 0) > 1)
    own = ProfileCache(str(tmp_path / "own"))
    shutil.copytree(cache.entry_dir(key), own.entry_dir(key))
    prof = own.load(key)
    kernels_file = os.path.join(prof.directory, "stored-kernels-by-name.arrow")
    kernels_stat = os.stat(kernels_file)
    before = stored.inputs_state(prof)
    steps = prof.table("steps").copy()
    steps = steps.iloc[: len(steps) // 2].reset_index(drop=True)  # half the steps go
    prof.set("steps", steps, keep_extra=True)
    stored.refresh(prof, prof.directory, before)
    fresh = Profile(tables={}, meta=prof.meta, directory=prof.directory, rows=dict(prof.rows))
    kept = stored.read(fresh, stored.lookup(overview.steps, {}))
    assert [s["step"] for s in kept["steps"]] == steps["step"].tolist()
    assert kept == overview.steps(fresh)
    assert stored.read(fresh, stored.lookup(overview.summary, {}))["step_count"] == len(steps)
    after = os.stat(kernels_file)
    assert (after.st_ino, after.st_mtime_ns) == (kernels_stat.st_ino, kernels_stat.st_mtime_ns)
    # Nothing changed: nothing is made again.
    again = stored.inputs_state(fresh)
    stored.refresh(fresh, fresh.directory, again)
    assert os.stat(kernels_file).st_mtime_ns == after.st_mtime_ns


def test_a_stored_document_is_sent_as_written_and_is_the_computed_answer(built):
    """The overview's and memory view's routes send a stored document's bytes as they are
    (`profile_raw_result`): the body is the file, and it is the body of the answer computed
    from the finished entry; other arguments are computed."""
    import msgspec

    from tb_plugin.analysis import memory
    from tb_plugin.http.requests import profile_raw_result
    from tb_plugin.http.responses import json_response

    cache, spans = built
    docs = {"overview-steps": (overview.steps, {}), "overview-summary": (overview.summary, {}),
            "memory": (memory.summary, {"max_points": 2000})}
    sent = {name: 0 for name in docs}
    _results.clear()
    for span, key in spans:
        prof = cache.load(key)
        names = prof.meta.stored_results or {}
        for name, (fn, kwargs) in docs.items():
            body = json_response(profile_raw_result(prof, key, fn, **kwargs)).get_data()
            expected = json_response(fn(cache.load(key), **kwargs)).get_data()
            assert body == expected, (span.root, name)
            if names.get(name) == "json":
                with open(os.path.join(prof.directory, f"stored-{name}.json"), "rb") as fh:
                    assert body == fh.read()
                assert isinstance(profile_raw_result(prof, key, fn, **kwargs), msgspec.Raw)
                sent[name] += 1
    assert all(n >= len(spans) // 2 for n in sent.values()), sent
    # Another point budget is not stored: computed, a value (not JSON text).
    span, key = next((s, k) for s, k in spans if "memory" in
                     (cache.load(k).meta.stored_results or {}))
    prof = cache.load(key)
    other = profile_raw_result(prof, key, memory.summary, max_points=100)
    assert isinstance(other, dict) and other == memory.summary(cache.load(key), max_points=100)
    _results.clear()


def test_a_damaged_stored_document_is_computed_instead(built, caplog):
    from tb_plugin.http.requests import profile_raw_result

    cache, spans = built
    span, key = next((s, k) for s, k in spans
                     if (cache.load(k).meta.stored_results or {}).get("overview-steps") == "json")
    path = os.path.join(cache.load(key).directory, "stored-overview-steps.json")
    original = open(path, "rb").read()
    try:
        with open(path, "wb") as fh:
            fh.write(original[: len(original) - 2])  # cut: no longer one JSON value
        _results.clear()
        with caplog.at_level(logging.WARNING, logger="tb_plugin.analysis.stored"):
            assert stored.raw_read(cache.load(key), overview.steps) is None
            prof = cache.load(key)
            got = profile_raw_result(prof, key, overview.steps)
        assert "unreadable" in caplog.text
    finally:
        with open(path, "wb") as fh:
            fh.write(original)
        _results.clear()
    assert got == overview.steps(cache.load(key))
