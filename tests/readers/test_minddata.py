"""readers/minddata.py on every file variant: values computed here with stdlib csv/json from
the same files (MindInsight's real test data in fixtures/real/mindspore_legacy_run{1,2}, the
generated legacy and 2.x pipeline runs), plus bad input."""
from __future__ import annotations

import csv
import json
import os
import shutil
import statistics

import pandas as pd
import pytest

from tb_plugin.discovery import discover
from tb_plugin.readers import read

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
REAL = os.path.join(ROOT, "fixtures", "real")
RUN1 = os.path.join(REAL, "mindspore_legacy_run1", "profiler")
RUN2 = os.path.join(REAL, "mindspore_legacy_run2", "profiler")
LEGACY = os.path.join(ROOT, "fixtures", "mindspore_pipeline_legacy", "profiler")
MS2X = os.path.join(ROOT, "fixtures", "mindspore_pipeline_2x")


def _copy(src_dir, tmp_path, name="run") -> str:
    dst = tmp_path / name / "profiler"
    shutil.copytree(src_dir, dst)
    for d, _, files in os.walk(tmp_path):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    return str(tmp_path)


def _profile(logdir):
    runs, _ = discover(logdir)
    (run,) = runs.values()
    (worker,) = run.workers.values()
    (span,) = worker.spans.values()
    return read(span, None)


def _raw_rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _check_raw(p, raw_path):
    ops = p.table("pipeline_ops").set_index("op_id")
    rows = _raw_rows(raw_path)
    assert sorted(ops.index) == sorted(int(r["op_id"]) for r in rows)
    for r in rows:
        o = ops.loc[int(r["op_id"])]
        assert o["op_type"] == r["op_type"]
        assert int(o["num_workers"]) == int(r["num_workers"])
        if r["output_queue_usage_rate"]:
            assert o["queue_usage_pct"] == pytest.approx(100 * float(r["output_queue_usage_rate"]))
            assert o["queue_avg_size"] == pytest.approx(float(r["output_queue_average_size"]))
            assert int(o["queue_capacity"]) == int(r["output_queue_length"])
            sizes = json.loads(r["output_queue_size"])
            assert o["queue_empty_pct"] == pytest.approx(100 * sizes.count(0) / len(sizes))
        else:
            assert o["queue_usage_pct"] != o["queue_usage_pct"]  # NaN: no queue
        kids = json.loads(r["children_id"]) if r["children_id"] else []
        assert o["children_ids"] == ",".join(str(k) for k in kids)
        parent = o["parent_id"]
        assert (None if pd.isna(parent) else int(parent)) == \
            (int(r["parent_id"]) if r["parent_id"] else None)


def test_real_run1_raw_csv(tmp_path):
    p = _profile(_copy(RUN1, tmp_path))
    assert not [e for e in p.errors if "minddata" in e.path or "pipeline" in e.path]
    _check_raw(p, os.path.join(RUN1, "minddata_pipeline_raw_1.csv"))


def test_real_run2_every_legacy_file(tmp_path):
    p = _profile(_copy(RUN2, tmp_path))
    assert p.errors == []
    _check_raw(p, os.path.join(RUN2, "minddata_pipeline_raw_1.csv"))
    with open(os.path.join(RUN2, "minddata_cpu_utilization_1.json")) as fh:
        cpu = json.load(fh)
    ops = p.table("pipeline_ops").set_index("op_id")
    for op in cpu["op_info"]:
        m = op["metrics"]
        want = statistics.mean(m["user_utilization"]) + statistics.mean(m["sys_utilization"])
        assert ops.loc[op["op_id"], "cpu_pct"] == pytest.approx(want)
    c = p.table("pipeline_cpu")
    dev = c[c["scope"].astype(str) == "device"]
    assert list(dev["idle_pct"]) == cpu["device_info"]["idle_utilization"]
    q = p.table("pipeline_queues")
    with open(os.path.join(RUN2, "device_queue_profiling_1.txt")) as fh:
        lines = [ln.split() for ln in fh if ln.strip()]
    dq = q[q["queue"].astype(str) == "device_queue"]
    sizes = dq[dq["record"].astype(str) == "size"]
    assert list(sizes["value"]) == [float(x[3]) for x in lines if x[0] == "1"]
    assert list(sizes["capacity"]) == [int(x[1]) for x in lines if x[0] == "1"]
    names = {"0": "get_ms", "1": "push_ms", "2": "batch_ms"}
    for x in (x for x in lines if x[0] == "0"):
        row = dq[dq["record"].astype(str) == names[x[1]]]
        assert list(row["value"]) == [float(x[3])]
    with open(os.path.join(RUN2, "minddata_aicpu_1.txt")) as fh:
        gn_lines = [ln.split() for ln in fh if ln.startswith("GetNext")]
    gn = q[q["queue"].astype(str) == "get_next"]
    assert list(gn[gn["record"].astype(str) == "size"]["value"]) == [float(x[3]) for x in gn_lines]
    waits = list(gn[gn["record"].astype(str) == "wait_ms"]["value"])
    assert waits == pytest.approx([(int(x[2]) - int(x[1])) / 1000 for x in gn_lines])
    # the dataset_iterator file is only read without a device queue file (MindInsight)
    assert set(q["queue"].astype(str)) == {"device_queue", "get_next"}


