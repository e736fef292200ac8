"""Benchmark: trace decoding throughput per core (issue 13), and wall time with the file
decoded in parallel ranges.

    python benchmarks/parse_bench.py                       # 60 MB torch_npu + kineto traces
    python benchmarks/parse_bench.py --trace-mb 300 --repeat 3 --workers 1 2
    python benchmarks/parse_bench.py --file some/trace_view.json

For each trace: `trace_json.read_trace` (args to a side file, as the readers call it; the
kineto trace with the kineto reader's extracted args) in a fresh process per measurement.
"per core" is MB / CPU seconds of that process with one decoding process (`time.process_time`,
so other load on the machine matters less than for wall time); with N workers the wall time
and the CPU of the parent are shown. The best of --repeat runs is reported (the machine is
shared). Data: generated once by fixtures/generate.py into benchmarks/data/parse-* (gitignored).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

_CHILD = r"""
import json, os, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from tb_plugin.readers import kineto, trace_json
path, workers = sys.argv[2], int(sys.argv[3])
kw = dict(extract_args=kineto.EXTRACT, extract_for=kineto._extract_for) \
    if ".pt.trace.json" in path else {}
if __name__ == "__main__":
    out = tempfile.mkdtemp(prefix="parse-bench-")
    wall, cpu = time.time(), time.process_time()
    tt = trace_json.read_trace(path, args_path=os.path.join(out, "args.arrow"),
                               tmp_dir=out, decode_workers=workers, **kw)
    print(json.dumps({"wall": time.time() - wall, "cpu": time.process_time() - cpu,
                      "events": tt.event_count, "slices": len(tt.slices),
                      "ranges": tt.decode_ranges}))
"""


def ensure_trace(producer: str, mb: float) -> str:
    out = os.path.join(HERE, "data", f"parse-{producer}-{mb:g}mb")
    pattern = "**/trace_view.json" if producer == "torch_npu" else "**/*.pt.trace.json"
    hits = glob.glob(os.path.join(out, pattern), recursive=True)
    if not hits:
        subprocess.run([sys.executable, os.path.join(ROOT, "fixtures", "generate.py"), "--out",
                        out, "--large", "--trace-mb", str(mb), "--producer", producer],
                       check=True, stdout=subprocess.DEVNULL)
        hits = glob.glob(os.path.join(out, pattern), recursive=True)
    return max(hits, key=os.path.getsize)


def measure(path: str, workers: int) -> dict:
    r = subprocess.run([sys.executable, "-c", _CHILD, ROOT, path, str(workers)],
                       capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace-mb", type=float, default=60)
    ap.add_argument("--file", action="append", help="a trace file to measure (repeatable)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    a = ap.parse_args()
    files = a.file or [ensure_trace("torch_npu", a.trace_mb), ensure_trace("kineto", a.trace_mb)]
    print(f"load average before: {os.getloadavg()[0]:.1f}; rev "
          + subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip())
    print("| trace | MB | events | workers | wall s | CPU s (this process) | MB/s per core | ranges |")
    print("|---|---|---|---|---|---|---|---|")
    for path in files:
        mb = os.path.getsize(path) / 1e6
        for w in a.workers:
            runs = [measure(path, w) for _ in range(a.repeat)]
            best = min(runs, key=lambda r: r["wall"] if w > 1 else r["cpu"])
            per_core = f"{mb / best['cpu']:.1f}" if w == 1 else "-"
            print(f"| {os.path.relpath(path, ROOT)} | {mb:.1f} | {best['events']:,} | {w} | "
                  f"{best['wall']:.2f} | {best['cpu']:.2f} | {per_core} | {best['ranges']} |",
                  flush=True)


if __name__ == "__main__":
    main()
