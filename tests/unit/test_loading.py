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
