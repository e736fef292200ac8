"""analysis.compare: steps side by side, operators / kernels joined with deltas.

Expected values are written out by hand from small synthetic profiles.
"""
import json
import math

import numpy as np
import pandas as pd
import pytest

from tb_plugin.analysis import compare
from tb_plugin.analysis.tables import to_records
from tb_plugin.model import Profile


def npu(compute=6_000, ops=(("aten::mm", 1_000, 4_000), ("aten::add", 500, 1_000))):
    p = Profile(meta={"producer": "torch_npu", "device": "npu"})
    p.meta["step_categories"] = ["computing", "communication_not_overlapped", "overlapped", "free"]
    p.set("steps", pd.DataFrame({"step": [1, 2], "total_ns": [10_000, 14_000],
                                 "bd_computing": [compute, compute],
                                 "bd_communication_not_overlapped": [2_000, 2_000],
                                 "bd_overlapped": [0, 0], "bd_free": [2_000, 6_000]}),
          keep_extra=True)
    p.set("operators", pd.DataFrame({
        "name": [o[0] for o in ops], "input_shapes": ["[2,2]"] * len(ops),
        "host_self_ns": [o[1] for o in ops], "host_total_ns": [o[1] for o in ops],
        "device_self_ns": [o[2] for o in ops], "device_total_ns": [o[2] for o in ops]}))
    p.set("kernels", pd.DataFrame({"name": ["MatMul", "Add", "Add"],
                                   "type": ["MatMul", "Add", "Add"],
                                   "core_type": ["AI_CORE", "AI_VECTOR_CORE", "AI_VECTOR_CORE"],
                                   "start_ns": [0, 10, 20], "dur_ns": [4_000, 500, 500]}))
    return p


def cpu_only(ops):
    p = Profile(meta={"producer": "kineto", "device": "cpu"})
    p.set("operators", pd.DataFrame({
        "name": [o[0] for o in ops], "input_shapes": [""] * len(ops),
        "host_self_ns": [o[1] for o in ops], "host_total_ns": [o[1] for o in ops],
        "device_self_ns": [0] * len(ops), "device_total_ns": [0] * len(ops)}))
    return p


def test_steps_side_by_side():
    out = compare.steps(npu(), npu(compute=9_000))
    json.dumps(out, allow_nan=False)
    rows = {r["category"]: r for r in out["rows"]}
    assert rows["step_time"] == {"category": "step_time", "base_us": 12.0, "exp_us": 12.0,
                                 "delta_us": 0.0, "delta_pct": 0.0}
    assert rows["computing"]["base_us"] == 6.0 and rows["computing"]["exp_us"] == 9.0
    assert rows["computing"]["delta_us"] == 3.0 and rows["computing"]["delta_pct"] == 50.0
    common = {r["category"]: r for r in out["common"]}
    assert common["free"]["base_us"] == 4.0


def test_operators_joined_with_presence_and_impact_order():
    base = npu()
    exp = npu(ops=(("aten::mm", 1_000, 5_000), ("aten::relu", 200, 300)))
    df = compare.operators_table(base, exp)
    rows = {r["name"]: r for r in to_records(df)}
    mm = rows["aten::mm"]
    assert (mm["presence"], mm["base_calls"], mm["exp_calls"]) == ("both", 1, 1)
    assert (mm["base_us"], mm["exp_us"], mm["delta_us"], mm["delta_pct"]) == (4.0, 5.0, 1.0, 25.0)
    assert rows["aten::add"]["presence"] == "base" and rows["aten::add"]["exp_us"] is None
    assert rows["aten::add"]["delta_us"] == -1.0 and rows["aten::add"]["delta_pct"] is None
    assert rows["aten::relu"]["presence"] == "exp" and rows["aten::relu"]["delta_us"] == 0.3
    # Biggest absolute change first.
    assert list(df["name"]) == ["aten::add", "aten::mm", "aten::relu"]
    assert compare.summary_of(df) == {"base_total_us": 5.0, "exp_total_us": 5.3, "both": 1,
                                      "only_base": 1, "only_exp": 1}


def test_operators_host_time_when_a_side_has_no_device():
    df = compare.operators_table(npu(), cpu_only([("aten::mm", 3_000)]))
    mm = to_records(df[df["name"] == "aten::mm"])[0]
    assert mm["base_us"] == 4.0  # device self time
    assert mm["exp_us"] == 3.0   # host self time
    assert mm["base_host_us"] == 1.0 and mm["exp_device_us"] == 0.0
    assert compare.time_basis(npu()) == "device_self"


def test_operators_by_name_and_shape():
    df = compare.operators_table(npu(), npu(), "name_shape")
    assert set(df.columns) >= {"name", "input_shapes", "delta_us"}
    assert (df["delta_us"] == 0).all()


def test_kernels_by_name_and_core():
    exp = npu()
    exp.set("kernels", pd.DataFrame({"name": ["MatMul"], "type": ["MatMul"],
                                     "core_type": ["AI_CORE"], "start_ns": [0],
                                     "dur_ns": [2_000]}))
    rows = {r["name"]: r for r in to_records(compare.kernels_table(npu(), exp))}
    assert rows["MatMul"]["delta_us"] == -2.0 and rows["MatMul"]["delta_pct"] == -50.0
    assert rows["Add"]["presence"] == "base" and rows["Add"]["base_calls"] == 2
    core = {r["core"]: r for r in to_records(compare.kernels_table(npu(), exp, "core"))}
    assert core["AI_VECTOR_CORE"]["base_us"] == 1.0 and core["AI_VECTOR_CORE"]["exp_us"] is None


def test_empty_profiles():
    df = compare.kernels_table(Profile(), Profile())
    assert len(df) == 0
    out = compare.steps(Profile(), Profile())
    assert out["rows"][0]["base_us"] is None and out["rows"][0]["delta_us"] is None


def test_step_comparison_labels_every_category():
    base, exp = npu(), npu()
    labels = compare.steps(base, exp)["category_labels"]
    assert labels["communication_not_overlapped"] == "Communication (not overlapped)"
    assert set(labels) == {"computing", "communication_not_overlapped", "overlapped", "free"}
