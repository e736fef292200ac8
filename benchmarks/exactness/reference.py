"""Reference answers of torch-tb-profiler 0.4.3 for kineto traces, as JSON.

Runs in a throwaway virtualenv that has `torch-tb-profiler==0.4.3` installed (never in the
project's own environment; the tests read only the JSON this writes):

    python3 -m venv /tmp/ttp-venv && /tmp/ttp-venv/bin/pip install torch-tb-profiler==0.4.3
    /tmp/ttp-venv/bin/python benchmarks/exactness/reference.py TRACE [TRACE ...] --out DIR

For each trace the package's own loader (`RunProfileData.parse`, the step every RunLoader
worker process runs) computes its tables; this script only copies them out, unrounded:
- operators: per name and per (name, input shape): calls, host self/total, device self/total
  (µs, as the package sums them over its operator tree);
- kernels: per name: calls, total, mean, min, max (µs; `kernel_stat`, kernels only);
  kernel_by_op: per (kernel name, op name): calls, total, min, max;
- steps: per step of the overview breakdown: the step name and kernel, memcpy, memset,
  communication, runtime, dataloader, cpu_exec, other, total (µs).

Two category names of newer kineto traces that 0.4.3 predates are taught to it before
loading (`--pure` skips this; docs/exactness.md explains both):
- cat `cuda_runtime` (kineto >= PyTorch 2.0 writes it instead of `Runtime`) is a runtime
  event, as `runtime` is: without it 0.4.3 sees no launches on a PyTorch 2.x GPU trace
  (no device time for any operator, no runtime in the step breakdown);
- a `user_annotation` slice named `enumerate(DataLoader)#*.__next__` /
  `enumerate(DataPipe)#*` (how PyTorch 2.x records the DataLoader) is a DataLoader range,
  as 0.4.3's own step parser and operator-node factory already test for user annotations;
  its event factory drops every user annotation first, so 0.4.3 counts that time as Other.
Output: DIR/<trace file name without .pt.trace.json[.gz] / .json[.gz]>.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile


def _num(v):
    v = float(v)
    return v if math.isfinite(v) else None


def _teach_newer_categories() -> None:
    from torch_tb_profiler.profiler import data as data_mod, trace

    trace.EventTypeMap.setdefault("cuda_runtime", trace.EventTypes.RUNTIME)
    original = trace.create_trace_event

    def create_trace_event(event, is_pytorch_lightning):
        name = event.get("name") or ""
        if (str(event.get("cat", "")).lower() == "user_annotation"
                and ((name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__"))
                     or name.startswith("enumerate(DataPipe)#"))):
            return trace.OperatorEvent(trace.EventTypes.USER_ANNOTATION, event)
        return original(event, is_pytorch_lightning)

    def create_event(event, is_pytorch_lightning):
        if event.get("ph") == "X":
            return create_trace_event(event, is_pytorch_lightning)
        return original_create_event(event, is_pytorch_lightning)

    original_create_event = trace.create_event
    trace.create_trace_event = create_trace_event
    trace.create_event = create_event
    data_mod.trace.create_event = create_event


def answers(path: str, pure: bool = False) -> dict:
    import torch_tb_profiler
    if not pure:
        _teach_newer_categories()
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.event_parser import ProfileRole

    with tempfile.TemporaryDirectory() as cache_dir:
        data = RunProfileData.parse("worker", None, path, cache_dir)

    def op_row(agg, with_shape):
        row = {"name": agg.name, "calls": int(agg.calls),
               "host_self_us": _num(agg.self_host_duration),
               "host_total_us": _num(agg.host_duration),
               "device_self_us": _num(agg.self_device_duration),
               "device_total_us": _num(agg.device_duration)}
        if with_shape:
            row["input_shape"] = agg.input_shape
        return row

    out = {
        "trace": os.path.basename(path),
        "newer_categories_taught": not pure,
        "producer": f"torch-tb-profiler {getattr(torch_tb_profiler, '__version__', '0.4.3')}",
        "has_kernel": bool(data.has_kernel),
        "has_runtime": bool(data.has_runtime),
        "operators": sorted((op_row(a, False) for a in data.op_list_groupby_name),
                            key=lambda r: r["name"]),
        "operators_by_shape": sorted((op_row(a, True) for a in data.op_list_groupby_name_input),
                                     key=lambda r: (r["name"], r["input_shape"])),
        "kernels": [],
        "kernel_by_op": [],
        "steps": [],
    }
    if data.kernel_stat is not None:
        ks = data.kernel_stat
        out["kernels"] = sorted(({"name": str(name), "calls": int(r["count"]),
                                  "total_us": _num(r["sum"]), "mean_us": _num(r["mean"]),
                                  "min_us": _num(r["min"]), "max_us": _num(r["max"])}
                                 for name, r in ks.iterrows()), key=lambda r: r["name"])
    by_op: dict = {}
    for agg in data.kernel_list_groupby_name_op or []:
        key = (agg.name, agg.op_name)
        row = by_op.setdefault(key, {"name": agg.name, "op_name": agg.op_name, "calls": 0,
                                     "total_us": 0.0, "min_us": math.inf, "max_us": 0.0})
        row["calls"] += int(agg.calls)
        row["total_us"] += float(agg.total_duration)
        row["min_us"] = min(row["min_us"], float(agg.min_duration))
        row["max_us"] = max(row["max_us"], float(agg.max_duration))
    out["kernel_by_op"] = sorted(by_op.values(), key=lambda r: (r["name"], r["op_name"]))
    roles = [("kernel", ProfileRole.Kernel), ("memcpy", ProfileRole.Memcpy),
             ("memset", ProfileRole.Memset), ("communication", ProfileRole.Communication),
             ("runtime", ProfileRole.Runtime), ("dataloader", ProfileRole.DataLoader),
             ("cpu_exec", ProfileRole.CpuOp), ("other", ProfileRole.Other),
             ("total", ProfileRole.Total)]
    for name, costs in zip(data.steps_names, data.steps_costs):
        row = {"step": str(name)}
        for key, role in roles:
            row[f"{key}_us"] = _num(costs.costs[role])
        out["steps"].append(row)
    return out


def out_name(path: str) -> str:
    base = os.path.basename(path)
    return re.sub(r"(\.pt\.trace)?\.json(\.gz)?$", "", base) + ".json"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--pure", action="store_true",
                    help="plain 0.4.3, without the two newer category names")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for path in args.traces:
        doc = answers(path, args.pure)
        dest = os.path.join(args.out, out_name(path))
        with open(dest, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"{path} -> {dest}: {len(doc['operators'])} ops, {len(doc['kernels'])} kernels, "
              f"{len(doc['steps'])} steps", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
