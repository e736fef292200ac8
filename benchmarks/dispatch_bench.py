"""Benchmark: the host dispatch analysis (analysis/dispatch.py `document`) on a large
generated torch_npu trace: wall time and peak RSS of the computation alone (the trace is read
first, as the reader process has it after the timeline stage).

    python benchmarks/dispatch_bench.py --trace-mb 100      # generates benchmarks/data/D-<mb>mb
    python benchmarks/dispatch_bench.py --logdir DIR         # any logdir (first span)

Not a test: numbers go to stdout (one JSON line).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace-mb", type=float, default=100.0)
    ap.add_argument("--logdir")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    logdir = a.logdir
    if not logdir:
        logdir = os.path.join(HERE, "data", f"D-{a.trace_mb:g}mb")
        if not os.path.isdir(logdir):
            subprocess.run([sys.executable, os.path.join(ROOT, "fixtures", "generate.py"),
                            "--large", "--trace-mb", str(a.trace_mb), "--out", logdir], check=True)
    from tb_plugin import discovery, readers
    from tb_plugin.analysis import derive, dispatch

    runs, _ = discovery.discover(logdir)
    span = next(s for r in runs.values() for s in r.spans())
    t = time.perf_counter()
    prof = readers.read(span, None, stage="all")
    derive.complete(prof)
    read_s = time.perf_counter() - t
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        doc = dispatch.document(prof)
        times.append(time.perf_counter() - t)
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"logdir": logdir, "slices": len(prof.table("slices")),
                      "flows": len(prof.table("flows")), "calls": doc["summary"]["calls"],
                      "launches": doc["summary"]["launches"], "read_s": round(read_s, 2),
                      "dispatch_s": sorted(times)[len(times) // 2],
                      "peak_rss_growth_mb": round((rss1 - rss0) / 1024, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
