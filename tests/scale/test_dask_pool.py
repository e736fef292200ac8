"""The Dask reader backend against a real `distributed.LocalCluster` (scheduler and worker
processes on loopback): the entries its workers build are the local pool's, byte for byte;
TensorBoard reading through it answers every view as TensorBoard reading locally; a worker
killed mid-build is retried; an unreachable scheduler falls back with a clear note."""
from __future__ import annotations

import logging
import os
import shutil
import time

import pytest

from tb_plugin import cache as cache_mod
from tb_plugin.loading import Loader
from tb_plugin.loading.dask_pool import DaskReaderPool, make_pool
from tb_plugin.loading.pool import ReaderPool
from tests.tb_server import FIXTURES, TensorBoard
from tests.unit.crashing_build import die_once, square

distributed = pytest.importorskip("distributed")

RUNS = ("torch_npu_dist4", "kineto_gpu", "msprof_paddle")


@pytest.fixture(scope="module")
def cluster():
    # Worker processes are spawned and must import this checkout's tb_plugin.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = root + (os.pathsep + old if old else "")
    lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  silence_logs=logging.ERROR)
    try:
        yield lc
    finally:
        lc.close()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("logdir")
    for run in RUNS:
        shutil.copytree(os.path.join(FIXTURES, run), d / run, symlinks=True)
    return str(d)


def _build_all(logdir: str, cache_dir: str, scheduler: str | None) -> Loader:
    loader = Loader(logdir, cache=cache_mod.ProfileCache(cache_dir), scheduler=scheduler)
    assert loader.notes() == [], loader.notes()
    loader.scan()
    deadline = time.time() + 600
    while time.time() < deadline:
        states = [st for r in loader.runs() for st in loader.span_states(r.name)]
        if states and all(st.all_done for st in states):
            break
        time.sleep(0.2)
    else:
        raise AssertionError("builds did not finish")
    assert all(st.state == "ready" and st.trace_state == "ready" and st.advice_state == "ready"
               for st in states), \
        [(st.span.root, st.error, st.trace_error) for st in states]
    return loader


def _entry_files(root: str) -> dict[str, bytes]:
    """Every file of every entry and derived document, with meta.json's stage durations
    (wall-clock times, the only fields that differ between two builds) taken out."""
    import json

    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            with open(path, "rb") as fh:
                data = fh.read()
            if f == cache_mod.META_FILE:
                doc = json.loads(data)
                assert doc["meta"].pop("load_seconds") is not None
                doc["meta"].pop("trace_seconds", None)
                data = json.dumps(doc, sort_keys=True).encode()
            out[os.path.relpath(path, root)] = data
    return out


def test_dask_workers_build_the_same_entries_as_local_readers(cluster, logdir, tmp_path):
    local = _build_all(logdir, str(tmp_path / "local"), scheduler="")
    dask = _build_all(logdir, str(tmp_path / "dask"), scheduler=cluster.scheduler_address)
    try:
        assert isinstance(dask._pool, DaskReaderPool)
        a, b = _entry_files(local.cache.root), _entry_files(dask.cache.root)
        n_entries = sum(1 for r in local.runs() for _ in local.span_states(r.name))
        assert sum(p.endswith(cache_mod.META_FILE) for p in a) == n_entries >= 6
        assert sorted(a) == sorted(b)
        different = [p for p in a if a[p] != b[p]]
        assert different == []
    finally:
        local.stop(terminate_readers=True)
        dask.stop(terminate_readers=True)


def _answers(tb: TensorBoard) -> dict:
    out = {}
    for run in tb.get("runs")["runs"]:
        name = run["name"]
        info = tb.get("run", run=name)
        for w in info["workers"]:
            for span in w["spans"]:
                where = dict(run=name, worker=w["name"], span=span)
                for route in ("summary", "steps", "operators", "kernels", "memory",
                              "advisor", "trace/tracks", "trace/summary"):
                    status, body = tb.status(route, **where)
                    out[(name, w["name"], span, route)] = (status, body)
        if "distributed" in info["views"]:
            out[(name, "distributed")] = tb.status("distributed", run=name)
    return out


def test_tensorboard_on_a_dask_cluster_answers_as_with_local_readers(cluster, logdir):
    local = TensorBoard(logdir).start()
    try:
        local.wait_loaded()
        expected = _answers(local)
    finally:
        local.stop()
    remote = TensorBoard(logdir, extra_env={
        "NPU_PROFILER_DASK_SCHEDULER": cluster.scheduler_address}).start()
    try:
        remote.wait_loaded()
        got = _answers(remote)
        assert "reading locally" not in remote.log()
    finally:
        remote.stop()
    assert len(expected) >= 7 * 8
    # A view a profile lacks (e.g. memory of a trace without memory events) answers 404 on
    # both sides; the rest must be answers.
    assert sum(status == 200 for status, _ in expected.values()) >= 7 * 6
    assert got == expected


def test_a_task_whose_worker_dies_is_run_again(cluster, tmp_path):
    pool = DaskReaderPool(cluster.scheduler_address)
    try:
        marker = str(tmp_path / "died-once")
        # The first worker to run it dies (os._exit); the scheduler reschedules the task.
        assert pool.submit(die_once, marker).result(timeout=180) == "second try"
        assert os.path.exists(marker)
        assert pool.submit(square, 9).result(timeout=60) == 81
    finally:
        pool.shutdown()


def test_an_unreachable_scheduler_falls_back_to_local_readers_with_a_note(tmp_path):
    started = time.time()
    pool, note = make_pool(1, scheduler="tcp://127.0.0.1:9")
    try:
        assert isinstance(pool, ReaderPool)
        assert "tcp://127.0.0.1:9" in note and "reading locally" in note
        assert time.time() - started < 60
        assert pool.submit(square, 5).result(timeout=120) == 25
    finally:
        pool.shutdown()
    loader = Loader("", cache=cache_mod.ProfileCache(str(tmp_path)),
                    scheduler="tcp://127.0.0.1:9")
    try:
        assert any("tcp://127.0.0.1:9" in n for n in loader.notes())
    finally:
        loader.stop()
