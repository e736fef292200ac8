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
