"""Each advisor rule on a generated profile with its problem planted (fires, with the right
evidence) and on the clean profile (does not fire). Expected numbers come from the
generator's knobs and ground truth (fixtures/generate.py), not from the advisor."""
from __future__ import annotations

import pytest

from tb_plugin.advisor import thresholds as th
from tb_plugin.advisor.engine import advise_profile

from .planted import planted

T = th.load()


def findings(profile, rule=None):
    res = advise_profile(profile, T, "w", "s")
    out = res["findings"]
    return [f for f in out if rule is None or f["rule"] == rule], {r["rule"]: r for r in res["rules"]}


def step_kernel_us(job, name):
    return sum(st.kernel_time_us_by_name.get(name, 0.0) for st in job.run().steps)


@pytest.mark.parametrize("producer", ["torch_npu", "kineto"])
def test_clean_profile_has_no_findings(tmp_path, producer):
    _, p = planted(tmp_path, producer)
    found, rules = findings(p)
    assert found == [], [(f["rule"], f["message"]) for f in found]
    assert all(r["fired"] == 0 for r in rules.values())
    if producer == "torch_npu":
        assert rules["host_dispatch"]["applies"] and rules["aicpu_ops"]["applies"]
        assert rules["dataloader"]["why_not"] == "not a GPU (kineto) profile"
    else:
        assert rules["aicpu_ops"]["why_not"] == "not an Ascend profile"
        assert rules["dataloader"]["applies"]


def test_host_dispatch(tmp_path):
    job, p = planted(tmp_path, dispatch_stall_us=1500)
    (f,), _ = findings(p, "host_dispatch")
    ev = f["evidence"]
    # Per step 38 ops launch kernels in the forward / backward phases (9 per layer and
    # direction, 2 for the loss); every third stalls 1.5 ms on the host: 38 stalls in 3 steps,
    # each a Dequeue gap > 1 ms (a stall before a step's first launch has no gap inside it).
    assert 38 - 3 <= ev["gap_count"] <= 38
    assert 1500 <= ev["worst_gap_us"] < 1600
    assert f["severity"] == "high" and f["impact_us"] > 10_000
    trace = next(l for l in f["links"] if l["view"] == "trace")["params"]
    assert trace["start_us"] < ev["worst_gap_start_us"] < ev["worst_gap_end_us"] < trace["end_us"]


def test_fused_optimizer(tmp_path):
    job, p = planted(tmp_path, optimizer="unfused", optimizer_params=10)
    (f,), _ = findings(p, "fused_optimizer")
    assert f["evidence"]["kernels_per_step"] == 10 * 4
    assert f["evidence"]["fused_replacement"] == "torch_npu.optim.NpuFusedAdamW"
    assert "NpuFusedAdamW" in f["advice"]


def test_foreach_optimizer_is_not_flagged(tmp_path):
    _, p = planted(tmp_path, optimizer="foreach")
    assert findings(p, "fused_optimizer")[0] == []


def test_transdata(tmp_path):
    job, p = planted(tmp_path, transdata_kernels=2)
    (f,), _ = findings(p, "transdata")
    ev = f["evidence"]
    assert ev["count"] == 2 * 2 * 3  # kernels x layers x steps
    assert ev["total_us"] == pytest.approx(step_kernel_us(job, "trans_TransData_87"), abs=0.01)
    assert ev["caused_by"][0]["op"] == "aten::slice" and ev["caused_by"][0]["kernels"] == 12
    assert "forward_slice" in ev["caused_by"][0]["call_stack"]


def test_aicpu_ops(tmp_path):
    job, p = planted(tmp_path, aicpu_op=True)
    (f,), _ = findings(p, "aicpu_ops")
    assert f["evidence"]["count"] == 3
    assert f["evidence"]["total_us"] == pytest.approx(
        step_kernel_us(job, "aclnnNonzero_NonZeroAiCpu_NonZero"), abs=0.01)
    assert "nonzero" in f["advice"].lower()


def test_dominant_op_type_and_long_tasks(tmp_path):
    job, p = planted(tmp_path, kernel_scale={"mm": 4.0, "fag": 0.7})
    (dom,), _ = findings(p, "dominant_op_type")
    assert dom["evidence"]["op_type"] == "MatMulV2" and dom["evidence"]["share_of_device_pct"] > 40
    (lt,), _ = findings(p, "long_tasks")
    truth = [k for st in job.run().steps for k in st.kernels if k.dur_ns > 1_000_000]
    assert lt["evidence"]["count"] == len(truth) > 0


def test_op_time_spread(tmp_path):
    job, p = planted(tmp_path, slow_call=("mm", 8.0))
    found, _ = findings(p, "op_time_spread")
    assert [f["evidence"]["op_type"] for f in found] == ["MatMulV2"]
    assert found[0]["evidence"]["slow_calls"] == 3  # one per step


