"""msprof reader: real CANN 6.3 sample, generated PROF_* fixture, hand-made inputs."""
from __future__ import annotations

import glob
import json
import os
import shutil
import sys

import pytest

from tb_plugin.readers import msprof
from tb_plugin.span_source import SpanSource

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
REAL = os.path.join(ROOT, "fixtures", "real")
CANN63 = os.path.join(REAL, "mindinsight_msprof_cann63",
                      "PROF_000001_20230818142704322_COJGGGCANRMICFBC")


def _span(root, logdir=None, device_id=0):
    return SpanSource(logdir=logdir or os.path.dirname(root), run="run", worker="w", span="1",
                      producer="msprof", root=root, files=(), device_id=device_id)


def test_cann63_per_iteration_timelines():
    p = msprof.read(_span(CANN63), None)
    assert p.errors == []
    assert p.meta["producer"] == "msprof" and p.meta["device"] == "npu"
    assert p.meta["device_id"] == 0 and p.meta["rank"] == 0
    assert p.meta["layout"] == "device_timeline_per_iteration"
    # Independent count with the stdlib: Ascend Hardware X events not on the Step Trace thread.
    files = sorted(glob.glob(os.path.join(CANN63, "device_0", "timeline", "msprof_*.json")))
    ref = 0
    for f in files:
        ev = json.load(open(f))
        ref += sum(1 for e in ev if e.get("ph") == "X" and e.get("pid") == 3
                   and e.get("tid") != 10036)
    k = p.table("kernels")
    assert len(k) == ref == 4900
    assert (k["core_type"] == "AI_CORE").sum() == 1370
    assert set(k["stream_id"].dropna()) == {2, 3, 4, 10, 12, 13}
    # ~490 hardware tasks per iteration (docs/formats.md §3.2)
    windows = p.table("step_windows")[["step", "start_ns", "end_ns"]].to_numpy().tolist()
    assert [w[0] for w in windows] == list(range(1, 11))
    starts = k["start_ns"].to_numpy()
    per_iter = [((starts >= s) & (starts < e)).sum() for _, s, e in windows]
    assert all(480 <= n <= 490 for n in per_iter), per_iter
    tracks = p.table("tracks")
    kinds = dict(zip(tracks["process"] + "/" + tracks["thread"], tracks["kind"]))
    assert kinds["Ascend Hardware/Stream 2"] == "device"
    assert kinds["Ascend Hardware/Step Trace(Model ID:2)"] == "other"
    assert kinds["HCCL/Communication Kernel"] == "communication"
    assert kinds["Overlap Analysis/Computing"] == "overlap"
    assert kinds["CANN/Thread 16027"] == "cann"
    cann = tracks[tracks["kind"] == "cann"]
    assert cann["device_id"].isna().all()
    # Overlap Analysis present -> steps left to analysis, windows exported as a table.
    assert not p.has("steps")
    # first iteration window = the `Iteration 1` slice (monotonic µs, exact ns)
    assert windows[0][1] == 56635864652490 and windows[0][2] == 56635912240300


def test_cann63_steps_from_timeline_without_overlap(tmp_path):
    """Copy of one iteration with the Overlap Analysis events removed: steps from the trace."""
    dst = tmp_path / "PROF_000001_1_A" / "device_0" / "timeline"
    dst.mkdir(parents=True)
    ev = json.load(open(os.path.join(CANN63, "device_0", "timeline", "msprof_0_2_1.json")))
    ev = [e for e in ev if e.get("pid") != 1003612]
    (dst / "msprof_0_2_1.json").write_text(json.dumps(ev))
    p = msprof.read(_span(str(tmp_path / "PROF_000001_1_A"), str(tmp_path)), None)
    s = p.table("steps")
    assert s["step"].tolist() == [1]
    assert s["total_ns"].iloc[0] == 47587810
    assert s["bd_computing"].iloc[0] == 4236100
    assert s["bd_iteration_refresh"].iloc[0] == 43345580
    assert s["bd_other"].iloc[0] == 47587810 - 4236100 - 43345580
    assert p.meta["step_categories"] == ["computing", "iteration_refresh", "other"]


# ---------------------------------------------------------------- hand-made new layout

OP_HEADER = ("Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,"
             "Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Num,Mix Block Num,"
             "HF32 Eligible,Input Shapes,Input Data Types,Input Formats,Output Shapes,"
             "Output Data Types,Output Formats,Context ID,aicore_time(us)\n")


