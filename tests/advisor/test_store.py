"""Advice is computed once per profile: stored next to the cache, found again by a new
process (here: a fresh store), and precomputable from the reader process."""
from __future__ import annotations

import glob
import os
import time

import pytest

from fixtures import generate as g
from tb_plugin.advisor import runs
from tb_plugin.advisor import thresholds as th
from tb_plugin.advisor.store import AdviceStore
from tb_plugin.cache import ProfileCache, open_profile
from tb_plugin.loading import Loader

from .planted import config


def _loaded(logdir, cache_root, monkeypatch):
    monkeypatch.setenv("NPU_PROFILER_INPROCESS", "1")
    loader = Loader(logdir, cache=ProfileCache(cache_root))
    loader.scan()
    deadline = time.time() + 120
    while time.time() < deadline:
        sts = [st for r in loader.runs() for st in loader.span_states(r.name)]
        if sts and all(st.state == "ready" and st.trace_state == "ready" and st.all_done
                       for st in sts):
            return loader
        time.sleep(0.1)
    raise AssertionError("profiles did not load")


def test_stored_once_and_reused(tmp_path, monkeypatch):
    logdir = str(tmp_path / "logs")
    g.write_run(config(aicpu_op=True), os.path.join(logdir, "run"))
    loader = _loaded(logdir, str(tmp_path / "cache"), monkeypatch)
    try:
        run = loader.runs()[0]
        t = th.load()
        first = runs.run_result(loader, run, t)
        assert [f["rule"] for f in first["findings"]] == ["aicpu_ops"]
        files = glob.glob(os.path.join(loader.cache.root, "advisor", "*", "*.json"))
        assert len(files) == 1
        # A new process: empty memory, the stored file answers; nothing is recomputed.
        monkeypatch.setattr(runs, "_advice", AdviceStore())
        monkeypatch.setattr(runs, "compute_profile", lambda *a, **k: pytest.fail("recomputed"))
        assert runs.run_result(loader, run, t)["findings"] == first["findings"]
        # Other thresholds are another variant: computed again.
        with pytest.raises(pytest.fail.Exception):
            runs.run_result(loader, run, th.load({"aicpu_min_us": 1000}))
    finally:
        loader.stop()


def test_precompute_from_the_reader_side(tmp_path, monkeypatch):
    logdir = str(tmp_path / "logs")
    g.write_run(config(transdata_kernels=1), os.path.join(logdir, "run"))
    loader = _loaded(logdir, str(tmp_path / "cache"), monkeypatch)
    try:
        (st,) = [st for r in loader.runs() for st in loader.span_states(r.name)]
        prof = open_profile(loader.cache.entry_dir(st.key))
        monkeypatch.setattr(runs, "_advice", AdviceStore())
        runs.precompute(prof, st.span, loader.cache.root, st.key)
        monkeypatch.setattr(runs, "_advice", AdviceStore())
        monkeypatch.setattr(runs, "compute_profile", lambda *a, **k: pytest.fail("recomputed"))
        res = runs.run_result(loader, loader.runs()[0], th.load())
        assert [f["rule"] for f in res["findings"]] == ["transdata"]
        assert res["findings"][0]["worker"] == st.span.worker
    finally:
        loader.stop()
