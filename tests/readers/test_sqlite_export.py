"""SQLite export readers (readers/sqlite_export.py through the torch_npu, MindSpore and msprof
readers): every table against values computed here with sqlite3, the schema variants, the
text-first rule and bad files."""
from __future__ import annotations

import glob
import os
import shutil
import sqlite3

import numpy as np
import pytest

from tb_plugin import discovery, readers
from tb_plugin.readers import columns as C
from tb_plugin.readers import sqlite_db, sqlite_export

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "fixtures")


def _copy(tmp_path, name):
    dst = tmp_path / "logs" / name
    shutil.copytree(os.path.join(FIXTURES, name), str(dst))
    return str(tmp_path / "logs")


def _spans(logdir):
    runs, _ = discovery.discover(logdir)
    return [s for r in runs.values() for s in r.spans()]


def _read(span, stage="all"):
    return readers.read(span, None, stage=stage)


def _db(span, pattern="ascend_*profiler*.db"):
    return sorted(glob.glob(os.path.join(span.root, "**", pattern), recursive=True))[0]


def _q(path, sql):
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture
def tn(tmp_path):
    logdir = _copy(tmp_path, "sqlite_torch_npu_db")
    spans = _spans(logdir)
    assert [s.worker for s in spans] == ["rank0", "rank1"]
    return spans[0]


def test_discovery_finds_db_only_spans(tmp_path):
    logdir = _copy(tmp_path, "sqlite_torch_npu_db")
    _copy(tmp_path, "sqlite_mindspore_db")
    _copy(tmp_path, "sqlite_msprof_db")
    spans = _spans(logdir)
    assert sorted((s.run, s.producer) for s in spans) == [
        ("sqlite_mindspore_db", "mindspore"), ("sqlite_msprof_db", "msprof"),
        ("sqlite_torch_npu_db", "torch_npu"), ("sqlite_torch_npu_db", "torch_npu")]
    # the db files are in the cache key: a changed db is read again
    assert all(any(f.endswith(".db") for f in s.files) for s in spans)


def test_torch_npu_kernels(tn):
    p = _read(tn)
    assert p.errors == []
    db = _db(tn)
    k = p.table("kernels")
    n_compute = _q(db, "SELECT COUNT(*) FROM TASK JOIN COMPUTE_TASK_INFO USING (globalTaskId)")[0][0]
    n_comm = _q(db, "SELECT COUNT(*) FROM COMMUNICATION_OP")[0][0]
    assert len(k) == n_compute + n_comm and n_comm > 0
    by_name = dict(_q(db, "SELECT s.value, SUM(t.endNs - t.startNs) FROM TASK t JOIN "
                          "COMPUTE_TASK_INFO c USING (globalTaskId) JOIN STRING_IDS s ON "
                          "s.id = c.name GROUP BY s.value"))
    got = k[k["core_type"] != "COMMUNICATION"].groupby("name", observed=True)["dur_ns"].sum()
    assert {n: int(v) for n, v in got.items()} == by_name
    # block_dim from blockNum, exact ns starts
    gid, start, block = _q(db, "SELECT t.globalTaskId, t.startNs, c.blockNum FROM TASK t JOIN "
                               "COMPUTE_TASK_INFO c USING (globalTaskId) ORDER BY t.startNs "
                               "LIMIT 1")[0]
    row = k[k["start_ns"] == start].iloc[0]
    assert int(row["block_dim"]) == block
    # PMU: one float column per TASK_PMU_INFO metric, values as stored, named as the CSV
    # counters are (`pmu_aiv_time` for `aiv_time(us)`, readers/columns.py PMU_COUNTERS)
    metric, value = _q(db, f"SELECT s.value, p.value FROM TASK_PMU_INFO p JOIN STRING_IDS s "
                           f"ON s.id = p.name WHERE p.globalTaskId = {gid} LIMIT 1")[0]
    column = C.pmu_column(metric)
    assert column is not None and column.startswith("pmu_"), metric
    assert row[column] == pytest.approx(value)
    # a task without a row for a metric is that counter's N/A cell, counted like the CSV's
    assert p.meta.pmu_na_cells[column] == int(k[column].isna().sum()) > 0
    # step of the STEP_TIME window holding the launching CANN call
    launch = _q(db, f"SELECT MIN(a.startNs) FROM CANN_API a JOIN TASK t ON t.connectionId = "
                    f"a.connectionId WHERE t.globalTaskId = {gid}")[0][0]
    step = _q(db, f"SELECT id FROM STEP_TIME WHERE startNs <= {launch} AND endNs >= {launch}")
    assert int(row["step"]) == step[0][0]
    # wait: gap since the previous task of the device ended
    ordered = k.sort_values("start_ns")
    s, e = ordered["start_ns"].to_numpy(), (ordered["start_ns"] + ordered["dur_ns"]).to_numpy()
    expect = np.concatenate([[0], np.maximum(s[1:] - np.maximum.accumulate(e)[:-1], 0)])
    assert (ordered["wait_ns"].to_numpy() == expect).all()