def _op_row(dev, task, name, ts, dur, wait="0.0", core="AI_CORE", stream="2"):
    return (f"{dev},4294967295,{task},{stream},{name},MatMulV2,static,{core},{ts}\t,{dur},{wait},"
            f"24,0,NO,\"4,512;512,8\",DT_BF16;DT_BF16,ND;ND,\"4,8\",DT_BF16,ND,N/A,{dur}\n")


def _new_layout(tmp_path):
    root = tmp_path / "PROF_000001_20240601000000000_ABCDEFGHABCDEFGH"
    out = root / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    (root / "device_1").mkdir()
    (root / "device_1" / "info.json.1").write_text(json.dumps({"rank_id": 5, "version": "1.0"}))
    ts = "20240601000100"
    (out / f"op_summary_slice_0_{ts}.csv").write_text(
        OP_HEADER + _op_row(1, 1, "k_a", "1717200000001000.125", "10.5")
        + _op_row(1, 2, "k_b", "1717200000001020.250", "3.0", "9.625")
        + _op_row(0, 3, "other_dev", "1717200000001030.000", "1.0"))
    (out / f"op_summary_slice_1_{ts}.csv").write_text(
        OP_HEADER + "1,4294967295,N/A,N/A,hcom_allReduce__1_0_1,N/A,N/A,COMMUNICATION,"
        "1717200000001040.000\t,100.0,0.0,0,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A\n")
    # an older export next to it must be ignored
    (out / "op_summary_20230101000000.csv").write_text(OP_HEADER + _op_row(1, 9, "old", "1", "1"))
    (out / f"step_trace_{ts}.csv").write_text(
        "Device_id,Iteration ID,FP Start(us),BP End(us),Iteration End(us),Iteration Time(us),"
        "FP to BP Time(us),Iteration Refresh(us),Data Aug Bound(us),Model ID\n"
        "1,1,1717200000001000.000\t,1717200000001100.000\t,1717200000001200.000\t,200.0,100.0,100.0,0.0,7\n"
        "1,2,1717200000001210.000\t,1717200000001300.000\t,1717200000001400.500\t,200.5,90.0,100.0,10.0,7\n")
    (out / f"npu_mem_{ts}.csv").write_text(
        "Device_id,event,ddr(KB),hbm(KB),memory(KB),timestamp(us)\n"
        "1,APP,0,2048,2048,1717200000001000.000\t\n1,Device,0,4096,4096,1717200000001000.000\t\n")
    (out / f"npu_module_mem_{ts}.csv").write_text(
        "Device_id,Component,Timestamp(us),Total Reserved(KB),Device\n"
        "1,HCCL,1717200000001000.000\t,1024,NPU:1\n1,RUNTIME,1717200000001001.000\t,-1,NPU:1\n")
    (out / f"operator_memory_{ts}.csv").write_text(
        "Device_id,Name,Size(KB),Allocation Time(us),Duration(us),Allocation Total Allocated(KB),"
        "Allocation Total Reserved(KB),Release Total Allocated(KB),Release Total Reserved(KB),Device\n"
        "1,cann::MatMul,512,1717200000001000.500\t,20.25,1024,2048,512,2048,NPU:1\n"
        "1,cann::Add,-64,1717200000001001.000\t,,1024,2048,,,NPU:1\n")
    pid = (23456 << 10) | (14 << 5) | 1
    cann = (23456 << 10) | (7 << 5) | 31
    trace = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "NPU 1"}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": 14}},
        {"ph": "M", "name": "process_name", "pid": cann, "tid": 0, "args": {"name": "CANN"}},
        {"ph": "M", "name": "process_labels", "pid": cann, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_sort_index", "pid": cann, "tid": 0, "args": {"sort_index": 7}},
        {"ph": "X", "name": "k_a", "pid": pid, "tid": 2, "ts": "1717200000001000.125", "dur": 10.5,
         "args": {"Task Type": "AI_CORE"}},
        {"ph": "X", "name": "Node@launch", "pid": cann, "tid": 23456, "ts": "1717200000000990.000",
         "dur": 2.0},
        {"ph": "s", "name": "HostToDevice1", "id": "1", "cat": "HostToDevice", "pid": cann,
         "tid": 23456, "ts": "1717200000000990.000"},
        {"ph": "f", "name": "HostToDevice1", "id": "1", "cat": "HostToDevice", "pid": pid, "tid": 2,
         "ts": "1717200000001000.125", "bp": "e"},
        {"ph": "C", "name": "APP/HBM", "pid": pid, "tid": 0, "ts": "1717200000001000.000",
         "args": {"KB": 2048}},
    ]
    (out / f"msprof_{ts}.json").write_text(json.dumps(trace))
    analyze = root / "analyze"
    analyze.mkdir()
    (analyze / "communication.json").write_text(json.dumps({
        "hcom_allReduce__1_0_1@group0": {
            "Communication Time Info": {"Start Timestamp(us)": 1717200000001040.0,
                                        "Elapse Time(ms)": 0.1, "Transit Time(ms)": 0.06,
                                        "Wait Time(ms)": 0.03, "Synchronization Time(ms)": 0.01,
                                        "Idle Time(ms)": 0.01},
            "Communication Bandwidth Info": {
                "HCCS": {"Transit Size(MB)": 2.0, "Transit Time(ms)": 0.06, "Bandwidth(GB/s)": 33.3},
                "SDMA": {"Transit Size(MB)": 2.0, "Transit Time(ms)": 0.06, "Bandwidth(GB/s)": 33.3},
                "RDMA": {"Transit Size(MB)": 0.5, "Transit Time(ms)": 0.01, "Bandwidth(GB/s)": 50}}},
        "total": {}}))
    (analyze / "communication_matrix.json").write_text(json.dumps({
        "hcom_allReduce__1_0_1@group0": {"0-1": {"Transport Type": "HCCS", "Transit Size(MB)": 2.0,
                                                 "Transit Time(ms)": 0.06, "Bandwidth(GB/s)": 33.3}},
        "total": {}}))
    return root


