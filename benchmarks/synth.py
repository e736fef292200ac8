"""Minimal synthetic torch_npu data for benchmark smoke tests and profiling.

The real benchmark data comes from `fixtures/generate.py` (the project's generator). This is a
small, self-contained fallback used by `run.py --synthetic` and for profiling while that
generator is unavailable. It writes the torch_npu layout
`{run}/{worker}_{ts}_ascend_pt/ASCEND_PROFILER_OUTPUT/` with trace_view.json, kernel_details.csv,
operator_details.csv, memory_record.csv, operator_memory.csv, step_trace_time.csv and
`profiler_info_{rank}.json`. Sizes are approximate (within ~10%).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import random

T0 = 1_700_000_000_000_000  # µs
OPS = ["aten::matmul", "aten::add", "aten::mul", "aten::conv2d", "aten::relu", "aten::softmax",
       "aten::layer_norm", "aten::gelu", "aten::copy_", "aten::empty", "aten::linear", "aten::sum"]
KTYPES = [("MatMul", "AI_CORE"), ("Add", "AI_VECTOR_CORE"), ("Mul", "AI_VECTOR_CORE"),
          ("Conv2D", "AI_CORE"), ("Relu", "AI_VECTOR_CORE"), ("SoftmaxV2", "AI_VECTOR_CORE"),
          ("LayerNorm", "AI_VECTOR_CORE"), ("Gelu", "AI_VECTOR_CORE"), ("Cast", "AI_VECTOR_CORE"),
          ("ZerosLike", "AI_VECTOR_CORE"), ("MatMulV2", "AI_CORE"), ("ReduceSum", "AI_VECTOR_CORE")]
BYTES_PER_OP = 1150  # trace bytes one op (cpu op + CANN api + kernel + 2 flow events) takes


def _ts(us: float) -> str:
    return f"{T0 + us:.3f}"


def write_span(out: str, worker: str, rank: int, span_ts: int, trace_mb: float, seed: int = 0):
    rnd = random.Random(seed * 1000 + rank)
    span_dir = os.path.join(out, f"{worker}_{span_ts}_ascend_pt")
    d = os.path.join(span_dir, "ASCEND_PROFILER_OUTPUT")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(span_dir, f"profiler_info_{rank}.json"), "w") as fh:
        json.dump({"config": {"common_config": {"activities": ["CPU", "NPU"]}},
                   "start_info": {}, "end_info": {}, "torch_npu_version": "2.1.0",
                   "rank_id": rank}, fh)
    os_pid = 10000 + rank
    dev = rank % 8
    hw = (os_pid << 10) | (14 << 5) | dev
    cann = (os_pid << 10) | (7 << 5) | 31
    mem = (os_pid << 10) | (17 << 5) | dev
    n_ops = max(50, int(trace_mb * 1024 * 1024 / BYTES_PER_OP))
    ops_per_step = 2000
    n_steps = max(1, n_ops // ops_per_step)
    kernels, operators, opmem, memrec, steps = [], {}, [], [], []
    with open(os.path.join(d, "trace_view.json"), "w") as fh:
        fh.write("[\n")
        meta = [
            (os_pid, "Python", "CPU", 0), (cann, "CANN", "CPU", 7),
            (hw, "Ascend Hardware", f"NPU {dev}", 14), (mem, "NPU MEM", f"NPU {dev}", 17)]
        for pid, name, label, sort in meta:
            fh.write(json.dumps({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                                 "args": {"name": name}}) + ",\n")
            fh.write(json.dumps({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0,
                                 "args": {"labels": label}}) + ",\n")
            fh.write(json.dumps({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                                 "args": {"sort_index": sort}}) + ",\n")
        t = 0.0
        alloc_mb = 100.0
        for step in range(1, n_steps + 1):
            step_start = t
            buf = []
            comp = 0.0
            for i in range(ops_per_step if step < n_steps else n_ops - ops_per_step * (n_steps - 1)):
                k = rnd.randrange(len(OPS))
                op = OPS[k]
                kname, ktype = KTYPES[k]
                dur = round(rnd.uniform(5, 40), 3)
                kts = t + 20.5
                kdur = round(rnd.uniform(2, 30), 3)
                shape = f"{rnd.choice((8, 16, 32))},{rnd.choice((128, 256, 1024))}"
                buf.append(
                    f'{{"ph":"X","name":"{op}","pid":{os_pid},"tid":{os_pid},"ts":"{_ts(t)}",'
                    f'"dur":{dur},"cat":"cpu_op","args":{{"Sequence number":{i},'
                    f'"Fwd thread id":0,"Input Dims":"{shape};\\r\\n{shape};\\r\\n",'
                    f'"Input type":"float;\\r\\nfloat;\\r\\n"}}}},\n'
                    f'{{"ph":"X","name":"AscendCL@aclnn{kname}","pid":{cann},"tid":{os_pid},'
                    f'"ts":"{_ts(t + 1)}","dur":{round(dur / 2, 3)},"args":{{"Thread Id":{os_pid},'
                    f'"Mode":"ACL_OP","level":"acl","id":"{i}","item_id":"0","connection_id":{i}}}}},\n'
                    f'{{"ph":"X","name":"aclnn{kname}_{kname}AiCore_{kname}","pid":{hw},"tid":2,'
                    f'"ts":"{_ts(kts)}","dur":{kdur},"args":{{"Model Id":4294967295,'
                    f'"Task Type":"{ktype}","Physic Stream Id":2,"Task Id":{i},"Batch Id":0,'
                    f'"Subtask Id":4294967295,"connection_id":{i}}}}},\n'
                    f'{{"ph":"s","bp":"e","name":"torch_to_npu","id":"{int(kts * 1000)}",'
                    f'"pid":{os_pid},"tid":{os_pid},"ts":"{_ts(t)}","cat":"async_npu"}},\n'
                    f'{{"ph":"f","bp":"e","name":"torch_to_npu","id":"{int(kts * 1000)}",'
                    f'"pid":{hw},"tid":2,"ts":"{_ts(kts)}","cat":"async_npu"}},\n')
                kernels.append([step, dev, f"aclnn{kname}_{kname}AiCore_{kname}", kname, ktype,
                                _ts(kts) + "\t", kdur, round(rnd.uniform(0, 3), 3),
                                rnd.choice((8, 20, 40)), shape, "FLOAT", "ND"])
                agg = operators.setdefault((op, shape), [0.0, 0.0, 0.0, 0.0])
                agg[0] += dur / 2
                agg[1] += dur
                agg[2] += kdur
                agg[3] += kdur
                comp += kdur
                if i % 4 == 0:
                    size = rnd.choice((256, 1024, 4096, 16384))
                    alloc_mb += size / 1024
                    opmem.append([op, size, _ts(t) + "\t", _ts(t + 300) + "\t", 300,
                                  round(alloc_mb, 3), round(alloc_mb * 1.5, 3),
                                  round(alloc_mb - size / 1024, 3), round(alloc_mb * 1.5, 3),
                                  f"NPU:{dev}"])
                    memrec.append(["PTA", _ts(t) + "\t", round(alloc_mb, 3),
                                   round(alloc_mb * 1.5, 3), round(alloc_mb, 3), f"NPU:{dev}"])
                    alloc_mb -= size / 1024
                    if i % 40 == 0:
                        buf.append(f'{{"ph":"C","name":"APP/HBM","pid":{mem},"tid":0,'
                                   f'"ts":"{_ts(t)}","args":{{"KB":{alloc_mb * 1024:.1f}}}}},\n')
                t += dur + 2
            fh.write("".join(buf))
            fh.write(f'{{"ph":"X","name":"ProfilerStep#{step}","pid":{os_pid},"tid":{os_pid},'
                     f'"ts":"{_ts(step_start)}","dur":{round(t - step_start, 3)},'
                     f'"cat":"cpu_op","args":{{}}}},\n')
            total = t - step_start
            steps.append([step, round(comp, 3), 0, 0, 0, round(total - comp, 3), round(total, 3), 0,
                          0, 0])
        fh.write('{"ph":"M","name":"process_name","pid":%d,"tid":0,"args":{"name":"end"}}\n]\n'
                 % (os_pid + 1))

    def wcsv(name, header, rows):
        with open(os.path.join(d, name), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)

    wcsv("kernel_details.csv",
         ["Step Id", "Device_id", "Name", "Type", "Accelerator Core", "Start Time(us)",
          "Duration(us)", "Wait Time(us)", "Block Dim", "Input Shapes", "Input Data Types",
          "Input Formats"], kernels)
    wcsv("operator_details.csv",
         ["Name", "Input Shapes", "Call Stack", "Host Self Duration(us)",
          "Host Total Duration(us)", "Device Self Duration(us)", "Device Total Duration(us)",
          "Device Self Duration With AICore(us)", "Device Total Duration With AICore(us)"],
         [[n, s, "train.py(10): step;\r\nmodel.py(5): forward;\r\n", round(a[0], 3),
           round(a[1], 3), round(a[2], 3), round(a[3], 3), round(a[2], 3), round(a[3], 3)]
          for (n, s), a in operators.items()])
    wcsv("operator_memory.csv",
         ["Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Duration(us)",
          "Allocation Total Allocated(MB)", "Allocation Total Reserved(MB)",
          "Release Total Allocated(MB)", "Release Total Reserved(MB)", "Device Type"], opmem)
    wcsv("memory_record.csv",
         ["Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)",
          "Total Active(MB)", "Device Type"], memrec)
    wcsv("step_trace_time.csv",
         ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication",
          "Free", "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)",
          "Preparing"], steps)
    return span_dir


def generate(out: str, ranks: int = 1, spans: int = 1, trace_mb: float = 8.0,
             run: str = "run") -> str:
    run_dir = os.path.join(out, run)
    for r in range(ranks):
        for s in range(spans):
            write_span(run_dir, f"node0_{1000 + r}", r, 1700000000000 + s * 1000, trace_mb, seed=s)
    return run_dir


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--spans", type=int, default=1)
    ap.add_argument("--trace-mb", type=float, default=8.0)
    ap.add_argument("--run", default="run")
    a = ap.parse_args(argv)
    print(generate(a.out, a.ranks, a.spans, a.trace_mb, a.run))


if __name__ == "__main__":
    main()
