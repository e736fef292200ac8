"""Small, valid kineto traces with chosen operator and kernel names, for the security tests
(names that are hostile HTML, very long, or whatever a test needs)."""
from __future__ import annotations

import json
import os

HOST_PID, HOST_TID = 4242, 4242
GPU_PID, STREAM = 0, 7


def kineto_trace(op_names: list[str], kernel_names: list[str] | None = None) -> dict:
    """One profiler step; operator i runs 50 µs from 100 + 100 i µs and launches kernel i
    (30 µs, on stream 7) when there is one."""
    kernel_names = kernel_names if kernel_names is not None else []
    n = len(op_names)
    events = [
        {"name": "process_name", "ph": "M", "ts": 0, "pid": HOST_PID, "tid": 0,
         "args": {"name": "python3"}},
        {"name": "process_name", "ph": "M", "ts": 0, "pid": GPU_PID, "tid": 0,
         "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": 0, "pid": GPU_PID, "tid": 0,
         "args": {"labels": "GPU 0"}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": GPU_PID, "tid": STREAM,
         "args": {"name": f"stream {STREAM}"}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": HOST_PID,
         "tid": HOST_TID, "ts": 50, "dur": 100 * n + 100, "args": {"External id": 1}},
    ]
    for i, op in enumerate(op_names):
        ts = 100 + 100 * i
        ext = 10 + i
        events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": HOST_PID, "tid": HOST_TID,
                       "ts": ts, "dur": 50, "args": {"External id": ext, "Input Dims": [[4]],
                                                     "Call stack": f"{op};train.py(1): main"}})
        if i < len(kernel_names):
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": HOST_PID, "tid": HOST_TID, "ts": ts + 10, "dur": 5,
                           "args": {"External id": ext, "correlation": 1000 + i}})
            events.append({"ph": "X", "cat": "kernel", "name": kernel_names[i], "pid": GPU_PID,
                           "tid": STREAM, "ts": ts + 20, "dur": 30,
                           "args": {"device": 0, "stream": STREAM, "correlation": 1000 + i,
                                    "External id": ext}})
    return {"schemaVersion": 1, "displayTimeUnit": "ms",
            "deviceProperties": [{"id": 0, "name": "Test GPU", "totalGlobalMem": 1 << 34}],
            "traceEvents": events}


def write_kineto(directory: str | bytes, file_name: str | bytes, op_names: list[str],
                 kernel_names: list[str] | None = None) -> str:
    """Write a trace (directory and file name may be bytes: names that are not UTF-8)."""
    directory = os.fsdecode(directory)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, os.fsdecode(file_name))
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(kineto_trace(op_names, kernel_names), fh)
    return path