def test_pipeline_profiling_json_without_raw_csv(tmp_path):
    """The json alone: inline ops (no queue) are dropped, children re-parented; the root kept."""
    logdir = _copy(RUN2, tmp_path)
    os.remove(os.path.join(logdir, "run", "profiler", "minddata_pipeline_raw_1.csv"))
    p = _profile(logdir)
    with open(os.path.join(RUN2, "pipeline_profiling_1.json")) as fh:
        doc = json.load(fh)
    queued = {o["op_id"]: o for o in doc["op_info"] if o["metrics"]}
    ops = p.table("pipeline_ops").set_index("op_id")
    assert sorted(ops.index) == sorted(queued)  # EpochCtrl (no metrics, above the root) dropped
    for op_id, o in queued.items():
        sizes = o["metrics"]["output_queue"]["size"]
        length = o["metrics"]["output_queue"]["length"]
        assert ops.loc[op_id, "queue_usage_pct"] == pytest.approx(100 * statistics.mean(sizes) / length)
        assert ops.loc[op_id, "children_ids"] == ",".join(str(c) for c in o.get("children") or [])


def test_real_run1_json_reparents_inline_op(tmp_path):
    """run1's json has TFReader 4 without a queue between Shuffle 1 and TFReader 3: MindSpore's
    parser writes Shuffle's children as [2, 3] (the committed raw CSV); so do we."""
    logdir = _copy(RUN1, tmp_path)
    os.remove(os.path.join(logdir, "run", "profiler", "minddata_pipeline_raw_1.csv"))
    p = _profile(logdir)
    ops = p.table("pipeline_ops").set_index("op_id")
    rows = {int(r["op_id"]): r for r in _raw_rows(os.path.join(RUN1, "minddata_pipeline_raw_1.csv"))}
    assert sorted(ops.index) == sorted(rows)
    for op_id, r in rows.items():
        kids = sorted(json.loads(r["children_id"])) if r["children_id"] else []
        assert sorted(int(x) for x in ops.loc[op_id, "children_ids"].split(",") if x) == kids