def test_new_layout(tmp_path):
    root = _new_layout(tmp_path)
    p = msprof.read(_span(str(root), str(tmp_path), device_id=1), None)
    assert p.errors == []
    assert p.meta["rank"] == 5 and p.meta["device_id"] == 1
    k = p.table("kernels")
    assert k["name"].astype(str).tolist() == ["k_a", "k_b", "hcom_allReduce__1_0_1"]
    assert k["start_ns"].tolist() == [1717200000001000125, 1717200000001020250,
                                      1717200000001040000]
    assert k["dur_ns"].tolist() == [10500, 3000, 100000]
    assert k["wait_ns"].tolist() == [0, 9625, 0]
    assert k["stream_id"].tolist()[:2] == [2, 2] and k["stream_id"].isna().tolist()[2]
    assert k["core_type"].astype(str).tolist() == ["AI_CORE", "AI_CORE", "COMMUNICATION"]
    assert k["type"].astype(str).tolist()[0] == "MatMulV2"
    assert k["block_dim"].tolist()[:2] == [24, 24]
    assert k["input_shapes"].iloc[0] == "4,512;512,8"
    assert "pmu_aic_time" in k.columns  # aicore_time(us), a PMU counter
    assert k["step"].isna().all()
    s = p.table("steps")
    assert s["step"].tolist() == [1, 2]
    assert s["end_ns"].tolist() == [1717200000001200000, 1717200000001400500]
    assert s["start_ns"].tolist() == [1717200000001000000, 1717200000001200000]
    assert s["total_ns"].tolist() == [200000, 200500]
    assert s["bd_computing"].tolist() == [100000, 90000]
    assert s["bd_other"].tolist() == [0, 10500]
    m = p.table("memory_records")
    assert sorted(m["component"].astype(str)) == ["APP", "Device"]
    assert sorted(m["reserved_mb"]) == [2.0, 4.0]
    assert set(m["device"].astype(str)) == {"NPU:1"}
    mm = p.table("module_memory")
    assert mm["reserved_mb"].iloc[0] == 1.0 and mm["reserved_mb"].isna().iloc[1]
    al = p.table("memory_allocations")
    assert al["release_ns"].tolist() == [1717200000001000500 + 20250, -1]
    assert al["alloc_total_reserved_mb"].tolist() == [2.0, 2.0]
    tr = p.table("tracks")
    kinds = dict(zip(tr["process"], tr["kind"]))
    assert kinds["Ascend Hardware"] == "device" and kinds["CANN"] == "cann"
    devs = dict(zip(tr["process"], tr["device_id"]))
    assert devs["Ascend Hardware"] == 1 and devs["CANN"] is __import__("pandas").NA
    assert len(p.table("flows")) == 2 and len(p.table("counters")) == 1
    c = p.table("communication_ops")
    assert c["name"].tolist() == ["hcom_allReduce__1_0_1"] and c["group"].tolist() == ["group0"]
    assert c["elapse_ns"].iloc[0] == 100000 and c["transit_size_mb"].iloc[0] == 2.5
    assert c["kind"].astype(str).iloc[0] == "collective"
    ln = p.table("communication_links")
    assert (ln["src_rank"].iloc[0], ln["dst_rank"].iloc[0]) == (0, 1)
    assert ln["transit_ns"].iloc[0] == 60000