def test_iteration_gap(tmp_path):
    job, p = planted(tmp_path, dataloader_us=3000)
    (f,), _ = findings(p, "iteration_gap")
    assert f["evidence"]["mean_gap_us"] > 3000
    assert len(f["evidence"]["gaps"]) == 2


def test_kineto_dataloader(tmp_path):
    job, p = planted(tmp_path, "kineto", dataloader_us=3000)
    (f,), _ = findings(p, "dataloader")
    assert f["evidence"]["share_of_step_pct"] > 5
    assert f["evidence"]["dataloader_per_step_us"] > 3000


def test_environment(tmp_path):
    _, p = planted(tmp_path, env_variables={"ASCEND_LAUNCH_BLOCKING": "1", "HCCL_ALGO": "ring"})
    found, _ = findings(p, "environment")
    assert {f["evidence"]["variable"]: f["severity"] for f in found} == {
        "ASCEND_LAUNCH_BLOCKING": "high", "HCCL_ALGO": "low"}


def test_thresholds_override(tmp_path, monkeypatch):
    _, p = planted(tmp_path, aicpu_op=True)
    loose = th.load({"aicpu_min_us": 10_000})
    assert [f for f in advise_profile(p, loose)["findings"] if f["rule"] == "aicpu_ops"] == []
    path = tmp_path / "t.json"
    path.write_text('{"aicpu_min_us": "x"}')
    monkeypatch.setenv(th.ENV_VAR, str(path))
    with pytest.raises(ValueError, match="t.json"):
        th.load()


def test_recompilation_and_task_wait_cause(tmp_path):
    job, p = planted(tmp_path, compile_ops=8, compile_us=500)
    (f,), _ = findings(p, "recompilation")
    assert f["evidence"]["compile_events"] == 8 * 3
    # each compile lasts compile_us scaled by the rank's jitter factor (within ±1%)
    assert f["evidence"]["compile_total_us"] == pytest.approx(8 * 3 * 500, rel=0.01)
    (w,), _ = findings(p, "task_wait")
    assert w["evidence"]["likely_cause"] == "compilation"
    # most compilations stall the device (some fall while it still runs earlier work)
    assert w["evidence"]["by_cause"]["compilation"]["count"] >= 8 * 3 // 2
    assert "jit_compile=False" in w["advice"]


def test_memory_operators_and_allocation_waits(tmp_path):
    job, p = planted(tmp_path, malloc_us=1500)
    (f,), _ = findings(p, "memory_operators")
    n = f["evidence"]["by_api"]["AscendCL@aclMallocMemInner"]["count"]
    assert n > 0 and n % 3 == 0  # the same ops allocate in each of the 3 steps
    assert f["evidence"]["total_us"] == pytest.approx(n * 1500, rel=0.01)
    (w,), _ = findings(p, "task_wait")
    assert w["evidence"]["likely_cause"] == "allocation"


def test_synchronize_stream(tmp_path):
    job, p = planted(tmp_path, launch_blocking=True)
    (f,), _ = findings(p, "synchronize_stream")
    launches = sum(st.kernel_count for st in job.run().steps)
    assert f["evidence"]["launches"] == launches == f["evidence"]["followed_by_sync"]
    assert f["evidence"]["ratio"] == 1.0


def test_gc(tmp_path):
    job, p = planted(tmp_path, gc_pause_us=2000)
    (f,), _ = findings(p, "gc")
    assert f["evidence"]["pauses"] == 3
    assert f["evidence"]["longest_us"] == pytest.approx(2000, rel=0.01)


def test_kineto_amp(tmp_path):
    _, p = planted(tmp_path, "kineto", gpu_fp32=True)
    (f,), _ = findings(p, "amp")
    assert f["evidence"]["kernels"][0]["name"] == "volta_sgemm_128x64_nn"
    assert f["evidence"]["fp32_matrix_share_pct"] > 10


def test_kineto_low_device_util(tmp_path):
    _, p = planted(tmp_path, "kineto", dispatch_stall_us=300, dispatch_stall_every=1)
    (f,), _ = findings(p, "low_device_util")
    assert f["evidence"]["kernel_share_pct"] < 50
    assert f["impact_us"] == pytest.approx((50 - f["evidence"]["kernel_share_pct"]) / 100 *
                                           f["evidence"]["avg_step_us"])


def test_kineto_communication(tmp_path):
    job, p = planted(tmp_path, "kineto", with_comm=True, layers=2)
    (f,), _ = findings(p, "communication")
    assert f["evidence"]["share_of_step_pct"] > 10
    # the last bucket's allreduce is not hidden behind backward kernels: at least its time
    last = [st.comm_ops[-1].dur_ns / 1000 for st in job.run().steps]
    assert f["evidence"]["communication_per_step_us"] >= 0.9 * min(last)