def test_generated_2x_files():
    (span_dir,) = [os.path.join(MS2X, d) for d in os.listdir(MS2X) if d.endswith("_ascend_ms")]
    out = os.path.join(span_dir, "ASCEND_PROFILER_OUTPUT")
    p = _profile(MS2X)
    assert not [e for e in p.errors if "minddata" in e.path or "dataset" in e.path]
    _check_raw(p, os.path.join(out, "minddata_pipeline_raw_0.csv"))
    with open(os.path.join(out, "minddata_pipeline_summary_0.json")) as fh:
        summ = json.load(fh)
    ops = p.table("pipeline_ops").set_index("op_id")
    for op_id, cpu in zip(summ["op_ids"], summ["avg_cpu_pct"]):
        assert ops.loc[op_id, "cpu_pct"] == pytest.approx(cpu)
    s = dict(zip(p.table("pipeline_summary")["key"], p.table("pipeline_summary")["value"]))
    assert s["per_batch_time"] == pytest.approx(summ["per_batch_time"][0])
    with open(os.path.join(out, "dataset.csv"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    st = p.table("pipeline_stages")
    assert list(st["operation"]) == [r["Operation"] for r in rows]
    assert list(st["avg_us"]) == pytest.approx([float(r["Avg. time(us)"]) for r in rows])


def test_2x_summary_csv_alone(tmp_path):
    """Without the raw CSV and the json, the key-per-row summary CSV gives the ops."""
    shutil.copytree(MS2X, tmp_path / "ms")
    (span,) = [d for d in os.listdir(tmp_path / "ms") if d.endswith("_ascend_ms")]
    out = tmp_path / "ms" / span / "ASCEND_PROFILER_OUTPUT"
    os.remove(out / "minddata_pipeline_raw_0.csv")
    os.remove(out / "minddata_pipeline_summary_0.json")
    with open(out / "minddata_pipeline_summary_0.csv", newline="") as fh:
        rows = {r[0]: r[1:] for r in csv.reader(fh)}
    p = _profile(str(tmp_path / "ms"))
    ops = p.table("pipeline_ops")
    assert list(ops["op_id"]) == [int(x) for x in rows["op_ids"]]
    assert list(ops["queue_usage_pct"]) == pytest.approx([float(x) for x in rows["queue_utilization_pct"]])
    assert list(ops["cpu_pct"]) == pytest.approx([float(x) for x in rows["avg_cpu_pct"]])


def test_bad_files_are_file_errors(tmp_path):
    logdir = _copy(RUN2, tmp_path)
    d = os.path.join(logdir, "run", "profiler")
    with open(os.path.join(d, "minddata_cpu_utilization_1.json"), "w") as fh:
        fh.write('{"op_info": [')
    with open(os.path.join(d, "device_queue_profiling_1.txt"), "w") as fh:
        fh.write("garbage line here\n1 64 1 0 10\n")
    p = _profile(logdir)
    by_file = {os.path.basename(e.path): e.message for e in p.errors}
    assert "minddata_cpu_utilization_1.json" in by_file
    assert "malformed" in by_file["device_queue_profiling_1.txt"]
    assert p.has("pipeline_ops") and p.has("pipeline_queues")  # the rest still loads


def test_summary_ids_beyond_any_integer_are_no_ops(tmp_path):
    """Found by the fuzz run (seed 23, `huge_numbers`): an op id of 1e300 in the summary JSON
    overflowed int64 and the whole summary was an internal error. Such an id names no op:
    that op is left out, the others are read, and nothing is reported as broken."""
    shutil.copytree(MS2X, tmp_path / "ms")
    (span,) = [d for d in os.listdir(tmp_path / "ms") if d.endswith("_ascend_ms")]
    out = tmp_path / "ms" / span / "ASCEND_PROFILER_OUTPUT"
    os.remove(out / "minddata_pipeline_raw_0.csv")  # (the summary JSON then gives the ops)
    path = out / "minddata_pipeline_summary_0.json"
    summ = json.loads(path.read_text())
    ids = list(summ["op_ids"])
    assert len(ids) >= 3
    avg = list(summ["queue_average_size"])
    assert summ["queue_utilization_pct"][2] > 0
    avg[2] = "@2"  # a queue size whose capacity (size / usage) is beyond int64 (seed 41: 328)
    text = json.dumps(dict(summ, op_ids=["@0", "@1", *ids[2:]], queue_average_size=avg))
    path.write_text(text.replace('"@0"', "1e300").replace('"@1"', "1" * 400)
                    .replace('"@2"', "1e300"))
    p = _profile(str(tmp_path / "ms"))
    assert not [e for e in p.errors if "summary" in e.path], p.errors
    ops = p.table("pipeline_ops").set_index("op_id")
    assert sorted(ops.index) == sorted(ids[2:])
    assert ops.loc[ids[2], "queue_capacity"] is pd.NA


def test_raw_csv_integers_beyond_int64_are_none(tmp_path):
    """num_workers / parent_id / queue length of 1e30 or inf in the raw pipeline CSV were cast
    through Float64 to Int64, which gives int64's minimum (-9223372036854775808) without a
    word. Such a number is none; 2.6 workers round to 3 (`us_text.to_int64`)."""
    shutil.copytree(MS2X, tmp_path / "ms")
    (span,) = [d for d in os.listdir(tmp_path / "ms") if d.endswith("_ascend_ms")]
    path = tmp_path / "ms" / span / "ASCEND_PROFILER_OUTPUT" / "minddata_pipeline_raw_0.csv"
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3 and rows[1]["parent_id"]
    rows[0]["num_workers"] = "1e30"
    rows[1]["parent_id"] = "inf"
    rows[1]["output_queue_length"] = "9" * 30
    rows[1]["num_workers"] = "2.6"
    dropped = int(rows[2]["op_id"])
    rows[2]["op_id"] = "1e30"  # no id: the row is left out, and said so
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    p = _profile(str(tmp_path / "ms"))
    ops = p.table("pipeline_ops").set_index("op_id")
    first, second = (int(r["op_id"]) for r in rows[:2])
    assert ops.loc[first, "num_workers"] is pd.NA
    assert ops.loc[second, "parent_id"] is pd.NA
    assert ops.loc[second, "queue_capacity"] is pd.NA
    assert ops.loc[second, "num_workers"] == 3
    assert (ops["num_workers"].dropna() >= 0).all() and (ops["parent_id"].dropna() >= 0).all()
    assert dropped not in ops.index and (ops.index >= 0).all()
    said = [e.message for e in p.errors if e.path.endswith("minddata_pipeline_raw_0.csv")]
    assert "1 row(s) without an integer op_id ignored" in said
    assert all("op_id" in m or "not finite" in m for m in said), said  # (inf is reported)