def test_new_layout_args_side_file(tmp_path):
    root = _new_layout(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    p = msprof.read(_span(str(root), str(tmp_path), device_id=1), str(work))
    assert p.meta["args_file"] == "slice_args.arrow" and (work / "slice_args.arrow").exists()


def test_bad_files_each_reported(tmp_path):
    root = _new_layout(tmp_path)
    out = root / "mindstudio_profiler_output"
    ts = "20240601000100"
    (out / f"npu_mem_{ts}.csv").write_text("")                     # empty
    (out / f"npu_module_mem_{ts}.csv").write_text("Device_id,Foo\n1,2\n")  # missing column
    text = (out / f"msprof_{ts}.json").read_text()
    (out / f"msprof_{ts}.json").write_text(text[: int(len(text) * 0.7)])  # truncated
    (root / "analyze" / "communication.json").write_text("{ nope")
    p = msprof.read(_span(str(root), str(tmp_path), device_id=1), None)
    paths = sorted(e.path for e in p.errors)
    base = root.name + "/"
    assert paths == sorted([
        base + "analyze/communication.json",
        base + f"mindstudio_profiler_output/msprof_{ts}.json",
        base + f"mindstudio_profiler_output/npu_mem_{ts}.csv",
        base + f"mindstudio_profiler_output/npu_module_mem_{ts}.csv",
    ])
    msgs = {e.path.rsplit("/", 1)[-1]: e.message for e in p.errors}
    assert "empty" in msgs[f"npu_mem_{ts}.csv"]
    assert "Component" in msgs[f"npu_module_mem_{ts}.csv"]
    # the rest still loads
    assert len(p.table("kernels")) == 3
    assert len(p.table("steps")) == 2
    assert len(p.table("slices")) >= 1
    assert p.has("memory_allocations") and p.has("communication_links")


def test_missing_op_name_column_falls_back_to_trace(tmp_path):
    root = _new_layout(tmp_path)
    out = root / "mindstudio_profiler_output"
    for f in glob.glob(str(out / "op_summary_slice_*")):
        open(f, "w").write("Device_id,Task ID\n1,1\n")
    p = msprof.read(_span(str(root), str(tmp_path), device_id=1), None)
    assert len([e for e in p.errors if "Op Name" in e.message]) == 2
    k = p.table("kernels")
    assert k["name"].astype(str).tolist() == ["k_a"]
    assert k["core_type"].astype(str).tolist() == ["AI_CORE"]
    assert k["stream_id"].tolist() == [2] and k["device_id"].tolist() == [1]


def test_empty_prof_dir(tmp_path):
    root = tmp_path / "PROF_000001_1_X"
    root.mkdir()
    p = msprof.read(_span(str(root), str(tmp_path)), None)
    assert p.errors == [] and not p.has("kernels")


# ---------------------------------------------------------------- generated fixture

def test_generated_msprof(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "fixtures"))
    try:
        import generate as g
    except Exception:  # noqa: BLE001
        pytest.skip("fixtures/generate.py not available")
    finally:
        sys.path.pop(0)
    try:
        job = g.write_run(g.Config(producer="msprof"), str(tmp_path))
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"generator failed: {exc}")
    run = job.runs[0]
    root = os.path.join(str(tmp_path), run.dir_name)
    p = msprof.read(_span(root, str(tmp_path), device_id=run.device_id), None)
    assert p.errors == []
    k = p.table("kernels")
    assert len(k) == run.kernel_count
    assert p.meta["device_id"] == run.device_id
    # every kernel has its Ascend Hardware slice with the identical start (ns)
    tr = p.table("tracks")
    hw = set(tr.loc[tr["kind"] == "device", "track_id"])
    sl = p.table("slices")
    hw_starts = set(sl.loc[sl["track_id"].isin(hw), "start_ns"].tolist())
    comp = k[k["core_type"].astype(str) != "COMMUNICATION"]
    assert set(comp["start_ns"].tolist()) <= hw_starts
    if p.has("steps"):
        assert len(p.table("steps")) == len(run.steps)
    else:
        assert len(p.table("step_windows")) == len(run.steps)
