"""The AI Core PMU rules (operator_no_bound, block_dim, cube_efficiency, vector_efficiency) on
generated profiles: each fires where the generator planted its problem and stays quiet on the
clean profile. Expected numbers are computed here with the stdlib csv module from the
generated kernel_details.csv, never by the plugin."""
from __future__ import annotations

import csv
import glob
import math
import os

import pytest

from tb_plugin.advisor import thresholds as th
from tb_plugin.advisor.engine import advise_profile

from .planted import planted

T = th.load()
PIPES = ("mac", "vec", "scalar", "mte1", "mte2", "mte3")
CE = "aclnnCrossEntropyLoss_CrossEntropyLoss_CrossEntropyLoss"
ADD = "aclnnAdd_AddAiCore_Add"
MM = "aclnnMm_MatMulCommon_MatMulV2"
FADD = "ApplyAdamW"  # the fused optimizer of the clean profile
RULES = ("operator_no_bound", "block_dim", "cube_efficiency", "vector_efficiency")


def findings(profile, rule):
    res = advise_profile(profile, T, "w", "s")
    return ([f for f in res["findings"] if f["rule"] == rule],
            {r["rule"]: r for r in res["rules"]})


def kernel_rows(tmp_path):
    (path,) = glob.glob(os.path.join(str(tmp_path), "run", "*", "ASCEND_PROFILER_OUTPUT",
                                     "kernel_details.csv"))
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def num(cell):
    try:
        v = float(cell)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def pipe(row, p):
    vals = [num(row.get(f"{core}_{p}_ratio")) for core in ("aic", "aiv")]
    vals = [v for v in vals if v is not None]
    return max(vals) if vals else None


def us(cell):
    return float(cell.strip())


def test_clean_profile_is_quiet(tmp_path):
    _, p = planted(tmp_path)
    res = advise_profile(p, T, "w", "s")
    rules = {r["rule"]: r for r in res["rules"]}
    for rule in RULES:
        assert rules[rule]["applies"] and rules[rule]["fired"] == 0, rules[rule]


def test_operator_no_bound_fires_on_the_planted_kernel(tmp_path):
    _, p = planted(tmp_path, pmu_no_bound="ce")
    (f,), _ = findings(p, "operator_no_bound")
    rows = kernel_rows(tmp_path)
    # the calls the rule must list: > 20 µs, measured, no pipe above 0.8
    hit = [r for r in rows if us(r["Duration(us)"]) > 20
           and any(pipe(r, x) is not None for x in PIPES)
           and not any((pipe(r, x) or 0) > 0.8 for x in PIPES)]
    assert hit and {r["Name"] for r in hit} == {CE}
    ev = f["evidence"]
    assert ev["calls"] == len(hit) and ev["kernels"] == 1
    op = ev["operators"][0]
    assert op["name"] == CE and op["calls"] == len(hit)
    assert op["total_us"] == pytest.approx(sum(us(r["Duration(us)"]) for r in hit), abs=0.01)
    w = [us(r["Duration(us)"]) for r in hit]
    want = sum(pipe(r, "mte2") * d for r, d in zip(hit, w)) / sum(w)
    assert op["mte2_ratio"] == pytest.approx(want, rel=1e-9)
    assert f["links"][0]["params"]["bound"] == "none"


def test_block_dim_fires_on_the_misfit_kernel(tmp_path):
    _, p = planted(tmp_path, block_dim_mismatch="add")
    (f,), _ = findings(p, "block_dim")
    rows = kernel_rows(tmp_path)
    cores = {"AI_CORE": 24, "MIX_AIC": 24, "AI_VECTOR_CORE": 48}  # generator defaults
    bad = [r for r in rows if r["Accelerator Core"] in cores and int(r["Block Num"]) > 0
           and int(r["Block Num"]) % cores[r["Accelerator Core"]] != 0]
    assert bad and {r["Name"] for r in bad} == {ADD}
    ev = f["evidence"]
    assert ev["ai_core_num"] == 24 and ev["aiv_num"] == 48 and ev["calls"] == len(bad)
    op = ev["operators"][0]
    block = int(bad[0]["Block Num"])
    waves = -(-block // 48)
    assert (op["block_dim"], op["core_num"], op["waves"]) == (block, 48, waves)
    assert op["idle_core_share"] == pytest.approx(1 - block / (waves * 48))


def test_block_dim_needs_the_core_count(tmp_path):
    _, p = planted(tmp_path, pmu="")  # no PROF_*/info.json in the span
    found, rules = findings(p, "block_dim")
    assert found == [] and not rules["block_dim"]["applies"]
    assert "core counts" in rules["block_dim"]["why_not"]


def test_cube_efficiency_fires_on_slow_matmul(tmp_path):
    _, p = planted(tmp_path, pmu_no_bound="mm")
    (f,), _ = findings(p, "cube_efficiency")
    rows = [r for r in kernel_rows(tmp_path) if r["Name"] == MM and num(r["aic_mac_ratio"]) is not None]
    w = [us(r["Duration(us)"]) for r in rows]
    mac = sum(num(r["aic_mac_ratio"]) * d for r, d in zip(rows, w)) / sum(w)
    k = f["evidence"]["kernels"][0]
    assert k["name"] == MM and k["mac_ratio"] == pytest.approx(mac, rel=1e-9)
    assert mac < 0.8 and k["headroom"] == pytest.approx(
        max(0.8 - mac, 0.95 - k["mte2_ratio"]), rel=1e-9)
    # the same slow matmul is also bound by no pipe
    assert findings(p, "operator_no_bound")[0]


def test_vector_efficiency_fires_on_the_planted_vector_kernel(tmp_path):
    _, p = planted(tmp_path, pmu_no_bound="fused_adamw")  # 120 µs per step: above 1% of device time
    (f,), _ = findings(p, "vector_efficiency")
    names = [k["name"] for k in f["evidence"]["kernels"]]
    assert names == [FADD]
    rows = [r for r in kernel_rows(tmp_path) if r["Name"] == FADD]
    w = [us(r["Duration(us)"]) for r in rows]
    vec = sum(num(r["aiv_vec_ratio"]) * d for r, d in zip(rows, w)) / sum(w)
    assert f["evidence"]["kernels"][0]["vec_ratio"] == pytest.approx(vec, rel=1e-9)
    assert f["evidence"]["kernels"][0]["headroom"] > 0


def test_vector_efficiency_skips_small_kernels(tmp_path):
    # CrossEntropyLoss takes well under 1% of device time: bound by no pipe, but not listed
    _, p = planted(tmp_path, pmu_no_bound="ce")
    assert findings(p, "vector_efficiency")[0] == []
    assert findings(p, "operator_no_bound")[0]


def test_rules_say_why_not_without_counters(tmp_path):
    _, p = planted(tmp_path, "kineto")
    _, rules = findings(p, "operator_no_bound")
    for rule in RULES:
        assert not rules[rule]["applies"] and rules[rule]["why_not"] == "not an Ascend profile"