def test_torch_npu_operators_and_stacks(tn):
    p = _read(tn)
    db = _db(tn)
    ops = p.table("operators")
    n = _q(db, "SELECT COUNT(*) FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name "
               "WHERE p.type = 50001 AND s.value NOT LIKE 'ProfilerStep#%'")[0][0]
    assert len(ops) == n
    total = _q(db, "SELECT SUM(CAST(p.endNs AS INTEGER) - CAST(p.startNs AS INTEGER)) FROM "
                   "PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name WHERE p.type = 50001 "
                   "AND s.value NOT LIKE 'ProfilerStep#%'")[0][0]
    assert int(ops["host_total_ns"].sum()) == total
    # device self = the kernels linked to the op by CONNECTION_IDS
    dev = _q(db, "SELECT SUM(t.endNs - t.startNs) FROM CONNECTION_IDS l JOIN TASK t ON "
                 "t.connectionId = l.connectionId JOIN COMPUTE_TASK_INFO USING (globalTaskId)")
    assert int(ops["device_self_ns"].sum()) == dev[0][0] > 0
    assert (ops["device_total_ns"] >= ops["device_self_ns"]).all()
    assert (ops["host_self_ns"] <= ops["host_total_ns"]).all()
    # a call stack: its frames in stackDepth order
    cid, = _q(db, "SELECT callchainId FROM PYTORCH_API WHERE callchainId IS NOT NULL LIMIT 1")[0]
    frames = [r[0] for r in _q(db, f"SELECT s.value FROM PYTORCH_CALLCHAINS c JOIN STRING_IDS "
                                   f"s ON s.id = c.stack WHERE c.id = {cid} ORDER BY c.stackDepth")]
    assert "\n".join(frames) in set(ops["call_stack"])


def test_torch_npu_steps_memory_communication(tn):
    p = _read(tn)
    main = _db(tn)
    side = os.path.join(os.path.dirname(main), "analysis.db")
    steps = p.table("steps")
    rows = _q(side, "SELECT step, computing, free FROM StepTraceTime ORDER BY step")
    assert [int(r[0]) for r in rows] == steps["step"].tolist()
    assert steps["bd_computing"].tolist() == [round(r[1] * 1000) for r in rows]
    win = dict((i, (s, e)) for i, s, e in _q(main, "SELECT id, startNs, endNs FROM STEP_TIME"))
    assert [win[s] for s in steps["step"]] == list(zip(steps["start_ns"], steps["end_ns"]))
    assert p.meta.step_categories == ["computing", "communication_not_overlapped",
                                      "overlapped", "free"]
    mem = p.table("memory_records")
    reserved = [r[0] for r in _q(main, "SELECT totalReserved FROM MEMORY_RECORD ORDER BY rowid")]
    assert len(mem) == len(reserved)
    assert mem["reserved_mb"].fillna(-1).tolist() == [-1 if v is None else v / 1048576
                                                      for v in reserved]
    alloc = p.table("memory_allocations")
    assert alloc["size_kb"].sum() == pytest.approx(
        _q(main, "SELECT SUM(size) FROM OP_MEMORY")[0][0] / 1024)
    mod = p.table("module_memory")
    names = {r[0] for r in _q(main, "SELECT e.name FROM NPU_MODULE_MEM m JOIN ENUM_MODULE e "
                                    "ON e.id = m.moduleId")}
    assert set(mod["component"]) == names and "HCCL" in names
    comm = p.table("communication_ops")
    elapse = _q(side, "SELECT elapse_time FROM CommAnalyzerTime WHERE hccl_op_name != "
                      "'Total Op Info'")
    assert sorted(comm["elapse_ns"]) == sorted(round(r[0] * 1e6) for r in elapse)
    links = p.table("communication_links")
    assert len(links) == _q(side, "SELECT COUNT(*) FROM CommAnalyzerMatrix")[0][0]
    assert p.meta.rank == 0


