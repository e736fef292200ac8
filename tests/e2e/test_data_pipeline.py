"""`/data_pipeline` and the `data_pipeline` advisor rule through a real `tensorboard` process.

MindInsight's expected values for its own test data (fixtures/real/mindspore_legacy_run1 and
_run2, copied byte for byte from mindspore-ai/mindinsight tests/utils/resource/run_{1,2}):
- tests/st/func/profiler/test_minddata_pipeline_analyser.py (run_1, `test_query`): Shuffle(1),
  TFReader(2), TFReader(3) with output_queue_average_size 20.0, output_queue_length 64,
  output_queue_usage_rate 0.3125; Batch(0) without a queue, children [1]; Shuffle's children
  [2, 3], parent 0.
- tests/st/func/profiler/test_minddata_analyse.py and tests/ut/profiler/analyser/
  test_minddata_analyse.py (run_2): device queue empty_batch_count 1, full_batch_count 0,
  total_batch 1; get_next empty_batch_count 0, total_batch 3 (queue [3, 2, 1]); device queue
  time avg_cost 4, push_cost 4, get_cost 0; get_next avg_cost 0.0006666666666666666 ms.
Our route must reproduce them within 0.5 %.

Generated runs: fixtures/mindspore_pipeline_{2x,legacy} carry a planted Map bottleneck
(fixtures/generate.py PIPELINE_*_CONFIG); the same configs without the plant, written here,
must name none.
"""
from __future__ import annotations

import dataclasses
import os
import shutil

import pytest

from fixtures import generate as g
from tests.tb_server import FIXTURES, REAL_DATA, TensorBoard

pytestmark = pytest.mark.e2e
REL = 0.005


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("logdir")
    for name in ("mindspore_legacy_run1", "mindspore_legacy_run2"):
        shutil.copytree(os.path.join(REAL_DATA, name), d / name)
    for name in ("mindspore_pipeline_2x", "mindspore_pipeline_legacy"):
        shutil.copytree(os.path.join(FIXTURES, name), d / name)
    assert g.PIPELINE_2X_CONFIG.pipeline_bottleneck == "Map"
    g.write_run(dataclasses.replace(g.PIPELINE_2X_CONFIG, pipeline_bottleneck=None),
                str(d / "clean_2x"))
    cfg = dataclasses.replace(g.PIPELINE_LEGACY_CONFIG, pipeline_bottleneck=None)
    g.write_minddata_legacy(cfg, str(d / "clean_legacy" / "profiler"), 0, cfg.steps)
    for dirpath, _, files in os.walk(d):
        os.chmod(dirpath, 0o755)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o644)
    return str(d)


@pytest.fixture(scope="module")
def tb(logdir):
    with TensorBoard(logdir).loaded() as server:
        yield server


def _only_profile(tb, run):
    info = tb.get("run", run=run)
    (w,) = info["workers"]
    (span,) = w["spans"]
    return info, dict(run=run, worker=w["name"], span=span)


def test_view_is_listed_only_with_pipeline_data(tb):
    for run in ("mindspore_legacy_run1", "mindspore_legacy_run2", "mindspore_pipeline_2x",
                "mindspore_pipeline_legacy", "clean_2x", "clean_legacy"):
        info, _ = _only_profile(tb, run)
        assert "data_pipeline" in info["views"], run


def test_mindinsight_run1_pipeline_queues(tb):
    _, p = _only_profile(tb, "mindspore_legacy_run1")
    doc = tb.get("data_pipeline", **p)
    assert set(doc) == {"ops", "device_queue", "get_next", "cpu", "bottleneck", "details"}
    ops = {o["op_id"]: o for o in doc["ops"]}
    assert sorted(ops) == [0, 1, 2, 3]
    expected = {1: ("Shuffle", 20.0, 64, 0.3125, 0, [2, 3]), 2: ("TFReader", 20.0, 64, 0.3125, 1, []),
                3: ("TFReader", 20.0, 64, 0.3125, 1, [])}
    for op_id, (typ, avg, length, rate, parent, kids) in expected.items():
        o = ops[op_id]
        assert set(o) == {"op_id", "op_type", "num_workers", "parent_id", "children_ids",
                          "queue_avg_size", "queue_capacity", "queue_usage_pct",
                          "queue_empty_pct", "cpu_pct_per_worker"}
        assert o["op_type"] == typ and o["parent_id"] == parent and o["children_ids"] == kids
        assert o["queue_avg_size"] == pytest.approx(avg, rel=REL)
        assert o["queue_capacity"] == length
        assert o["queue_usage_pct"] == pytest.approx(100 * rate, rel=REL)
    assert ops[0]["op_type"] == "Batch" and ops[0]["queue_usage_pct"] is None
    assert ops[0]["children_ids"] == [1] and ops[0]["parent_id"] is None
    assert ops[0]["num_workers"] == 4 and ops[1]["num_workers"] == 1
    # MindInsight's queue rule (leaf usage 31.25 % < 60 %) names a TFReader source.
    assert doc["bottleneck"]["op_type"] == "TFReader" and doc["bottleneck"]["op_id"] in (2, 3)
    assert doc["device_queue"] is None and doc["get_next"] is None and doc["cpu"] is None


