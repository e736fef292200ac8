"""analysis/data_pipeline.py rules on small hand-made pipelines (each case states the numbers
it is built from), and the iteration_gap rule citing the pipeline."""
from __future__ import annotations

import os

import pandas as pd
import pytest

from tb_plugin.advisor import thresholds
from tb_plugin.advisor.core import ProfileContext
from tb_plugin.advisor.rules import iteration_gap
from tb_plugin.analysis import data_pipeline
from tb_plugin.discovery import discover
from tb_plugin.model import Profile
from tb_plugin.readers import read

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
T = thresholds.load()


def _profile(ops, queues=None, cpu=None) -> Profile:
    p = Profile()
    p.set("pipeline_ops", pd.DataFrame(ops))
    if queues is not None:
        p.set("pipeline_queues", pd.DataFrame(queues))
    if cpu is not None:
        p.set("pipeline_cpu", pd.DataFrame(cpu))
    return p


def _op(op_id, typ, parent, children, usage, cpu=None, workers=4):
    return {"op_id": op_id, "op_type": typ, "num_workers": workers, "parent_id": parent,
            "children_ids": ",".join(map(str, children)), "queue_usage_pct": usage,
            "queue_avg_size": usage, "queue_capacity": 100, "queue_empty_pct": 0.0,
            "cpu_pct": cpu}


def test_every_queue_full_names_the_root():
    # MindInsight: all non-root queues >= 80 % -> only the root is a suspect
    p = _profile([_op(0, "Batch", None, [1], 50.0), _op(1, "Map", 0, [2], 85.0),
                  _op(2, "TFReader", 1, [], 90.0)])
    b = data_pipeline.analyse(p, T)["bottleneck"]
    assert b["op_id"] == 0 and b["op_type"] == "Batch" and "MindInsight" in b["reason"]


def test_child_fuller_than_parent_names_the_parent():
    # Map 65 %, its child 78 %: 13 points > 10 -> Map; the leaf 78 % >= 60 % is fine
    p = _profile([_op(0, "Batch", None, [1], 70.0), _op(1, "Map", 0, [2], 65.0),
                  _op(2, "TFReader", 1, [], 78.0)])
    assert data_pipeline.analyse(p, T)["bottleneck"]["op_id"] == 1
    # 9 points: no suspect at all
    p = _profile([_op(0, "Batch", None, [1], 70.0), _op(1, "Map", 0, [2], 69.0),
                  _op(2, "TFReader", 1, [], 78.0)])
    assert data_pipeline.analyse(p, T)["bottleneck"] is None


def test_mindspore_cpu_rule_wins_and_last_match_in_the_walk():
    # two CPU-bound ops (per worker 320/4 = 80 % > 75 %): the walk from the source ends at the
    # one nearer the root (op 1); Shuffle is skipped though its CPU is high
    p = _profile([_op(0, "Batch", None, [1], 70.0, cpu=160.0), _op(1, "Map", 0, [2], 70.0, cpu=320.0),
                  _op(2, "Shuffle", 1, [3], 70.0, cpu=400.0, workers=1),
                  _op(3, "TFReader", 2, [], 70.0, cpu=320.0)])
    doc = data_pipeline.analyse(p, T)
    assert doc["bottleneck"]["op_id"] == 1 and "MindSpore" in doc["bottleneck"]["reason"]
    assert {f["op_id"] for f in doc["details"]["findings"] if f["rule"] == "cpu_high"} == {1, 3}
    assert doc["ops"][1]["cpu_pct_per_worker"] == pytest.approx(80.0)


def test_overridden_threshold_changes_the_answer():
    p = _profile([_op(0, "Batch", None, [1], 70.0, cpu=160.0), _op(1, "Map", 0, [2], 70.0, cpu=320.0),
                  _op(2, "TFReader", 1, [], 70.0, cpu=160.0)])
    assert data_pipeline.analyse(p, T)["bottleneck"]["op_id"] == 1
    assert data_pipeline.analyse(p, thresholds.load({"pipeline_cpu_high_pct": 85}))["bottleneck"] is None


def test_empty_device_queue_alone_blames_the_host_pipeline():
    ops = [_op(0, "Batch", None, [1], 70.0), _op(1, "Map", 0, [2], 70.0), _op(2, "TFReader", 1, [], 75.0)]
    # 4 of 10 batches empty: 40 % > 30 %
    queues = [{"queue": "device_queue", "batch": b, "record": "size", "value": 0.0 if b < 4 else 10.0,
               "capacity": 64} for b in range(10)]
    doc = data_pipeline.analyse(_profile(ops, queues), T)
    assert doc["device_queue"] == {"batches": 10, "empty": 4, "full": 0, "empty_pct": 40.0}
    assert doc["bottleneck"]["op_id"] is None and "4 of 10" in doc["bottleneck"]["reason"]
    # 3 of 10: 30 % is not more than 30 %
    queues[3]["value"] = 10.0
    assert data_pipeline.analyse(_profile(ops, queues), T)["bottleneck"] is None


def test_host_cpu_from_idle():
    ops = [_op(0, "Batch", None, [], 70.0)]
    cpu = [{"scope": "device", "sample": i, "user_pct": 40.0, "sys_pct": 5.0, "io_pct": 0.0,
            "idle_pct": idle} for i, idle in enumerate([10.0, 20.0, 30.0])]
    doc = data_pipeline.analyse(_profile(ops, cpu=cpu), T)
    assert doc["cpu"]["host_util_pct"] == pytest.approx(80.0)
    assert doc["details"]["host_cpu_saturated"] is False  # 80 is not above 80


def test_iteration_gap_cites_the_pipeline():
    runs, _ = discover(os.path.join(ROOT, "fixtures", "mindspore_pipeline_2x"))
    (run,) = runs.values()
    (w,) = run.workers.values()
    (span,) = w.spans.values()
    prof = read(span, None)
    ctx = ProfileContext(prof, thresholds.load({"iteration_gap_pct": 0}))
    (finding,) = iteration_gap.check(ctx)
    ev = finding.evidence["data_pipeline"]
    assert ev["bottleneck_op_id"] == 1 and ev["bottleneck_op_type"] == "Map"