def test_torch_npu_timeline_stage(tn):
    views = _read(tn, stage="views")
    assert views.meta.trace_deferred and not views.has("slices")
    assert views.has("kernels") and views.has("steps")
    part = _read(tn, stage="trace")
    db = _db(tn)
    counts = [_q(db, f"SELECT COUNT(*) FROM {t}")[0][0]
              for t in ("PYTORCH_API", "CANN_API", "TASK", "COMMUNICATION_OP")]
    assert len(part.table("slices")) == sum(counts)
    tracks = part.table("tracks")
    assert set(tracks["kind"]) == {"host", "cann", "device", "communication"}
    flows = part.table("flows")
    n_async = _q(db, "SELECT COUNT(*) FROM CONNECTION_IDS l JOIN TASK t ON "
                     "t.connectionId = l.connectionId")[0][0]
    n_h2d = _q(db, "SELECT COUNT(*) FROM CANN_API a JOIN TASK t ON "
                   "t.connectionId = a.connectionId")[0][0]
    names = flows["name"].astype(str)
    assert (names == "async_npu").sum() == 2 * n_async > 0
    assert (names == "HostToDevice").sum() == 2 * n_h2d > 0


def test_mindspore_block_dim_variant(tmp_path):
    span, = _spans(_copy(tmp_path, "sqlite_mindspore_db"))
    p = _read(span)
    assert p.errors == []
    db = _db(span)
    blocks = sorted(r[0] for r in _q(db, "SELECT blockDim FROM COMPUTE_TASK_INFO"))
    k = p.table("kernels")
    assert sorted(k.loc[k["core_type"] != "COMMUNICATION", "block_dim"].astype(int)) == blocks
    assert p.has("communication_ops") and p.has("steps")


def _union_ns(intervals) -> int:
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total, end = total + e - s, e
        elif e > end:
            total, end = total + e - end, e
    return total


def test_mindspore_whole_run_step_split_per_step_window(tmp_path):
    """MindSpore graph mode: StepTraceTime is one whole-run row (step 0); the db-only span gets
    one row per STEP_TIME window, as the text render gets per ProfilerStep window of its
    trace, with the whole run's computing / communication / free shared out among them."""
    span, = _spans(_copy(tmp_path, "sqlite_mindspore_db"))
    steps = _read(span, stage="views").table("steps")
    db = _db(span)
    side = os.path.join(os.path.dirname(db), "communication_analyzer.db")
    (step, computing, not_overlapped, free), = _q(
        side, "SELECT step, computing, communication_not_overlapped, free FROM StepTraceTime")
    assert int(step or 0) == 0
    windows = _q(db, "SELECT id, startNs, endNs FROM STEP_TIME ORDER BY id")
    assert len(windows) >= 2
    assert [tuple(r) for r in steps[["step", "start_ns", "end_ns"]].itertuples(index=False)] \
        == [tuple(w) for w in windows]
    assert int(steps["bd_computing"].sum()) == round(computing * 1000)
    assert int(steps["bd_communication_not_overlapped"].sum()) == round(not_overlapped * 1000)
    assert int(steps["bd_free"].sum()) == round(free * 1000)
    compute = _q(db, "SELECT startNs, endNs FROM TASK JOIN COMPUTE_TASK_INFO USING "
                     "(globalTaskId)")
    comm = _q(db, "SELECT startNs, endNs FROM COMMUNICATION_OP")
    assert int(steps["bd_computing"].sum()) == _union_ns(compute)
    assert int(steps["communication_ns"].sum()) == _union_ns(comm)
    assert (steps["bd_computing"] > 0).all()


def test_msprof_db(tmp_path):
    span, = _spans(_copy(tmp_path, "sqlite_msprof_db"))
    assert span.producer == "msprof" and span.device_id == 0
    p = _read(span)
    assert p.errors == []
    db = _db(span, "msprof_*.db")
    k = p.table("kernels")
    assert len(k) == _q(db, "SELECT (SELECT COUNT(*) FROM COMPUTE_TASK_INFO) + "
                            "(SELECT COUNT(*) FROM COMMUNICATION_OP)")[0][0]
    mem = p.table("memory_records")
    rows = _q(db, "SELECT s.value, ddr + hbm FROM NPU_MEM m JOIN STRING_IDS s ON s.id = m.type")
    assert sorted(mem["reserved_mb"]) == sorted(v / 1048576 for _, v in rows)
    assert set(mem["component"]) == {"APP", "Device"}
    assert p.has("slices") and p.has("flows")