def test_mindinsight_run2_device_queue_and_get_next(tb):
    _, p = _only_profile(tb, "mindspore_legacy_run2")
    doc = tb.get("data_pipeline", **p)
    assert doc["device_queue"] == {"batches": 1, "empty": 1, "full": 0,
                                   "empty_pct": pytest.approx(100.0)}
    assert doc["get_next"] == {"batches": 3, "empty": 0, "empty_pct": 0.0}
    t = doc["details"]["batch_times"]
    assert t["batch_ms"] == pytest.approx(4, rel=REL)
    assert t["push_ms"] == pytest.approx(4, rel=REL)
    assert t["get_ms"] == 0
    assert t["get_next_wait_ms"] == pytest.approx(0.0006666666666666666, rel=REL)
    assert doc["details"]["device_queue_source"] == "device_queue"
    # minddata_cpu_utilization: idle 10 % -> 90 % busy; MapOp(1) 40 % CPU over 8 workers
    assert doc["cpu"]["host_util_pct"] == pytest.approx(90.0)
    ops = {o["op_id"]: o for o in doc["ops"]}
    assert ops[1]["cpu_pct_per_worker"] == pytest.approx(40.0 / 8)
    assert doc["details"]["host_cpu_saturated"] is True


@pytest.mark.parametrize("run", ["mindspore_pipeline_2x", "mindspore_pipeline_legacy"])
def test_planted_bottleneck_is_named(tb, run):
    _, p = _only_profile(tb, run)
    doc = tb.get("data_pipeline", **p)
    b = doc["bottleneck"]
    assert b["op_type"] == "Map" and b["op_id"] == 1
    assert "num_parallel_workers" in " ".join(b["advice"])
    map_op = next(o for o in doc["ops"] if o["op_id"] == 1)
    assert map_op["cpu_pct_per_worker"] > 75
    assert f"{map_op['cpu_pct_per_worker']:.1f}%" in b["reason"]
    adv = tb.get("advisor", run=run)
    found = [f for f in adv["findings"] if f["rule"] == "data_pipeline"]
    assert len(found) == 1
    assert found[0]["evidence"]["op_id"] == 1 and "Map (op 1)" in found[0]["message"]
    assert "num_parallel_workers" in found[0]["advice"]
    assert "dataset_sink_mode=True" in found[0]["advice"]
    assert found[0]["links"][0]["view"] == "data_pipeline"
    if run.endswith("legacy"):  # the device queue was empty half the time
        assert doc["device_queue"]["empty_pct"] == pytest.approx(50.0)
        assert found[0]["severity"] == "high"


@pytest.mark.parametrize("run", ["clean_2x", "clean_legacy"])
def test_unplanted_run_names_none(tb, run):
    _, p = _only_profile(tb, run)
    doc = tb.get("data_pipeline", **p)
    assert doc["ops"] and doc["bottleneck"] is None
    adv = tb.get("advisor", run=run)
    assert not [f for f in adv["findings"] if f["rule"] == "data_pipeline"]
    rule = next(r for r in adv["rules"] if r["rule"] == "data_pipeline")
    assert rule["applies"] is True and rule["fired"] == 0


def test_profile_without_pipeline_is_404_and_bad_parameters_400(tb):
    code, body = tb.status("data_pipeline", run="no_such_run")
    assert code == 404
    _, p = _only_profile(tb, "mindspore_legacy_run1")
    code, _ = tb.status("data_pipeline", run=p["run"], worker="nobody")
    assert code == 404
