"""The host dispatch path (analysis/dispatch.py) on a small hand-written torch_npu trace,
read by the plugin's own reader. Every expected number below is worked out by hand from the
event times written in this file (µs from the trace origin T0)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tb_plugin import discovery, readers
from tb_plugin.analysis import derive, dispatch

T0 = 1_700_000_000_000_000  # µs, the trace's clock
PY, MAIN, TQ = 100, 100, 101
CANN = (PY << 10) | (7 << 5) | 31
HW = (PY << 10) | (14 << 5) | 0
STREAM = 2


def ts(us: float) -> str:
    return f"{T0 + us:.3f}"


def meta(pid, tid, key, value):
    return {"ph": "M", "name": key, "pid": pid, "tid": tid, "args": {"name": value}}


def x(name, pid, tid, start, dur, cat=None, args=None):
    e = {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts(start), "dur": dur}
    if cat:
        e["cat"] = cat
    e["args"] = args or {}
    return e


def flow(name, cat, fid, s, f):
    (sp, st, sts), (fp, ft, fts) = s, f
    return [{"ph": "s", "bp": "e", "name": name, "id": fid, "pid": sp, "tid": st, "ts": ts(sts), "cat": cat},
            {"ph": "f", "bp": "e", "name": name, "id": fid, "pid": fp, "tid": ft, "ts": ts(fts), "cat": cat}]


# (op, op start/dur, enqueue start/dur, dequeue start/dur, CANN API calls [(name, start, dur)],
#  Node@launch start/dur, kernel name, kernel start/dur)
OPS = [
    ("aten::add", 100, 300, 150, 20, 200, 100, [("aclnnAdd", 210, 60)], 220, 30,
     "aclnnAdd_AddAiCore_Add", 250, 500),
    ("aten::mm", 500, 300, 520, 30, 2800, 200, [("aclopCompileAndExecute", 2810, 50)], 2900, 40,
     "MatMul_1", 2950, 1000),
    ("aten::mul", 3100, 100, 3120, 10, 3200, 100, [("aclnnMul", 3210, 50)], 3220, 20,
     "aclnnMul_MulAiCore_Mul", 3950, 50),
]


def write_span(root) -> str:
    span = os.path.join(root, "run", "host_100_20240101123456789_ascend_pt")
    out = os.path.join(span, "ASCEND_PROFILER_OUTPUT")
    os.makedirs(out)
    ev = [meta(PY, 0, "process_name", "Python"), meta(PY, MAIN, "thread_name", f"Thread {MAIN}"),
          meta(PY, TQ, "thread_name", f"Thread {TQ}"), meta(CANN, 0, "process_name", "CANN"),
          meta(CANN, TQ, "thread_name", f"Thread {TQ}"),
          meta(HW, 0, "process_name", "Ascend Hardware"),
          meta(HW, STREAM, "thread_name", f"Stream {STREAM}"),
          x("ProfilerStep#1", PY, MAIN, 0, 10000, "cpu_op")]
    rows = []
    for i, (op, o0, od, e0, ed, d0, dd, apis, l0, ld, kname, k0, kd) in enumerate(OPS, 1):
        ev.append(x(op, PY, MAIN, o0, od, "cpu_op"))
        ev.append(x(f"Enqueue@{op}", PY, MAIN, e0, ed, "enqueue", {"correlation_id": i}))
        ev.append(x(f"Dequeue@{op}", PY, TQ, d0, dd, "dequeue", {"correlation_id": i}))
        ev += flow("enqueue_to_dequeue", "async_task_queue", i, (PY, MAIN, e0), (PY, TQ, d0))
        for api, a0, ad in apis:
            ev.append(x(f"AscendCL@{api}", CANN, TQ, a0, ad))
        ev.append(x("Node@launch", CANN, TQ, l0, ld))
        ev.append(x(kname, HW, STREAM, k0, kd, args={"Task Type": "AI_CORE"}))
        ev += flow(f"HostToDevice{i}", "HostToDevice", str(i), (CANN, TQ, l0), (HW, STREAM, k0))
        ev += flow("torch_to_npu", "async_npu", i, (PY, MAIN, o0), (HW, STREAM, k0))
        rows.append(f"1,0,{kname},Op,AI_CORE,{ts(k0)}\t,{kd},0,8")
    with open(os.path.join(out, "trace_view.json"), "w") as fh:
        json.dump(ev, fh)
    with open(os.path.join(out, "kernel_details.csv"), "w") as fh:
        fh.write("Step Id,Device_id,Name,Type,Accelerator Core,Start Time(us),Duration(us),"
                 "Wait Time(us),Block Dim\n" + "\n".join(rows) + "\n")
    with open(os.path.join(span, "profiler_info_0.json"), "w") as fh:
        json.dump({"rank_id": 0}, fh)
    return span


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("dispatch"))
    write_span(root)
    runs, _ = discovery.discover(root)
    (span,) = [s for r in runs.values() for s in r.spans()]
    p = readers.read(span, None, stage="all")
    derive.complete(p)
    assert not p.errors, p.errors
    return p


def test_calls_pair_enqueue_dequeue_launch_and_device(profile):
    a = dispatch.analyze(profile)
    assert a["kind"] == "task_queue"
    c = a["calls"].set_index("name")
    # queue wait = Dequeue start - Enqueue end
    assert c.loc["aten::add", "queue_wait_ns"] == (200 - 170) * 1000
    assert c.loc["aten::mm", "queue_wait_ns"] == (2800 - 550) * 1000
    assert c.loc["aten::mul", "queue_wait_ns"] == (3200 - 3130) * 1000
    # launch delay = device task start - Node@launch start (the HostToDevice flow's ends)
    assert c["launch_delay_ns"].tolist() == [30_000, 50_000, 730_000]
    assert c["launch_ns"].tolist() == [30_000, 40_000, 20_000]
    assert c["path"].tolist() == ["aclnn", "aclop", "aclnn"]
    assert c["compile_ns"].tolist() == [0, 50_000, 0]
    assert c["step"].tolist() == [1, 1, 1]


def test_step_numbers_by_hand(profile):
    d = dispatch.document(profile)
    (s,) = d["steps"]
    assert s["step"] == 1 and s["calls"] == 3 and s["launches"] == 3
    # one Dequeue gap over 1 ms: aten::add's Dequeue ends at 300, aten::mm's starts at 2800
    assert s["dequeue_gaps_over_1ms"] == 1
    assert s["dequeue_gap_total_us"] == pytest.approx(2500)
    assert s["dequeue_gap_max_us"] == pytest.approx(2500)
    assert s["worst_gap_start_us"] == pytest.approx(T0 + 300, abs=1e-3)
    assert s["worst_gap_end_us"] == pytest.approx(T0 + 2800, abs=1e-3)
    # queue waits 30, 2250, 70 µs; launch delays 30, 50, 730 µs (linear percentiles:
    # p95 of three sorted values a<b<c is b + 0.9 (c - b))
    assert s["queue_wait_p50_us"] == pytest.approx(70)
    assert s["queue_wait_p95_us"] == pytest.approx(70 + 0.9 * (2250 - 70))
    assert s["queue_wait_max_us"] == pytest.approx(2250)
    assert s["launch_delay_p50_us"] == pytest.approx(50)
    assert s["launch_delay_p95_us"] == pytest.approx(50 + 0.9 * (730 - 50))
    # device busy: 250-750, 2950-3950, 3950-4000 -> 1550 µs of the 10 ms step
    assert s["device_idle_us"] == pytest.approx(10000 - 1550)
    # idle before the host launched the next task: 0-220 (aclnnAdd launched at 220) and
    # 750-2900 (MatMul launched at 2900); aten::mul's task waited for the device, not the host
    assert s["dispatch_bound_idle_us"] == pytest.approx(220 + 2150)
    assert s["dispatch_bound_pct"] == pytest.approx(2370 / 8450 * 100)
    assert s["dispatch_bound_step_pct"] == pytest.approx(2370 / 10000 * 100)
    (g,) = d["worst_gaps"]
    assert g == {"step": 1, "start_us": pytest.approx(T0 + 300, abs=1e-3), "end_us": pytest.approx(T0 + 2800, abs=1e-3),
                 "gap_us": pytest.approx(2500), "before": "Dequeue@aten::add",
                 "after": "Dequeue@aten::mm"}


def test_ops_table_by_hand(profile):
    ops = {r["name"]: r for r in dispatch.document(profile)["ops"]}
    assert set(ops) == {"aten::add", "aten::mm", "aten::mul"}
    mm = ops["aten::mm"]
    assert (mm["calls"], mm["launches"], mm["path"]) == (1, 1, "aclop")
    assert mm["enqueue_us"] == pytest.approx(30) and mm["queue_wait_us"] == pytest.approx(2250)
    assert mm["launch_us"] == pytest.approx(40) and mm["launch_delay_us"] == pytest.approx(50)
    assert mm["compile_us"] == pytest.approx(50)
    assert ops["aten::mul"]["launch_delay_us"] == pytest.approx(730)


def test_a_higher_gap_threshold_counts_nothing(profile):
    a = dispatch.analyze(profile, gap_ns=3_000_000)
    assert len(a["gaps"]) == 0 and a["steps"]["dequeue_gaps_over_1ms"].tolist() == [0]


def test_device_idle_arithmetic():
    import pandas as pd

    kernels = pd.DataFrame({"start_ns": [10, 20, 60, 100], "dur_ns": [20, 5, 10, 50]})
    launches = pd.DataFrame({"start_ns": [5, 90, 55], "device_start_ns": [10, 100, 60]})
    windows = pd.DataFrame({"step": [1, 2], "start_ns": [0, 80], "end_ns": [80, 200]})
    idle, bound = dispatch.device_idle(kernels, launches, windows)
    # busy 10-30, 60-70 in step 1 (80 ns): idle 50; busy 100-150 in step 2 (120 ns): idle 70
    assert idle.tolist() == [50, 70]
    # step 1: 0-5 before the first launch, 30-55 before the 60 ns task's launch; step 2: 80-90
    assert bound.tolist() == [5 + 25, 10]


def test_profile_without_trace_is_empty():
    from tb_plugin.model import Profile

    d = dispatch.document(Profile())
    assert d["ops"] == [] and d["worst_gaps"] == [] and d["summary"]["kind"] is None
    assert np.isnan(dispatch._pct(np.array([np.nan]), 50))


# ---- kineto: a real trace (fixtures/real/hta_alexnet, HolisticTraceAnalysis test data) ----

REAL_KINETO = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "fixtures", "real", "hta_alexnet")


def test_real_kineto_launches_match_the_trace():
    import gzip
    from decimal import Decimal

    (name,) = [f for f in os.listdir(REAL_KINETO) if f.endswith(".gz")]
    with gzip.open(os.path.join(REAL_KINETO, name), "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    ns = lambda v: int(Decimal(str(v)) * 1000)  # noqa: E731
    kernel_at = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            c = e["args"]["correlation"]
            kernel_at[c] = min(kernel_at.get(c, ns(e["ts"])), ns(e["ts"]))
    delays = sorted(kernel_at[e["args"]["correlation"]] - ns(e["ts"]) for e in ev
                    if e.get("ph") == "X" and e.get("name") in ("cudaLaunchKernel", "cudaLaunchKernelExC")
                    and e["args"].get("correlation") in kernel_at)
    runs, _ = discovery.discover(REAL_KINETO)
    (span,) = [s for r in runs.values() for s in r.spans()]
    p = readers.read(span, None, stage="all")
    derive.complete(p)
    d = dispatch.document(p)
    s = d["summary"]
    assert s["kind"] == "cuda" and s["launches"] == len(delays) > 0
    assert s["launch_delay_p50_us"] == pytest.approx(np.percentile(delays, 50) / 1000)
    assert s["launch_delay_p95_us"] == pytest.approx(np.percentile(delays, 95) / 1000)
    assert {r["path"] for r in d["ops"]} == {"cuda"}
    assert sum(r["launches"] for r in d["ops"]) <= s["launches"]