def test_text_first_db_fills_the_rest(tmp_path):
    """A span with both: text tables from the text files; a table whose text file is gone
    comes from the db, with the same rows, and nothing is counted twice."""
    span, = _spans(_copy(tmp_path, "sqlite_torch_npu_text_db"))
    both = _read(span)
    out = os.path.join(span.root, "ASCEND_PROFILER_OUTPUT")
    kd_rows = sum(1 for _ in open(os.path.join(out, "kernel_details.csv"))) - 1
    assert len(both.table("kernels")) == kd_rows
    os.remove(os.path.join(out, "kernel_details.csv"))
    os.remove(os.path.join(out, "memory_record.csv"))
    span2, = _spans(str(tmp_path / "logs"))
    mixed = _read(span2)
    assert mixed.errors == []
    for t in ("kernels", "memory_records"):
        a, b = both.table(t), mixed.table(t)
        assert len(a) == len(b)
        assert a["start_ns" if t == "kernels" else "ts_ns"].tolist() == \
            b["start_ns" if t == "kernels" else "ts_ns"].tolist()
    assert both.table("kernels")["dur_ns"].sum() == mixed.table("kernels")["dur_ns"].sum()
    # the timeline is the trace file's (it has Overlap Analysis tracks the db lacks)
    assert "overlap" in set(mixed.table("tracks")["kind"])


# --------------------------------------------------------------------------- variants


def _tiny_db(path, *, text_names=False, block_col="blockNum", invalid_stream=True):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT)")
    con.execute("INSERT INTO STRING_IDS VALUES (1, 'MatMul'), (2, 'AI_CORE'), (3, 'mm_kernel')")
    con.execute("CREATE TABLE TASK (startNs TEXT, endNs TEXT, deviceId INTEGER, connectionId "
                "INTEGER, globalTaskId INTEGER, streamId INTEGER, taskType INTEGER)")
    big = 1717200000001333323
    # uint64 max as an SQL literal (SQLite keeps it as a REAL): an invalid connection
    con.execute("INSERT INTO TASK VALUES (?, ?, 0, 18446744073709551615, 1, ?, 2)",
                (str(big), str(big + 1500), 4294967295 if invalid_stream else 3))
    con.execute(f"CREATE TABLE COMPUTE_TASK_INFO (name, globalTaskId INTEGER, {block_col} "
                "INTEGER, opType, taskType, waitNs INTEGER)")
    names = ("mm_kernel", "MatMul", "AI_CORE") if text_names else (3, 1, 2)
    con.execute("INSERT INTO COMPUTE_TASK_INFO VALUES (?, 1, 24, ?, ?, 77)",
                (names[0], names[1], names[2]))
    con.commit()
    con.close()


def _span_with_db(tmp_path, **kw):
    d = tmp_path / "logs" / "run" / "h_1_20240101000000000_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    d.mkdir(parents=True)
    _tiny_db(str(d / "ascend_pytorch_profiler.db"), **kw)
    span, = _spans(str(tmp_path / "logs"))
    return span


@pytest.mark.parametrize("kw", [{}, {"text_names": True}, {"block_col": "blockDim"}])
def test_schema_variants(tmp_path, kw):
    p = _read(_span_with_db(tmp_path, **kw))
    assert p.errors == []
    k = p.table("kernels").iloc[0]
    assert (k["name"], k["type"], k["core_type"]) == ("mm_kernel", "MatMul", "AI_CORE")
    assert k["start_ns"] == 1717200000001333323 and k["dur_ns"] == 1500  # TEXT, exact
    assert int(k["block_dim"]) == 24
    assert k["wait_ns"] == 77  # the old schema's waitNs is taken as written
    assert k["stream_id"] is pd_na()  # 4294967295: no value


def pd_na():
    import pandas as pd

    return pd.NA


def test_wrong_schema_is_a_file_error(tmp_path):
    span = _span_with_db(tmp_path)
    db = glob.glob(os.path.join(span.root, "*", "*.db"))[0]
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE TASK RENAME COLUMN startNs TO beginTime")
    con.commit()
    con.close()
    p = _read(span)
    assert len(p.errors) == 1 and p.errors[0].path.endswith("ascend_pytorch_profiler.db")
    assert "TASK lacks column(s) startNs" in p.errors[0].message


def test_text_that_is_not_utf8_reads_with_replacement_characters(tmp_path):
    """A damaged db whose kernel name is not UTF-8 (sqlite3: "Could not decode to UTF-8"):
    the table is read again with each bad byte as U+FFFD, as the trace's invalid UTF-8 is,
    instead of losing the table."""
    span = _span_with_db(tmp_path, text_names=True)
    db = glob.glob(os.path.join(span.root, "*", "*.db"))[0]
    con = sqlite3.connect(db)
    con.execute("UPDATE COMPUTE_TASK_INFO SET name = CAST(X'6d6db66b' AS TEXT)")  # m m \xb6 k
    con.commit()
    con.close()
    p = _read(span)
    assert p.errors == []
    assert p.table("kernels")["name"].tolist() == ["mm\ufffdk"]


