"""torch_npu / MindSpore span reader: each header variant against values computed here from
the same files with the stdlib (csv, json, Decimal), plus bad-input behaviour."""
from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import shutil
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pandas as pd
import pytest

from tb_plugin.analysis import npu_overlap
from tb_plugin import readers
from tb_plugin.readers import ARGS_FILE
from tb_plugin.readers import column_conversions, torch_npu
from tb_plugin.span_source import SpanSource

OS_PID = 12345
DEV = 2


def enc_pid(sort: int, dev: int = DEV) -> int:
    return (OS_PID << 10) | (sort << 5) | dev


HW, CANN, OVL, MEM = enc_pid(14), enc_pid(7, 31), enc_pid(31), enc_pid(17)
T0 = 1700000000000000


def ts(us: float) -> str:
    """Absolute µs text with 3 decimals, like the writers."""
    return f"{Decimal(T0) + Decimal(str(us)):.3f}"


def ns(text) -> int:
    """Independent exact µs-text -> ns."""
    t = str(text).strip().strip("\t").strip()
    if t in ("", "N/A"):
        return 0
    return int((Decimal(t) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


# ----------------------------------------------------------------------------- builders

def trace_events(with_overlap=True):
    ev = [
        {"ph": "M", "name": "process_name", "pid": OS_PID, "tid": 0, "args": {"name": "Python"}},
        {"ph": "M", "name": "process_labels", "pid": OS_PID, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_sort_index", "pid": OS_PID, "tid": 0, "args": {"sort_index": 0}},
        {"ph": "M", "name": "thread_name", "pid": OS_PID, "tid": OS_PID, "args": {"name": f"Thread {OS_PID}"}},
        {"ph": "M", "name": "process_name", "pid": CANN, "tid": 0, "args": {"name": "CANN"}},
        {"ph": "M", "name": "process_sort_index", "pid": CANN, "tid": 0, "args": {"sort_index": 7}},
        {"ph": "M", "name": "process_name", "pid": HW, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "M", "name": "process_labels", "pid": HW, "tid": 0, "args": {"labels": f"NPU {DEV}"}},
        {"ph": "M", "name": "process_sort_index", "pid": HW, "tid": 0, "args": {"sort_index": 14}},
        {"ph": "M", "name": "process_name", "pid": MEM, "tid": 0, "args": {"name": "NPU MEM"}},
        {"ph": "M", "name": "process_sort_index", "pid": MEM, "tid": 0, "args": {"sort_index": 17}},
        # Step 3: host [0, 1000), step 4: host [1000, 2000)
        {"ph": "X", "name": "ProfilerStep#3", "pid": OS_PID, "tid": OS_PID, "ts": ts(0), "dur": 1000.0, "cat": "cpu_op", "args": {}},
        {"ph": "X", "name": "aten::add", "pid": OS_PID, "tid": OS_PID, "ts": ts(100.25), "dur": 18.4, "cat": "cpu_op",
         "args": {"Sequence number": -1, "Input Dims": "8,3;\r\n8,3;\r\n"}},
        {"ph": "X", "name": "ProfilerStep#4", "pid": OS_PID, "tid": OS_PID, "ts": ts(1000), "dur": 1000.0, "cat": "cpu_op", "args": {}},
        {"ph": "X", "name": "aten::mul", "pid": OS_PID, "tid": OS_PID, "ts": ts(1100), "dur": 10.0, "cat": "cpu_op", "args": {}},
        {"ph": "X", "name": "AscendCL@aclnnAdd", "pid": CANN, "tid": OS_PID, "ts": ts(101), "dur": 5.0, "args": {}},
        {"ph": "X", "name": "aclnnAdd_AddAiCore_Add", "pid": HW, "tid": 2, "ts": ts(160.5), "dur": 3.2,
         "args": {"Task Type": "AI_VECTOR_CORE", "Physic Stream Id": 2}},
        {"ph": "X", "name": "aclnnMul_MulAiCore_Mul", "pid": HW, "tid": 2, "ts": ts(1160.5), "dur": 4.0,
         "args": {"Task Type": "AI_VECTOR_CORE"}},
        {"ph": "s", "bp": "e", "name": "torch_to_npu", "id": ns(ts(160.5)), "pid": OS_PID, "tid": OS_PID, "ts": ts(100.25), "cat": "async_npu"},
        {"ph": "f", "bp": "e", "name": "torch_to_npu", "id": ns(ts(160.5)), "pid": HW, "tid": 2, "ts": ts(160.5), "cat": "async_npu"},
        {"ph": "s", "bp": "e", "name": "torch_to_npu", "id": ns(ts(1160.5)), "pid": OS_PID, "tid": OS_PID, "ts": ts(1100), "cat": "async_npu"},
        {"ph": "f", "bp": "e", "name": "torch_to_npu", "id": ns(ts(1160.5)), "pid": HW, "tid": 2, "ts": ts(1160.5), "cat": "async_npu"},
        {"ph": "C", "name": "APP/HBM", "pid": MEM, "tid": 0, "ts": ts(50), "args": {"KB": 1024.5}},
    ]
    if with_overlap:
        ev += [
            {"ph": "M", "name": "process_name", "pid": OVL, "tid": 0, "args": {"name": "Overlap Analysis"}},
            {"ph": "M", "name": "process_labels", "pid": OVL, "tid": 0, "args": {"labels": f"NPU {DEV}"}},
            {"ph": "M", "name": "process_sort_index", "pid": OVL, "tid": 0, "args": {"sort_index": 31}},
        ]
        # (name, tid, start µs, dur µs): step 3 device window starts at 160.5, step 4 at 1160.5
        for name, tid, start, dur in [
            ("Computing", 0, 160.5, 3.2), ("Communication", 1, 170, 50), ("Communication(Not Overlapped)", 2, 170, 40),
            ("Free", 3, 220, 100.125), ("Computing", 0, 1160.5, 4.0), ("Free", 3, 1170, 30),
            ("Communication", 1, 1200, 20), ("Communication(Not Overlapped)", 2, 1200, 20),
            ("Computing", 0, 120, 1.0),  # before the first device window: not attributed
        ]:
            ev.append({"ph": "X", "name": name, "pid": OVL, "tid": tid, "ts": ts(start), "dur": dur})
    return ev


def write_csv(path, header, rows, bom=False, encoding="utf-8"):
    buf = io.StringIO()
    w = csv.writer(buf)  # Python csv: CR LF line ends, minimal quoting (like torch_npu)
    w.writerow(header)
    for r in rows:
        w.writerow(r)
    data = buf.getvalue().encode(encoding)
    if bom:
        data = b"\xef\xbb\xbf" + data
    with open(path, "wb") as fh:
        fh.write(data)


KERNEL_VARIANTS = {
    "level0_2023": ["Step Id", "Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)",
                    "Wait Time(us)", "Block Dim"],
    "level0_2025": ["Step Id", "Device_id", "Name", "Type", "Accelerator Core", "Start Time(us)",
                    "Duration(us)", "Wait Time(us)", "Block Dim"],
    "level0_2026": ["Device_id", "Name", "Type", "Accelerator Core", "Start Time(us)",
                    "Duration(us)", "Wait Time(us)", "Block Num"],
    "level1": ["Step Id", "Device_id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State",
               "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Num",
               "Mix Block Num", "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats",
               "Output Shapes", "Output Data Types", "Output Formats", "Context ID",
               "aic_mac_time(us)", "aiv_vec_ratio"],
    "mindspore": ["Step ID", "Model ID", "Task ID", "Stream ID", "Name", "Type", "Accelerator Core",
                  "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim"],
}


def kernel_rows(header):
    base = [
        {"Step Id": "3", "Name": "aclnnAdd_AddAiCore_Add", "Type": "Add", "Accelerator Core": "AI_VECTOR_CORE",
         "Start Time(us)": ts(160.5) + "\t", "Duration(us)": "3.2", "Wait Time(us)": "0", "Block": "8",
         "Stream ID": "2", "Input Shapes": "8,3;8,3", "Input Data Types": "DT_FLOAT;DT_FLOAT",
         "Output Shapes": "8,3", "aic_mac_time(us)": "1.5", "aiv_vec_ratio": "N/A"},
        {"Step Id": "4", "Name": "aclnnMul_MulAiCore_Mul", "Type": "Mul", "Accelerator Core": "AI_VECTOR_CORE",
         "Start Time(us)": ts(1160.5) + "\t", "Duration(us)": "4.0", "Wait Time(us)": "996.8", "Block": "16",
         "Stream ID": "2", "Input Shapes": "8,3;", "Input Data Types": "DT_FLOAT;",
         "Output Shapes": "8,3", "aic_mac_time(us)": "2", "aiv_vec_ratio": "0.5"},
        {"Step Id": "", "Name": "hcom_allReduce__428_0_1", "Type": "N/A", "Accelerator Core": "COMMUNICATION",
         "Start Time(us)": ts(2500.001) + "\t", "Duration(us)": "50.5", "Wait Time(us)": "1000", "Block": "0",
         "Stream ID": "N/A", "Input Shapes": "N/A", "Input Data Types": "N/A", "Output Shapes": "N/A",
         "aic_mac_time(us)": "N/A", "aiv_vec_ratio": "N/A"},
    ]
    rows = []
    for b in base:
        r = []
        for h in header:
            if h in ("Step Id", "Step ID"):
                r.append(b["Step Id"])
            elif h == "Device_id":
                r.append(str(DEV))
            elif h in ("Block Dim", "Block Num"):
                r.append(b["Block"])
            else:
                r.append(b.get(h, "N/A"))
        rows.append(r)
    return rows


OPERATOR_HEADER = ["Name", "Input Shapes", "Call Stack", "Host Self Duration(us)", "Host Total Duration(us)",
                   "Device Self Duration(us)", "Device Total Duration(us)",
                   "Device Self Duration With AICore(us)", "Device Total Duration With AICore(us)"]
OPERATOR_ROWS = [
    ["aten::add", "8,3,224,224;\r\n64,3,7,7;\r\n", "train.py(10): step;\r\nmodel.py(5): forward;\r\n",
     "10.5", "18.4", "3.2", "3.2", "0", "0"],
    ["aten::mul", "", "", "7.125", "10", "4", "4", "4", "4"],
    ["aten::empty", "", "", "1", "1", "0", "0", "0", "0"],
]

STEP_VARIANTS = {
    9: ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage",
        "Bubble", "Communication(Not Overlapped and Exclude Receive)"],
    10: ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage",
         "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"],
    11: ["Device_id", "Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
         "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"],
}
STEP_VALUES = {  # step -> column -> µs text
    "3": {"Computing": "3.200", "Communication(Not Overlapped)": "40", "Overlapped": "10", "Communication": "50",
          "Free": "100.125", "Stage": "150", "Bubble": "0", "Communication(Not Overlapped and Exclude Receive)": "40",
          "Preparing": "160.5"},
    "4": {"Computing": "4", "Communication(Not Overlapped)": "20", "Overlapped": "0", "Communication": "20",
          "Free": "30", "Stage": "60", "Bubble": "0", "Communication(Not Overlapped and Exclude Receive)": "20",
          "Preparing": "160.5"},
}

MEMORY_VARIANTS = {
    5: ["Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)", "Device Type"],
    6: ["Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)", "Total Active(MB)",
        "Device Type"],
    7: ["Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)", "Total Active(MB)",
        "Stream Ptr", "Device Type"],
}


def memory_rows(header, components=("PTA", "GE", "PTA+GE", "APP")):
    vals = {
        "PTA": ("12.5", "20", "13"), "GE": ("1", "2", ""), "PTA+GE": ("13.5", "22", "13"),
        "APP": ("", "40.25", ""), "MindSpore": ("12.5", "20", ""), "MindSpore+GE": ("13.5", "22", ""),
    }
    rows = []
    for i, comp in enumerate(components):
        a, r, act = vals[comp]
        row = {"Component": comp, "Timestamp(us)": ts(10 + i) + "\t", "Total Allocated(MB)": a,
               "Total Reserved(MB)": r, "Total Active(MB)": act, "Stream Ptr": "187650000",
               "Device Type": f"NPU:{DEV}"}
        rows.append([row[h] for h in header])
    return rows


OPMEM_VARIANTS = {
    10: ["Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Duration(us)",
         "Allocation Total Allocated(MB)", "Allocation Total Reserved(MB)", "Release Total Allocated(MB)",
         "Release Total Reserved(MB)", "Device Type"],
    15: ["Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Active Release Time(us)", "Duration(us)",
         "Active Duration(us)", "Allocation Total Allocated(MB)", "Allocation Total Reserved(MB)",
         "Allocation Total Active(MB)", "Release Total Allocated(MB)", "Release Total Reserved(MB)",
         "Release Total Active(MB)", "Stream Ptr", "Device Type"],
}


def opmem_rows(header):
    base = [
        {"Name": "aten::empty_strided", "Size(KB)": "512", "Allocation Time(us)": ts(100.3) + "\t",
         "Release Time(us)": ts(150.7) + "\t", "Active Release Time(us)": ts(150.7) + "\t", "Duration(us)": "50.4",
         "Active Duration(us)": "50.4", "Allocation Total Allocated(MB)": "12.5",
         "Allocation Total Reserved(MB)": "20", "Allocation Total Active(MB)": "12.5",
         "Release Total Allocated(MB)": "12", "Release Total Reserved(MB)": "20", "Release Total Active(MB)": "12",
         "Stream Ptr": "1", "Device Type": f"NPU:{DEV}"},
        {"Name": "cann::Add", "Size(KB)": "-4", "Allocation Time(us)": ts(200) + "\t", "Release Time(us)": "",
         "Active Release Time(us)": "", "Duration(us)": "", "Active Duration(us)": "",
         "Allocation Total Allocated(MB)": "1", "Allocation Total Reserved(MB)": "2",
         "Allocation Total Active(MB)": "", "Release Total Allocated(MB)": "", "Release Total Reserved(MB)": "",
         "Release Total Active(MB)": "", "Stream Ptr": "", "Device Type": f"NPU:{DEV}"},
    ]
    return [[b[h] for h in header] for b in base]


COMMUNICATION = {
    "step3": {
        "collective": {
            "hcom_allReduce__428_0_1@group_a": {
                "Communication Time Info": {"Start Timestamp(us)": 1700000000000170.5, "Elapse Time(ms)": 0.05,
                                            "Transit Time(ms)": 0.03, "Wait Time(ms)": 0.015,
                                            "Synchronization Time(ms)": 0.01, "Idle Time(ms)": 0.005,
                                            "Wait Time Ratio": 0.3333, "Synchronization Time Ratio": 0.25},
                "Communication Bandwidth Info": {
                    "RDMA": {"Transit Size(MB)": 0, "Transit Time(ms)": 0, "Bandwidth(GB/s)": 0},
                    "HCCS": {"Transit Size(MB)": 1.5, "Transit Time(ms)": 0.03, "Bandwidth(GB/s)": 50},
                    "SDMA": {"Transit Size(MB)": 1.5, "Transit Time(ms)": 0.03, "Bandwidth(GB/s)": 50}}},
            "Total Op Info": {"Communication Time Info": {"Elapse Time(ms)": 0.05}},
        },
        "p2p": {
            "hcom_send__1_0@group_b": {
                "Communication Time Info": {"Start Timestamp(us)": 1700000000000300.0, "Elapse Time(ms)": 0.002,
                                            "Transit Time(ms)": 0.001, "Wait Time(ms)": 0.0,
                                            "Synchronization Time(ms)": 0.0, "Idle Time(ms)": 0.001},
                "Communication Bandwidth Info": {"HCCS": {"Transit Size(MB)": 0.25}, "PCIE": {"Transit Size(MB)": 0.5}}},
            "Total Op Info": {},
        },
    },
    "step4": {"collective": {
        "hcom_allReduce__428_1_1@group_a": {
            "Communication Time Info": {"Start Timestamp(us)": 1700000000001200.0, "Elapse Time(ms)": 0.02,
                                        "Transit Time(ms)": 0.02, "Wait Time(ms)": 0, "Synchronization Time(ms)": 0,
                                        "Idle Time(ms)": 0},
            "Communication Bandwidth Info": {}},
        "Total Op Info": {}}, "p2p": {}},
}

MATRIX = {
    "step3": {"collective": {
        "allreduce-top1@group_a": {"0-1": {"Transport Type": "HCCS", "Transit Size(MB)": 1.5, "Transit Time(ms)": 0.03,
                                           "Bandwidth(GB/s)": 50, "Op Name": "hcom_allReduce__428_0_1"}},
        "allreduce-total@group_a": {"0-1": {"Transport Type": "HCCS", "Transit Size(MB)": 1.5,
                                            "Transit Time(ms)": 0.03, "Bandwidth(GB/s)": 50},
                                    "1-0": {"Transport Type": "HCCS", "Transit Size(MB)": 1.5,
                                            "Transit Time(ms)": 0.03, "Bandwidth(GB/s)": 50}}},
        "p2p": {}},
}


def make_span(root, producer="torch_npu", kernel="level1", steps=10, memory=7, opmem=15, module="MB",
              trace=True, gz=False, overlap=True, rank=1, comm=True):
    suffix = "_ascend_pt" if producer == "torch_npu" else "_ascend_ms"
    span_dir = os.path.join(root, "run", f"host_{OS_PID}_20240101123456789{suffix}")
    out = os.path.join(span_dir, "ASCEND_PROFILER_OUTPUT")
    os.makedirs(out)
    info = {"config": {"common_config": {}, "experimental_config": {"_profiler_level": "Level1"}},
            "torch_npu_version": "2.1.0.post8", "cann_version": "8.0.RC3"}
    if rank is not None:
        info["rank_id"] = rank
    with open(os.path.join(span_dir, f"profiler_info_{rank}.json" if rank is not None
                           else "profiler_info.json"), "w") as fh:
        json.dump(info, fh, indent=4)
    with open(os.path.join(span_dir, "profiler_metadata.json"), "w") as fh:
        json.dump({"parallel_group_info": {"group_a": {"group_name": "default_group", "group_rank": rank,
                                                       "global_ranks": [0, 1, 2, 3]},
                                           "group_b": {"group_name": "pp", "group_rank": 0,
                                                       "global_ranks": [1, 3]}}}, fh)
    if trace:
        data = json.dumps(trace_events(overlap)).encode()
        if gz:
            with gzip.open(os.path.join(out, "trace_view.json.gz"), "wb") as fh:
                fh.write(data)
        else:
            with open(os.path.join(out, "trace_view.json"), "wb") as fh:
                fh.write(data)
    if kernel:
        h = KERNEL_VARIANTS[kernel]
        write_csv(os.path.join(out, "kernel_details.csv"), h, kernel_rows(h))
    if producer == "torch_npu":
        write_csv(os.path.join(out, "operator_details.csv"), OPERATOR_HEADER, OPERATOR_ROWS)
    else:
        write_csv(os.path.join(out, "operator_details.csv"), ["Name", "Input Shapes"],
                  [["Default/network/Conv2D-op1", "\"32,3,224,224\";\"64,3,7,7\""], ["Default/Add-op2", ""]])
    if steps:
        h = STEP_VARIANTS[steps]
        write_csv(os.path.join(out, "step_trace_time.csv"), h,
                  [[str(DEV) if c == "Device_id" else s if c == "Step" else v[c] for c in h]
                   for s, v in STEP_VALUES.items()])
    if memory:
        h = MEMORY_VARIANTS[memory]
        comps = ("PTA", "GE", "PTA+GE", "APP") if producer == "torch_npu" else ("MindSpore", "GE", "MindSpore+GE", "APP")
        write_csv(os.path.join(out, "memory_record.csv"), h, memory_rows(h, comps))
    if opmem:
        h = OPMEM_VARIANTS[opmem]
        write_csv(os.path.join(out, "operator_memory.csv"), h, opmem_rows(h))
    if module:
        unit = f"Total Reserved({module})"
        h = ["Device_id", "Component", "Timestamp(us)", unit, "Device"]
        write_csv(os.path.join(out, "npu_module_mem.csv"), h,
                  [[str(DEV), "HCCL", ts(5) + "\t", "2048", f"NPU:{DEV}"],
                   [str(DEV), "APP", ts(6) + "\t", "-1", f"NPU:{DEV}"]])
    if comm:
        with open(os.path.join(out, "communication.json"), "w") as fh:
            json.dump(COMMUNICATION, fh)
        with open(os.path.join(out, "communication_matrix.json"), "w") as fh:
            json.dump(MATRIX, fh)
    return span_source(root, span_dir, producer)


def span_source(root, span_dir, producer="torch_npu"):
    files = []
    for d, _, fs in os.walk(span_dir):
        files += [os.path.join(d, f) for f in fs]
    return SpanSource(logdir=str(root), run="run", worker=f"host_{OS_PID}", span="20240101123456789",
                      producer=producer, root=span_dir, files=tuple(sorted(files)))


def read_rows(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def out_file(span, name):
    return os.path.join(span.root, "ASCEND_PROFILER_OUTPUT", name)


def reader(producer):
    return torch_npu.read if producer == "torch_npu" else torch_npu.read_mindspore


# ----------------------------------------------------------------------------- tests: kernels

@pytest.mark.parametrize("variant", list(KERNEL_VARIANTS))
def test_kernels_variants(tmp_path, variant):
    producer = "mindspore" if variant == "mindspore" else "torch_npu"
    span = make_span(tmp_path, producer=producer, kernel=variant)
    prof = reader(producer)(span, None)
    assert prof.errors == []
    k = prof.table("kernels")
    rows = read_rows(out_file(span, "kernel_details.csv"))
    assert len(k) == len(rows)
    assert list(k["name"].astype(str)) == [r["Name"] for r in rows]
    assert list(k["start_ns"]) == [ns(r["Start Time(us)"]) for r in rows]
    assert list(k["dur_ns"]) == [ns(r["Duration(us)"]) for r in rows]
    assert list(k["wait_ns"]) == [ns(r["Wait Time(us)"]) for r in rows]
    assert list(k["core_type"].astype(str)) == [r["Accelerator Core"] for r in rows]
    assert list(k["type"].astype(str)) == [r["Type"] if r["Type"] != "N/A" else "" for r in rows]
    block = [r.get("Block Num", r.get("Block Dim")) for r in rows]
    assert [None if pd.isna(v) else int(v) for v in k["block_dim"]] == [int(b) for b in block]
    step_col = "Step Id" if "Step Id" in rows[0] else "Step ID" if "Step ID" in rows[0] else None
    got_steps = [None if pd.isna(v) else int(v) for v in k["step"]]
    if step_col:
        assert got_steps == [int(r[step_col]) if r[step_col] else None for r in rows]
    else:
        assert got_steps == [None] * len(rows)
    if "Device_id" in rows[0]:
        assert list(k["device_id"]) == [int(r["Device_id"]) for r in rows]
    # device id known from the trace's "NPU 2" label either way
    assert prof.meta["device_id"] == DEV
    if variant == "level1":
        assert list(k["input_shapes"]) == ["8,3;8,3", "8,3", ""]
        assert list(k["stream_id"].astype("object").where(k["stream_id"].notna(), None)) == [2, 2, None]
        # PMU columns kept as numeric extras; N/A -> NaN
        assert k["pmu_aic_mac_time"].tolist()[:2] == [1.5, 2.0]
        assert np.isnan(k["pmu_aiv_vec_ratio"].iloc[0]) and k["pmu_aiv_vec_ratio"].iloc[1] == 0.5
        assert "Task ID" not in k.columns


def test_exact_timestamps(tmp_path):
    span = make_span(tmp_path)
    prof = torch_npu.read(span, None)
    k = prof.table("kernels")
    assert k["start_ns"].iloc[2] == 1700000000002500001  # 3rd decimal kept exactly


# ----------------------------------------------------------------------------- tests: trace

def test_trace_tracks_slices_flows_counters(tmp_path):
    span = make_span(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    prof = torch_npu.read(span, str(work))
    assert prof.errors == []
    assert prof.meta["args_file"] == ARGS_FILE
    assert (work / ARGS_FILE).exists()
    t = prof.table("tracks")
    by_pid = {str(p): g for p, g in t.groupby(t["pid"].astype(str))}
    kind = {p: set(g["kind"]) for p, g in by_pid.items()}
    assert kind[str(OS_PID)] == {"host"}
    assert kind[str(CANN)] == {"cann"}
    assert kind[str(HW)] == {"device"}
    assert kind[str(OVL)] == {"overlap"}
    assert kind[str(MEM)] == {"counter"}
    dev = {p: set(g["device_id"].dropna().astype(int)) for p, g in by_pid.items()}
    assert dev[str(HW)] == {DEV} and dev[str(OVL)] == {DEV}
    assert dev[str(MEM)] == {DEV}          # from pid & 31 (no label)
    assert dev[str(CANN)] == set()         # host layer: device bits 31
    assert dev[str(OS_PID)] == set()
    assert set(by_pid[str(HW)]["process_sort"]) == {14}
    events = trace_events()
    xs = [e for e in events if e["ph"] == "X"]
    s = prof.table("slices")
    assert len(s) == len(xs)
    assert sorted(s["start_ns"].tolist()) == sorted(ns(e["ts"]) for e in xs)
    assert sorted(s["dur_ns"].tolist()) == sorted(ns(repr(e["dur"])) for e in xs)
    assert len(prof.table("flows")) == sum(e["ph"] in "sf" for e in events)
    c = prof.table("counters")
    assert c["value"].tolist() == [1024.5]
    # args table kept in memory without work_dir
    prof2 = torch_npu.read(span, None)
    assert prof2.meta["args_table"].num_rows >= len(xs)


def test_trace_gz(tmp_path):
    span = make_span(tmp_path, gz=True)
    prof = torch_npu.read(span, None)
    assert prof.errors == []
    assert len(prof.table("slices")) == sum(e["ph"] == "X" for e in trace_events())


# ----------------------------------------------------------------------------- tests: operators

def test_operators(tmp_path):
    span = make_span(tmp_path)
    prof = torch_npu.read(span, None)
    o = prof.table("operators")
    rows = read_rows(out_file(span, "operator_details.csv"))
    assert len(o) == len(rows)
    assert o["input_shapes"].iloc[0] == "8,3,224,224;64,3,7,7"
    assert o["call_stack"].iloc[0] == "train.py(10): step\nmodel.py(5): forward"
    assert o["input_shapes"].iloc[1] == "" and o["call_stack"].iloc[1] == ""
    for col, h in [("host_self_ns", "Host Self Duration(us)"), ("host_total_ns", "Host Total Duration(us)"),
                   ("device_self_ns", "Device Self Duration(us)"), ("device_total_ns", "Device Total Duration(us)"),
                   ("device_self_aicore_ns", "Device Self Duration With AICore(us)")]:
        assert o[col].tolist() == [ns(r[h]) for r in rows]
    assert (o["start_ns"] == 0).all() and o["step"].isna().all()


# ----------------------------------------------------------------------------- tests: steps

@pytest.mark.parametrize("ncols", [9, 10, 11])
def test_steps_variants(tmp_path, ncols):
    span = make_span(tmp_path, steps=ncols)
    prof = torch_npu.read(span, None)
    assert prof.errors == []
    st = prof.table("steps")
    rows = read_rows(out_file(span, "step_trace_time.csv"))
    assert st["step"].tolist() == [int(r["Step"]) for r in rows]
    for col, h in [("bd_computing", "Computing"), ("bd_communication_not_overlapped", "Communication(Not Overlapped)"),
                   ("bd_overlapped", "Overlapped"), ("bd_free", "Free")]:
        assert st[col].tolist() == [ns(r[h]) for r in rows]
    assert st["total_ns"].tolist() == [ns(r["Computing"]) + ns(r["Communication(Not Overlapped)"]) + ns(r["Free"])
                                       for r in rows]
    assert not any(c in st.columns for c in ("bd_bubble", "bd_preparing", "bd_communication"))
    # host ProfilerStep windows from the trace
    assert st["start_ns"].tolist() == [ns(ts(0)), ns(ts(1000))]
    assert st["end_ns"].tolist() == [ns(ts(1000)), ns(ts(2000))]
    assert prof.meta["step_categories"] == ["computing", "communication_not_overlapped", "overlapped", "free"]
    assert prof.step_categories() == prof.meta["step_categories"]


def test_steps_empty_step_and_no_trace(tmp_path):
    span = make_span(tmp_path, trace=False, steps=9)
    p = out_file(span, "step_trace_time.csv")
    h = STEP_VARIANTS[9]
    write_csv(p, h, [["" if c == "Step" else STEP_VALUES["3"][c] for c in h]])
    prof = torch_npu.read(span, None)
    st = prof.table("steps")
    assert st["step"].tolist() == [0]
    assert st["start_ns"].tolist() == [0] and st["end_ns"].tolist() == [0]
    assert not prof.has("slices")


def test_steps_of_a_file_with_several_devices_keep_the_spans_device(tmp_path):
    """A step_trace_time.csv holding several devices keeps the span's rows (in step order,
    the device id as a nullable integer: an id cell may be empty), as the views stage
    stores it without a trace (the timeline stage reads the trace later)."""
    span = make_span(tmp_path, trace=False, steps=11)
    h = STEP_VARIANTS[11]

    def row(dev, step):
        return [dev if c == "Device_id" else step if c == "Step" else STEP_VALUES[step][c]
                for c in h]

    write_csv(out_file(span, "step_trace_time.csv"), h,
              [row("7", "4"), row(str(DEV), "4"), row("", "3"), row(str(DEV), "3"),
               row("7", "3")])
    prof = torch_npu.read(span, None, stage="views")
    assert prof.errors == []
    st = prof.table("steps")
    assert st["step"].tolist() == [3, 4]
    assert str(st["device_id"].dtype) == "Int64" and st["device_id"].tolist() == [DEV, DEV]
    assert st["bd_free"].tolist() == [ns(STEP_VALUES["3"]["Free"]), ns(STEP_VALUES["4"]["Free"])]
    assert st["total_ns"].tolist() == [sum(ns(STEP_VALUES[k][c]) for c in (
        "Computing", "Communication(Not Overlapped)", "Free")) for k in ("3", "4")]
    assert st["start_ns"].tolist() == [0, 0]


def test_steps_from_overlap_matches_csv(tmp_path):
    """Without step_trace_time.csv the reader leaves steps empty; the analysis recomputes them."""
    span = make_span(tmp_path, steps=None)
    prof = torch_npu.read(span, None)
    assert not prof.has("steps")
    df = npu_overlap.steps_from_overlap(prof)
    # expected from the overlap events written above (µs): step 3 / step 4
    exp = {3: dict(computing=3.2, comm=50, nov=40, free=100.125), 4: dict(computing=4, comm=20, nov=20, free=30)}
    assert df["step"].tolist() == [3, 4]
    for i, s in enumerate([3, 4]):
        e = exp[s]
        assert df["bd_computing"].iloc[i] == ns(repr(e["computing"]))
        assert df["bd_communication_not_overlapped"].iloc[i] == ns(repr(e["nov"]))
        assert df["bd_overlapped"].iloc[i] == ns(repr(e["comm"])) - ns(repr(e["nov"]))
        assert df["bd_free"].iloc[i] == ns(repr(e["free"]))
        assert df["total_ns"].iloc[i] == ns(repr(e["computing"])) + ns(repr(e["nov"])) + ns(repr(e["free"]))
    assert npu_overlap.fill_steps(prof) is True
    assert prof.has("steps") and prof.meta["step_categories"][0] == "computing"
    assert npu_overlap.fill_steps(prof) is False  # already has steps


def test_steps_from_overlap_without_steps_or_events(tmp_path):
    span = make_span(tmp_path, steps=None, overlap=False)
    prof = torch_npu.read(span, None)
    assert len(npu_overlap.steps_from_overlap(prof)) == 0
    assert npu_overlap.fill_steps(prof) is False
    # overlap events but no ProfilerStep: one step 0 with everything
    slices = prof.table("slices")
    span2 = make_span(tmp_path / "b", steps=None)
    prof2 = torch_npu.read(span2, None)
    s = prof2.table("slices")
    s = s[~s["name"].astype(str).str.startswith("ProfilerStep#")]
    df = npu_overlap.steps_from_overlap(s, prof2.table("tracks"))
    assert df["step"].tolist() == [0]
    assert df["bd_computing"].iloc[0] == ns("3.2") + ns("4.0") + ns("1.0")
    assert len(slices) > 0


# ----------------------------------------------------------------------------- tests: memory

@pytest.mark.parametrize("ncols", [5, 6, 7])
def test_memory_records(tmp_path, ncols):
    span = make_span(tmp_path, memory=ncols)
    prof = torch_npu.read(span, None)
    m = prof.table("memory_records")
    rows = read_rows(out_file(span, "memory_record.csv"))
    assert m["component"].astype(str).tolist() == [r["Component"] for r in rows]
    assert m["ts_ns"].tolist() == [ns(r["Timestamp(us)"]) for r in rows]
    f = lambda v: float(v) if v else np.nan  # noqa: E731
    np.testing.assert_allclose(m["reserved_mb"], [f(r["Total Reserved(MB)"]) for r in rows])
    np.testing.assert_allclose(m["allocated_mb"], [f(r["Total Allocated(MB)"]) for r in rows])
    if "Total Active(MB)" in rows[0]:
        np.testing.assert_allclose(m["active_mb"], [f(r["Total Active(MB)"]) for r in rows])
    else:
        assert m["active_mb"].isna().all()
    assert set(m["device"].astype(str)) == {f"NPU:{DEV}"}


def test_mindspore_memory_kb_per_1000(tmp_path):
    span = make_span(tmp_path, producer="mindspore", memory=5, opmem=None, module="KB", steps=9, kernel="mindspore")
    prof = torch_npu.read_mindspore(span, None)
    assert prof.meta["producer"] == "mindspore"
    m = prof.table("memory_records")
    rows = read_rows(out_file(span, "memory_record.csv"))
    assert m["component"].astype(str).tolist() == ["MindSpore", "GE", "MindSpore+GE", "APP"]
    # MindSpore "MB" = KB / 1000 -> MiB = value * 1000 / 1024
    np.testing.assert_allclose(m["reserved_mb"], [float(r["Total Reserved(MB)"]) * 1000 / 1024 for r in rows])
    mm = prof.table("module_memory")
    assert mm["reserved_mb"].iloc[0] == 2048 / 1024 and np.isnan(mm["reserved_mb"].iloc[1])
    o = prof.table("operators")
    assert o["name"].astype(str).tolist() == ["Default/network/Conv2D-op1", "Default/Add-op2"]
    assert prof.meta["operator_durations"] is False
    assert (o["host_total_ns"] == 0).all()


@pytest.mark.parametrize("ncols", [10, 15])
def test_memory_allocations(tmp_path, ncols):
    span = make_span(tmp_path, opmem=ncols)
    prof = torch_npu.read(span, None)
    a = prof.table("memory_allocations")
    rows = read_rows(out_file(span, "operator_memory.csv"))
    assert a["name"].astype(str).tolist() == [r["Name"] for r in rows]
    assert a["size_kb"].tolist() == [float(r["Size(KB)"]) for r in rows]
    assert a["alloc_ns"].tolist() == [ns(r["Allocation Time(us)"]) for r in rows]
    assert a["release_ns"].tolist() == [ns(r["Release Time(us)"]) if r["Release Time(us)"] else -1 for r in rows]
    assert a["duration_ns"].tolist() == [ns(r["Duration(us)"]) if r["Duration(us)"] else -1 for r in rows]
    assert a["alloc_total_reserved_mb"].tolist() == [float(r["Allocation Total Reserved(MB)"]) for r in rows]


@pytest.mark.parametrize("unit", ["MB", "KB"])
def test_module_memory(tmp_path, unit):
    span = make_span(tmp_path, module=unit)
    prof = torch_npu.read(span, None)
    mm = prof.table("module_memory")
    rows = read_rows(out_file(span, "npu_module_mem.csv"))
    h = f"Total Reserved({unit})"
    div = 1024.0 if unit == "KB" else 1.0
    exp = [float(r[h]) / div if float(r[h]) >= 0 else np.nan for r in rows]
    np.testing.assert_allclose(mm["reserved_mb"], exp)
    assert mm["ts_ns"].tolist() == [ns(r["Timestamp(us)"]) for r in rows]
    assert mm["component"].astype(str).tolist() == [r["Component"] for r in rows]
    assert set(mm["device"].astype(str)) == {f"NPU:{DEV}"}


# ----------------------------------------------------------------------------- tests: communication

def test_communication_ops(tmp_path):
    span = make_span(tmp_path)
    prof = torch_npu.read(span, None)
    c = prof.table("communication_ops")
    exp = []
    for step_key, classes in COMMUNICATION.items():
        for kind, ops in classes.items():
            for key, info in ops.items():
                if key == "Total Op Info":
                    continue
                t = info["Communication Time Info"]
                exp.append((int(step_key[4:]), key.split("@")[0], key.split("@")[1], kind,
                            round(Decimal(repr(t["Start Timestamp(us)"])) * 1000),
                            round(Decimal(repr(t["Elapse Time(ms)"])) * 1000000),
                            round(Decimal(repr(t["Wait Time(ms)"])) * 1000000)))
    got = list(zip(c["step"].astype(int), c["name"], c["group"], c["kind"].astype(str), c["start_ns"],
                   c["elapse_ns"], c["wait_ns"]))
    assert got == exp
    # transit size: RDMA + SDMA (SDMA already covers HCCS); without SDMA: HCCS + PCIE
    assert c["transit_size_mb"].tolist()[:2] == [1.5, 0.75]
    assert np.isnan(c["transit_size_mb"].iloc[2])


def test_communication_matrix(tmp_path):
    span = make_span(tmp_path)
    prof = torch_npu.read(span, None)
    lk = prof.table("communication_links")
    n = sum(len(links) for cl in MATRIX.values() for ops in cl.values() for links in ops.values())
    assert len(lk) == n
    assert lk["op"].tolist() == ["allreduce-top1@group_a", "allreduce-total@group_a", "allreduce-total@group_a"]
    assert lk["aggregate"].tolist() == [False, True, True]
    assert lk["op_name"].iloc[0] == "hcom_allReduce__428_0_1"
    assert lk["src_rank"].tolist() == [0, 0, 1] and lk["dst_rank"].tolist() == [1, 1, 0]
    assert lk["transit_ns"].tolist() == [30000] * 3
    assert lk["step"].tolist() == [3, 3, 3]


def test_communication_matrix_skips_a_link_whose_rank_is_beyond_int64(tmp_path):
    """A damaged link id (a source rank no int64 holds) is skipped like one that is no
    number; a destination beyond int64 makes the link a rank's own (as a missing one); the
    other links are stored as written."""
    span = make_span(tmp_path)
    with open(out_file(span, "communication_matrix.json"), "w") as fh:
        json.dump({"step3": {"collective": {"allreduce-top1@group_a": {
            "0-1": {"Transport Type": "HCCS", "Transit Size(MB)": 2, "Transit Time(ms)": 0.5},
            f"{2 ** 70}-0": {"Transport Type": "HCCS", "Transit Size(MB)": 1},
            f"2-{2 ** 70}": {"Transport Type": "HCCS", "Transit Size(MB)": 3}}}}}, fh)
    prof = torch_npu.read(span, None)
    assert prof.errors == []
    lk = prof.table("communication_links")
    assert lk["src_rank"].tolist() == [0, 2] and lk["dst_rank"].tolist() == [1, 2]
    assert lk["transit_size_mb"].tolist() == [2.0, 3.0]
    assert lk["transit_ns"].tolist() == [500000, 0]
    assert lk["op_name"].tolist() == ["allreduce-top1", "allreduce-top1"]


def test_communication_step_number_beyond_int64_is_no_step(tmp_path):
    """A section key `step<n>` whose n no int64 holds is damage: its ops and links are kept
    without a step (as under a bare `step` key), and the file reads without an error."""
    span = make_span(tmp_path)
    big = f"step{2 ** 70}"
    with open(out_file(span, "communication.json"), "w") as fh:
        json.dump({big: COMMUNICATION["step3"]}, fh)
    with open(out_file(span, "communication_matrix.json"), "w") as fh:
        json.dump({big: MATRIX["step3"]}, fh)
    prof = torch_npu.read(span, None)
    assert prof.errors == []
    ops, links = prof.table("communication_ops"), prof.table("communication_links")
    assert len(ops) and ops["step"].isna().all()
    assert len(links) and links["step"].isna().all()


def test_flat_msprof_communication_layout(tmp_path):
    span = make_span(tmp_path, producer="mindspore", kernel="mindspore", memory=5, opmem=None, steps=9)
    flat = dict(COMMUNICATION["step3"]["collective"])
    flat.pop("Total Op Info")
    flat.update(COMMUNICATION["step3"]["p2p"])
    flat["total"] = {"Communication Time Info": {}}
    with open(out_file(span, "communication.json"), "w") as fh:
        json.dump(flat, fh)
    with open(out_file(span, "communication_matrix.json"), "w") as fh:
        json.dump({"hcom_allReduce__428_0_1@group_a": {"0-0": {"Transport Type": "LOCAL", "Transit Size(MB)": 1}},
                   "total": {"0-0": {"Transport Type": "LOCAL", "Transit Size(MB)": 1}}}, fh)
    prof = torch_npu.read_mindspore(span, None)
    assert prof.errors == []
    c = prof.table("communication_ops")
    assert c["name"].tolist() == ["hcom_allReduce__428_0_1", "hcom_send__1_0"]
    assert c["kind"].astype(str).tolist() == ["collective", "p2p"]
    assert c["step"].isna().all()
    lk = prof.table("communication_links")
    assert lk["aggregate"].tolist() == [False, True]


# ----------------------------------------------------------------------------- tests: meta

def test_meta(tmp_path):
    span = make_span(tmp_path, rank=1)
    prof = torch_npu.read(span, None)
    m = prof.meta
    assert m["producer"] == "torch_npu" and m["device"] == "npu"
    assert m["rank"] == 1 and m["device_id"] == DEV
    assert m["profiler_level"] == "Level1"
    assert m["world_size"] == 4
    assert m["versions"] == {"torch_npu_version": "2.1.0.post8", "cann_version": "8.0.RC3"}


def test_meta_single_card_empty_info(tmp_path):
    span = make_span(tmp_path, rank=None, trace=False, kernel="level0_2023")
    with open(os.path.join(span.root, "profiler_info.json"), "w"):
        pass  # early torch_npu: empty marker file
    prof = torch_npu.read(span, None)
    assert "rank" not in prof.meta
    assert prof.errors == []


# ----------------------------------------------------------------------------- tests: bad input

def rels(prof):
    return {e.path for e in prof.errors}


def test_empty_file(tmp_path):
    span = make_span(tmp_path)
    open(out_file(span, "kernel_details.csv"), "w").close()
    prof = torch_npu.read(span, None)
    assert [e.message for e in prof.errors] == ["file is empty"]
    assert rels(prof) == {span.rel(out_file(span, "kernel_details.csv"))}
    assert not prof.has("kernels")
    for t in ("slices", "operators", "steps", "memory_records", "communication_ops"):
        assert prof.has(t), t


def test_missing_duration_column(tmp_path):
    span = make_span(tmp_path)
    h = [c for c in KERNEL_VARIANTS["level1"] if c != "Duration(us)"]
    write_csv(out_file(span, "kernel_details.csv"), h, kernel_rows(h))
    prof = torch_npu.read(span, None)
    assert len(prof.errors) == 1
    e = prof.errors[0]
    assert e.path.endswith("kernel_details.csv") and "Duration(us)" in e.message
    assert prof.has("steps") and prof.has("slices")


def test_bom_crlf_na(tmp_path):
    span = make_span(tmp_path)
    h = KERNEL_VARIANTS["level1"]
    write_csv(out_file(span, "kernel_details.csv"), h, kernel_rows(h), bom=True)
    prof = torch_npu.read(span, None)
    assert prof.errors == []
    k = prof.table("kernels")
    assert k["step"].tolist()[:2] == [3, 4] and k["step"].isna().iloc[2]  # "Step Id" found despite BOM
    assert k["type"].astype(str).iloc[2] == ""                            # N/A
    assert k["stream_id"].isna().iloc[2]


def test_non_utf8(tmp_path):
    span = make_span(tmp_path)
    rows = [list(r) for r in OPERATOR_ROWS]
    rows[1][0] = "aten::m\u00fcl"
    write_csv(out_file(span, "operator_details.csv"), OPERATOR_HEADER, rows, encoding="latin-1")
    prof = torch_npu.read(span, None)
    assert len(prof.errors) == 1 and prof.errors[0].path.endswith("operator_details.csv")
    assert "UTF-8" in prof.errors[0].message
    assert len(prof.table("operators")) == 3  # still loaded, bad byte replaced


def test_truncated_trace(tmp_path):
    span = make_span(tmp_path)
    p = out_file(span, "trace_view.json")
    data = open(p, "rb").read()
    with open(p, "wb") as fh:
        fh.write(data[: int(len(data) * 0.6)])
    prof = torch_npu.read(span, None)
    assert any(e.path.endswith("trace_view.json") for e in prof.errors)
    assert prof.has("kernels") and prof.has("steps") and prof.has("operators")


def test_invalid_json_files(tmp_path):
    span = make_span(tmp_path)
    with open(out_file(span, "communication.json"), "w") as fh:
        fh.write('{"step3": {"collective": ')
    with open(out_file(span, "trace_view.json"), "w") as fh:
        fh.write("")
    prof = torch_npu.read(span, None)
    paths = sorted(os.path.basename(e.path) for e in prof.errors)
    assert paths == ["communication.json", "trace_view.json"]
    assert prof.has("communication_links") and prof.has("kernels")


def test_db_only_span(tmp_path):
    span_dir = tmp_path / "run" / "host_1_20240101123456789_ascend_pt"
    out = span_dir / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "ascend_pytorch_profiler_0.db").write_bytes(b"SQLite format 3\x00")
    (span_dir / "profiler_info_0.json").write_text(json.dumps({"rank_id": 0}))
    prof = torch_npu.read(span_source(tmp_path, str(span_dir)), None)
    assert len(prof.errors) == 1
    assert "only SQLite export (export_type=db) found" in prof.errors[0].message
    assert prof.errors[0].path.endswith(".db")
    assert prof.meta["rank"] == 0


def test_dispatch(tmp_path):

    span = make_span(tmp_path, producer="mindspore", kernel="mindspore", memory=5, opmem=None, steps=9)
    try:
        prof = readers.read(span, None)
    except ImportError:
        pytest.skip("other readers not written yet")
    assert prof.meta["producer"] == "mindspore"


# ----------------------------------------------------------------------------- tests: fixtures

FIXTURES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            "fixtures")
FIXTURE_RUNS = ["torch_npu_level1", "torch_npu_dist4", "torch_npu_legacy_2023", "mindspore_2x"]


def _fixture_spans(name):
    try:
        from fixtures import generate
    except ImportError:
        pytest.skip("fixtures/generate.py not available")
    if not os.path.isdir(os.path.join(FIXTURES_DIR, name)):
        pytest.skip(f"fixture {name} not generated")
    job = generate.build_job(generate.FIXTURES[name])
    out = []
    for r in job.runs:
        d = os.path.join(FIXTURES_DIR, name, r.dir_name)
        if os.path.isdir(d):
            producer = "mindspore" if d.endswith("_ascend_ms") else "torch_npu"
            span = SpanSource(logdir=FIXTURES_DIR, run=name, worker=r.worker, span=r.dir_name, producer=producer,
                              root=d, files=())
            out.append((job, r, span, reader(producer)(span, None)))
    assert out
    return out


@pytest.mark.parametrize("name", FIXTURE_RUNS)
def test_fixture_against_ground_truth(name):
    for job, r, span, prof in _fixture_spans(name):
        assert prof.errors == [], prof.errors
        assert prof.meta["device_id"] == r.device_id
        if job.world_size > 1:
            assert prof.meta["rank"] == r.rank
            assert prof.meta["world_size"] == job.world_size
        k = prof.table("kernels")
        compute = k[k["core_type"].astype(str) != "COMMUNICATION"]
        for s in r.steps:
            got = compute[compute["step"] == int(s.step_id)]
            if s.kernels:
                # MindSpore names are "{launch op}/{kernel}"
                names = [n.rsplit("/", 1)[-1] for n in got["name"].astype(str)]
                assert sorted(zip(names, got["start_ns"], got["dur_ns"])) == \
                    sorted((kt.name, kt.start_ns, kt.dur_ns) for kt in s.kernels)
                assert all(ns(kt.ts) == kt.start_ns for kt in s.kernels)
        st = prof.table("steps")
        bd = {c: [round(s.breakdown_us[c] * 1000) for s in r.steps]
              for c in ("computing", "communication_not_overlapped", "overlapped", "free")}
        if prof.meta["producer"] == "mindspore":  # one whole-run row, step 0
            assert st["step"].tolist() == [0]
            for c, v in bd.items():
                assert abs(int(st[f"bd_{c}"].iloc[0]) - sum(v)) <= len(v), c
            assert st["start_ns"].iloc[0] == r.steps[0].host_start_ns
            assert st["end_ns"].iloc[0] == r.steps[-1].host_end_ns
        else:
            assert st["step"].tolist() == [int(s.step_id) for s in r.steps]
            assert st["start_ns"].tolist() == [s.host_start_ns for s in r.steps]
            assert st["end_ns"].tolist() == [s.host_end_ns for s in r.steps]
            for c, v in bd.items():
                assert st[f"bd_{c}"].tolist() == v, c
            # the analysis recomputes the same table from the trace's Overlap Analysis events
            df = npu_overlap.steps_from_overlap(prof)
            cols = ["step", "start_ns", "end_ns", "total_ns"] + [f"bd_{c}" for c in bd]
            pd.testing.assert_frame_equal(df[cols].reset_index(drop=True), st[cols].reset_index(drop=True),
                                          check_dtype=False)
        c = prof.table("communication_ops")
        assert sorted(c["name"]) == sorted(x.name for x in r.comm_ops)
        truth = {x.name: x for x in r.comm_ops}
        for row in c.itertuples():
            t = truth[row.name]
            assert row.group == t.group
            assert abs(row.start_ns - t.start_ns) <= 250      # JSON float µs: ~0.25 µs spacing
            assert abs(row.elapse_ns - t.dur_ns) <= 1
            assert abs(row.wait_ns - t.wait_ns) <= 1
            assert abs(row.transit_ns - t.transit_ns) <= 1
        if r.comm_ops:
            assert prof.has("communication_links")


def test_fixture_bad_input():
    root = os.path.join(FIXTURES_DIR, "bad_input")
    if not os.path.isdir(root):
        pytest.skip("bad_input fixture not generated")
    spans = sorted(d for d in os.listdir(root) if d.endswith("_ascend_pt"))
    assert len(spans) == 2
    good, bad = (os.path.join(root, d) for d in spans)  # the second span carries the defects
    p_good = torch_npu.read(span_source(FIXTURES_DIR, good), None)
    assert p_good.errors == []
    p_bad = torch_npu.read(span_source(FIXTURES_DIR, bad), None)
    by_file = {os.path.basename(e.path): e.message for e in p_bad.errors}
    assert set(by_file) == {"trace_view.json", "kernel_details.csv", "operator_details.csv", "operator_memory.csv"}
    assert "truncated" in by_file["trace_view.json"]
    assert "Duration(us)" in by_file["kernel_details.csv"]
    assert by_file["operator_details.csv"] == "file is empty"
    assert "UTF-8" in by_file["operator_memory.csv"]
    assert all(e.path.startswith(f"bad_input/{os.path.basename(bad)}/") for e in p_bad.errors)
    # the rest still loads
    assert p_bad.has("slices") and p_bad.has("steps") and p_bad.has("module_memory")
    assert p_bad.has("memory_allocations")
    # BOM + CRLF + N/A memory_record.csv: N/A cells are missing values, rows match the stdlib reading
    m = p_bad.table("memory_records")
    rows = read_rows(os.path.join(bad, "ASCEND_PROFILER_OUTPUT", "memory_record.csv"))
    assert len(m) == len(rows)
    na = [r["Total Reserved(MB)"] in ("N/A", "") for r in rows]
    assert m["reserved_mb"].isna().tolist() == na
    assert any(na)
    assert m["ts_ns"].tolist() == [ns(r["Timestamp(us)"]) for r in rows]


def test_kernel_device_from_trace_when_no_column(tmp_path):
    span = make_span(tmp_path, kernel="level0_2023")
    k = torch_npu.read(span, None).table("kernels")
    assert k["device_id"].tolist() == [DEV] * len(k)


def _shapes_reference(cell: str) -> str:
    # the documented rule with Python's re: CR / LF removed, trimmed, one trailing ";" off
    return re.sub(r";\Z", "", re.sub(r"[\r\n]+", "", cell).strip())


def _stack_reference(cell: str) -> str:
    # each `;?\r?\n` is one line break; trailing separators removed
    return re.sub(r"[;\n]+\Z", "", re.sub(r";?\r?\n", "\n", cell))


@pytest.mark.parametrize("seed", range(6))
def test_shapes_and_stack_cleanup_match_the_rule(seed):
    """The literal passes of `_shapes_text` / `_stack_text` (taken when the column allows)
    give what the rule gives for any mix of `;`, CR and LF: torch_npu's `;\\r\\n` frames,
    Linux `;\\n`, and stray CRs or semicolons that make the fast path unsafe."""
    rng = np.random.default_rng(seed)
    parts = {0: ["f(1): x", ";\r\n", "g"], 1: ["f(1): x", ";\n", "g"],
             2: [";", "\r", "\n", "a", " ", "é", "1,2", ";\r\n", ";\n", "\r\n"]}
    for _ in range(300):
        pool = parts[seed % 3]
        cells = ["".join(pool[i] for i in rng.integers(0, len(pool), rng.integers(0, 8)))
                 for _ in range(rng.integers(1, 6))]
        series = pd.Series(cells, dtype="string")
        assert column_conversions.shapes_text(series).tolist() == \
            [_shapes_reference(c) for c in cells], cells
        assert column_conversions.stack_text(series).tolist() == \
            [_stack_reference(c) for c in cells], cells


def test_a_process_id_beyond_any_integer_is_no_device_and_loses_nothing(tmp_path):
    """Found by the fuzz runs (`huge_numbers`): a pid of 1e400, or an "NPU <41 digits>"
    label, made the device-id decoding of the tracks fail, and with it the whole timeline.
    Now such a process is a track with no device, and every event is still read."""
    src = os.path.join(FIXTURES_DIR, "torch_npu_level1")
    if not os.path.isdir(src):
        pytest.skip("fixture torch_npu_level1 not generated")
    root = next(os.path.join(src, d) for d in sorted(os.listdir(src)) if d.endswith("_ascend_pt"))
    span_dir = tmp_path / os.path.basename(root)
    shutil.copytree(root, span_dir)
    trace = span_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    host_pid = next(e["pid"] for e in events if e.get("ph") == "X")
    text = trace.read_text()
    damaged = re.sub(rf'"pid":\s*"?{re.escape(str(host_pid))}"?(?=[,}}])', '"pid":1e400', text)
    assert damaged != text
    # ... and a device label whose number is beyond int64 (huge_numbers seed 6: 983).
    assert '"labels":"NPU 0"' in damaged
    damaged = damaged.replace('"labels":"NPU 0"', '"labels":"NPU 1' + "0" * 40 + '"')
    trace.write_text(damaged)

    def read(d):
        span = SpanSource(logdir=str(tmp_path), run="r", worker="w", span=os.path.basename(d),
                          producer="torch_npu", root=str(d), files=())
        return readers.read(span, None)

    clean_dir = tmp_path / "clean" / os.path.basename(root)
    shutil.copytree(root, clean_dir)
    prof, clean = read(span_dir), read(clean_dir)
    assert clean.errors == [] and len(clean.table("slices")) > 0
    assert prof.errors == [], prof.errors
    assert len(prof.table("slices")) == len(clean.table("slices"))
    tracks = prof.table("tracks")
    moved = tracks[tracks["pid"].astype(str) == "1e400"]
    assert len(moved) > 0 and moved["device_id"].isna().all()
    clean_tracks = clean.table("tracks")
    assert (clean_tracks["device_id"] == 0).any()
    assert not (tracks["device_id"] == 0).fillna(False).any()  # the NPU 0 label is gone
