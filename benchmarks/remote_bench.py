"""Remote logdir costs, against moto's S3 server on loopback (no timing in tests: run by
hand). A synthetic bucket of SPANS torch_npu-shaped spans (FILES objects each, plus raw
data under FRAMEWORK/ that the listing must prune) is listed into a fresh mirror (first
scan: stubs, and the heads of JSON files), listed again unchanged (a poll), and one span's
objects are fetched. Prints one line per measurement.

    python benchmarks/remote_bench.py [--spans 200] [--raw 20]
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.remote.s3_server import S3Server  # noqa: E402
from tb_plugin import discovery, storage  # noqa: E402

CSV = ["kernel_details.csv", "operator_details.csv", "step_trace_time.csv", "op_statistic.csv",
       "memory_record.csv", "operator_memory.csv", "npu_module_mem.csv", "api_statistic.csv"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spans", type=int, default=200)
    ap.add_argument("--raw", type=int, default=20, help="raw objects per span (pruned)")
    args = ap.parse_args()
    s3 = S3Server().start()
    try:
        s3.make_bucket("bench")
        client = s3.client()
        keys = []
        for i in range(args.spans):
            span = f"job/run{i % 10}/node_{i}_20240601000000000_ascend_pt"
            keys += [(f"{span}/ASCEND_PROFILER_OUTPUT/{n}", 200_000) for n in CSV]
            keys += [(f"{span}/ASCEND_PROFILER_OUTPUT/trace_view.json", 300_000),
                     (f"{span}/profiler_info_{i}.json", 200)]
            keys += [(f"{span}/FRAMEWORK/raw{j}.bin", 1000) for j in range(args.raw)]
        t = time.time()
        with cf.ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda kv: client.put_object(Bucket="bench", Key=kv[0],
                                                       Body=b"{" + b" " * (kv[1] - 1)), keys))
        print(f"uploaded {len(keys)} objects in {time.time() - t:.1f} s")
        os.environ.update(s3.env())
        with tempfile.TemporaryDirectory() as cache:
            src = storage.open_logdir("s3://bench/job", cache)
            t = time.time()
            src.sync(discovery.remote_descend)
            first = time.time() - t
            stubs = sum(len(f) for _, _, f in os.walk(src.path))
            print(f"first scan: {first:.2f} s, {stubs} stubs"
                  f" ({args.spans * args.raw} raw objects pruned)")
            t = time.time()
            src.sync(discovery.remote_descend)
            print(f"poll (nothing changed): {time.time() - t:.2f} s")
            span = os.path.join(src.path, "run0", "node_0_20240601000000000_ascend_pt")
            t = time.time()
            storage.materialize(src.path, [span])
            print(f"fetch one span ({len(CSV) + 2} objects, 1.9 MB): {time.time() - t:.2f} s")
            t = time.time()
            storage.materialize(src.path, [span])
            print(f"fetch it again (already local): {time.time() - t:.3f} s")
    finally:
        s3.stop()


if __name__ == "__main__":
    main()