def test_schema_sqlite_cannot_describe_in_utf8_is_a_file_error(tmp_path):
    """Found by the fuzz run (seed 31, byte_flip): a flipped byte in a table's CREATE
    statement makes SQLite's own error message invalid UTF-8, which sqlite3 raises as a
    UnicodeDecodeError; it was an internal error. It is the file's error now, in words."""
    span = _span_with_db(tmp_path)
    db = glob.glob(os.path.join(span.root, "*", "*.db"))[0]
    with open(db, "rb") as fh:
        data = fh.read()
    at = data.index(b"CREATE TABLE TASK (")
    with open(db, "wb") as fh:
        fh.write(data[:at + 3] + b"\xb6" + data[at + 4:])  # in "CREATE"
    with pytest.raises(UnicodeDecodeError):  # (the damage this test is about)
        sqlite3.connect(db).execute("SELECT name FROM sqlite_master").fetchall()
    p = _read(span)
    assert [os.path.basename(e.path) for e in p.errors] == ["ascend_pytorch_profiler.db"]
    assert "damaged SQLite file" in p.errors[0].message
    assert "Error" not in p.errors[0].message


def test_truncated_empty_and_locked_dbs(tmp_path):
    logdir = _copy(tmp_path, "sqlite_torch_npu_db")
    span0, span1 = _spans(logdir)
    db0, db1 = _db(span0), _db(span1)
    size = os.path.getsize(db0)
    with open(db0, "r+b") as fh:
        fh.truncate(size // 3)
    p = _read(span0)
    assert any(e.path.endswith("ascend_pytorch_profiler_0.db") and
               ("not a usable SQLite database" in e.message or "malformed" in e.message)
               for e in p.errors), p.errors
    assert p.has("steps")  # analysis.db still read
    open(db0, "wb").close()  # a db with no tables (created, nothing written yet)
    p = _read(span0)
    assert [e.message for e in p.errors if e.path.endswith("_0.db")] == [
        "only SQLite export (export_type=db) found; it cannot be read: SQLite file has no "
        "tables (the export is not finished)"]
    holder = sqlite3.connect(db1, timeout=0)
    holder.execute("BEGIN EXCLUSIVE")  # training still writing
    try:
        p = _read(span1)
        assert any("database is locked" in e.message and e.path.endswith("_1.db")
                   for e in p.errors), p.errors
    finally:
        holder.rollback()
        holder.close()
    p = _read(span1)
    assert p.errors == [] and p.has("kernels")


def test_open_is_read_only(tn):
    db = _db(tn)
    f = sqlite_db.DbFile(db)
    try:
        with pytest.raises(sqlite3.OperationalError):
            f.con.execute("CREATE TABLE x (a)")
    finally:
        f.close()


def test_pmu_rows_matched_by_timestamp_when_task_ids_repeat(tmp_path):
    """Newer CANN: one globalTaskId for several TASK runs; TASK_PMU_INFO.timestampNs says
    which run a metric belongs to."""
    span = _span_with_db(tmp_path, invalid_stream=False)
    db = glob.glob(os.path.join(span.root, "*", "*.db"))[0]
    con = sqlite3.connect(db)
    con.execute("INSERT INTO TASK VALUES ('1717200000001400000', '1717200000001401000', 0, 9, "
                "1, 3, 2)")
    con.execute("INSERT INTO STRING_IDS VALUES (4, 'aic_mac_ratio')")
    con.execute("CREATE TABLE TASK_PMU_INFO (globalTaskId INTEGER, name INTEGER, value "
                "NUMERIC, timestampNs INTEGER)")
    con.execute("INSERT INTO TASK_PMU_INFO VALUES (1, 4, 0.25, 1717200000001333400), "
                "(1, 4, 0.75, 1717200000001400500)")
    con.commit()
    con.close()
    k = _read(span).table("kernels").sort_values("start_ns")
    assert len(k) == 2
    assert k["pmu_aic_mac_ratio"].tolist() == [0.25, 0.75]


def test_db_without_any_known_table_is_explained(tmp_path):
    d = tmp_path / "logs" / "run" / "h_1_20240101000000000_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    d.mkdir(parents=True)
    con = sqlite3.connect(str(d / "ascend_pytorch_profiler_3.db"))
    con.execute("CREATE TABLE SOMETHING_ELSE (a)")
    con.commit()
    con.close()
    span, = _spans(str(tmp_path / "logs"))
    p = _read(span)
    assert [(os.path.basename(e.path), e.message) for e in p.errors] == [
        ("ascend_pytorch_profiler_3.db", "only SQLite export (export_type=db) found, and it "
         "holds none of the tables the views use")]
