"""SQLite exports through a real TensorBoard: the db-only and the text-only render of one job
answer every view with the same numbers; the committed db fixture runs load; a locked or
truncated db is a per-file error that clears once the file changes."""
from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import time

import pytest

from fixtures import generate as g
from tests.tb_server import FIXTURES, TensorBoard

JOB = dict(producer="torch_npu", level="Level1", world_size=2, spans=1, steps=2, first_step=5,
           layers=1, with_comm=True, seed=7001, host="same", base_pid=45000)
MS_JOB = dict(producer="mindspore", level="Level1", world_size=2, render_ranks=[0], spans=1,
              steps=2, first_step=1, layers=1, with_comm=True, task_queue=False, seed=7002,
              host="ms", base_pid=46000, group="hccl_world_group")
MSPROF_JOB = dict(producer="msprof", level="Level1", world_size=2, render_ranks=[0], spans=1,
                  steps=2, first_step=1, layers=1, with_comm=True, task_queue=False, seed=7003,
                  host="pp", base_pid=47000, model_id=1, with_stack=False,
                  group="hccl_world_group")


@pytest.fixture(scope="module")
def tb(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("logs")
    for name, job in (("tn", JOB), ("ms", MS_JOB), ("mp", MSPROF_JOB)):
        g.write_run(g.Config(**job), str(logdir / f"{name}_text"))
        g.write_run(g.Config(**job, export_type=("db",)), str(logdir / f"{name}_db"))
    for name in ("sqlite_torch_npu_db", "sqlite_torch_npu_text_db", "sqlite_mindspore_db",
                 "sqlite_msprof_db"):
        shutil.copytree(os.path.join(FIXTURES, name), str(logdir / "committed" / name))
    with TensorBoard(str(logdir)).loaded() as t:
        yield t


def _profiles(tb, run):
    info = tb.get("run", run=run)
    return [(w["name"], s) for w in info["workers"] for s in w["spans"]]


def _same(tb, route, text_run, db_run, skip=(), **extra):
    """The route's answers for every profile of the two runs are equal (`skip`: keys left out,
    each with its reason at the caller)."""
    pt, pd_ = _profiles(tb, text_run), _profiles(tb, db_run)
    assert [w for w, _ in pt] == [w for w, _ in pd_] and pt
    for (w, s), (_, s2) in zip(pt, pd_):
        a = tb.get(route, run=text_run, worker=w, span=s, **extra)
        b = tb.get(route, run=db_run, worker=w, span=s2, **extra)
        for k in skip:
            a.pop(k, None), b.pop(k, None)
        assert a == b, (route, extra, w)
    return a


def test_runs_load_without_errors(tb):
    runs = {r["name"]: r for r in tb.get("runs")["runs"]}
    for name in ("tn_db", "ms_db", "mp_db", "committed/sqlite_torch_npu_db",
                 "committed/sqlite_torch_npu_text_db", "committed/sqlite_mindspore_db",
                 "committed/sqlite_msprof_db"):
        assert runs[name]["state"] == "ready", runs[name]
        assert runs[name]["errors"] == [], runs[name]["errors"]
    assert {w["producer"] for w in tb.get("run", run="mp_db")["workers"]} == {"msprof"}


VIEW_ROUTES = [("summary", {}), ("steps", {}), ("kernels", {"group_by": "name"}),
               ("kernels", {"group_by": "type"}), ("kernels", {"group_by": "core"}),
               ("memory", {}), ("memory/allocations", {})]


@pytest.mark.parametrize("route,extra", VIEW_ROUTES)
def test_torch_npu_db_only_equals_text_only(tb, route, extra):
    body = _same(tb, route, "tn_text", "tn_db", **extra)
    assert body  # an answer with content, not an empty view


@pytest.mark.parametrize("group_by", ["name", "name_shape"])
def test_operators_db_only_equal_text_only(tb, group_by):
    body = _same(tb, "operators", "tn_text", "tn_db", group_by=group_by)
    assert body["rows"]


def test_operator_call_stacks_equal(tb):
    (w, s), = _profiles(tb, "tn_text")[:1]
    rows = tb.get("operators", run="tn_text", worker=w, span=s, group_by="name")["rows"]
    name = next(r for r in rows if r.get("name") == "aten::mm")["name"]
    _same(tb, "operators/stack", "tn_text", "tn_db", name=name)


@pytest.mark.parametrize("route,extra", [("distributed", {}), ("distributed/comm_ops", {}),
                                         ("distributed/links", {})])
def test_distributed_db_only_equals_text_only(tb, route, extra):
    a = tb.get(route, run="tn_text", **extra)
    b = tb.get(route, run="tn_db", **extra)
    assert a.pop("run", "tn_text") == "tn_text" and b.pop("run", "tn_db") == "tn_db"
    assert a == b and a


@pytest.mark.parametrize("route,extra", VIEW_ROUTES)
def test_mindspore_db_only_equals_text_only(tb, route, extra):
    # MindSpore's db framework-op tables are not read (docs/formats.md §2.20), and its text
    # output does not name the device where RANK_DEVICE_MAP does.
    skip = ("operator_count", "device_id") if route == "summary" else ()
    _same(tb, route, "ms_text", "ms_db", skip=skip, **extra)


@pytest.mark.parametrize("route,extra", [("kernels", {"group_by": "name"}),
                                         ("kernels", {"group_by": "core"})])
def test_msprof_db_only_kernels_equal_text_only(tb, route, extra):
    _same(tb, route, "mp_text", "mp_db", **extra)


def test_timeline_from_db_has_the_text_slices(tb):
    """The db timeline holds the framework, CANN and device slices of the trace file."""
    for (w, s), (_, s2) in zip(_profiles(tb, "tn_text"), _profiles(tb, "tn_db")):
        for q in ("aten::mm", "aclnnMm_MatMulCommon_MatMulV2", "hcom_allReduce_"):
            a = tb.get("trace/search", run="tn_text", worker=w, span=s, q=q, limit=500)
            b = tb.get("trace/search", run="tn_db", worker=w, span=s2, q=q, limit=500)
            starts = lambda body: sorted((h["name"], h["start_us"], h["dur_us"])  # noqa: E731
                                         for h in body["hits"])
            assert a["total"] and starts(b) and set(starts(b)) <= set(starts(a)), q


def _wait(predicate, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError("condition not reached in time")


def test_locked_and_truncated_dbs_are_errors_and_retried_when_changed(tmp_path):
    logdir = tmp_path / "logs"
    shutil.copytree(os.path.join(FIXTURES, "sqlite_torch_npu_db"), str(logdir / "run"))
    dbs = sorted(glob_dbs(str(logdir)))
    assert [os.path.basename(p) for p in dbs] == ["ascend_pytorch_profiler_0.db",
                                                  "ascend_pytorch_profiler_1.db"]
    truncated, locked = dbs
    with open(truncated, "rb") as fh:
        whole = fh.read()
    with open(truncated, "wb") as fh:  # half-written
        fh.write(whole[: len(whole) // 3])
    holder = sqlite3.connect(locked, timeout=0)
    holder.execute("BEGIN EXCLUSIVE")  # the writer still holds it
    tb = TensorBoard(str(logdir)).start()
    try:
        runs = {r["name"]: r for r in tb.wait_loaded()["runs"]}
        errors = {os.path.basename(e["path"]): e["message"] for e in runs["run"]["errors"]}
        assert "database is locked" in errors["ascend_pytorch_profiler_1.db"]
        assert "not a usable SQLite database" in errors["ascend_pytorch_profiler_0.db"] or \
            "malformed" in errors["ascend_pytorch_profiler_0.db"]
        assert runs["run"]["state"] == "ready"
        # the rest of each span loads: analysis.db's steps
        for w in ("rank0", "rank1"):
            span = tb.get("run", run="run")["workers"][0]["spans"][0]
            assert tb.get("steps", run="run", worker=w, span=span)["steps"]
        # the writer finishes: the files change, the next scan reads them again
        holder.execute("INSERT INTO META_DATA VALUES ('finished', '1')")
        holder.commit()
        holder.close()
        with open(truncated, "wb") as fh:
            fh.write(whole)
        _wait(lambda: next((r for r in tb.get("runs")["runs"] if r["name"] == "run"
                            and r["state"] == "ready" and r["errors"] == []), None))
        db = sqlite3.connect(locked)
        n = db.execute("SELECT (SELECT COUNT(*) FROM COMPUTE_TASK_INFO) + "
                       "(SELECT COUNT(*) FROM COMMUNICATION_OP)").fetchone()[0]
        db.close()
        span = tb.get("run", run="run")["workers"][1]["spans"][0]
        rows = tb.get("kernels", run="run", worker="rank1", span=span, group_by="name")["rows"]
        assert sum(r["calls"] for r in rows) == n
    finally:
        with contextlib.suppress(sqlite3.Error):
            holder.close()
        tb.stop()


def glob_dbs(root):
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
            if f.startswith("ascend_pytorch_profiler")]


def test_advisor_runs_on_db_only_profiles(tb):
    """The advisor reads the same tables: it answers for db-only runs without failures, with
    the same findings as for the text render of the job."""
    a = tb.get("advisor", run="tn_text")
    b = tb.get("advisor", run="tn_db")
    assert b["failed"] == [] and b["profiles"] == a["profiles"] == 2
    fired_text = {r["rule"] for r in a["rules"] if r["fired"]}
    fired_db = {r["rule"] for r in b["rules"] if r["fired"]}
    assert fired_db == fired_text and fired_text
    key = lambda f: (f["rule"], f["worker"], f["impact_us"], f["title"])  # noqa: E731
    assert sorted(map(key, b["findings"])) == sorted(map(key, a["findings"]))
    for run in ("committed/sqlite_mindspore_db", "committed/sqlite_msprof_db"):
        assert tb.get("advisor", run=run)["failed"] == []
