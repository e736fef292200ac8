"""Resident memory of a reader process around the load stages of one span, per Arrow pool.

    python benchmarks/reader_memory.py LOGDIR [--pools jemalloc,mimalloc] [--repeat 2]
    python benchmarks/reader_memory.py benchmarks/data/A-fixtures-300mb

Each measurement is a fresh interpreter set up as a reader is (`import_and_freeze`, then the
pool: `use_reader_memory_pool`, or `$ARROW_DEFAULT_MEMORY_POOL` for another pool) that builds
the first span of LOGDIR into a temporary cache: views (`build_entry`), timeline
(`build_trace`), advice (`build_advice`). It prints the process' RSS after each stage and
again after `--idle` seconds of doing nothing (what a reader holds while it waits for the next
span), its peak RSS (VmHWM) and CPU time. Pools alternate, so the machine's state is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

_CHILD = r"""
import json, os, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
from tb_plugin.loading import build
build.import_and_freeze()
pool = build.use_reader_memory_pool()
from tb_plugin import discovery
from tb_plugin.cache import ProfileCache, entry_key

def status(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) // 1024
    return None

runs, _ = discovery.discover(os.path.abspath(sys.argv[2]))
span = [s for r in runs.values() for s in r.spans()][0]
cache = ProfileCache(tempfile.mkdtemp(prefix="npu-prof-reader-memory-"))
key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
out = {"pool": pool, "start_mb": status("VmRSS")}
cpu = time.process_time()
for stage, fn in (("views", build.build_entry), ("timeline", build.build_trace),
                  ("advice", build.build_advice)):
    fn(span, cache.root, key)
    out[f"after_{stage}_mb"] = status("VmRSS")
out["cpu_s"] = round(time.process_time() - cpu, 2)
time.sleep(float(sys.argv[3]))
out["idle_mb"] = status("VmRSS")
out["peak_mb"] = status("VmHWM")
import shutil
shutil.rmtree(cache.root, ignore_errors=True)
print(json.dumps(out))
"""


def measure(logdir: str, pool: str, idle: float) -> dict:
    env = dict(os.environ)
    env.pop("ARROW_DEFAULT_MEMORY_POOL", None)
    if pool != "jemalloc":  # the readers' own choice; any other pool through Arrow's variable
        env["ARROW_DEFAULT_MEMORY_POOL"] = pool
    r = subprocess.run([sys.executable, "-c", _CHILD, ROOT, logdir, str(idle)], env=env,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("logdir")
    ap.add_argument("--pools", default="jemalloc,mimalloc")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--idle", type=float, default=2.0)
    a = ap.parse_args(argv)
    print("pool      start  views  timeline  advice  idle   peak (MB)   CPU s")
    for _ in range(a.repeat):
        for pool in a.pools.split(","):
            m = measure(a.logdir, pool, a.idle)
            print(f"{m['pool']:9} {m['start_mb']:5}  {m['after_views_mb']:5}  "
                  f"{m['after_timeline_mb']:8}  {m['after_advice_mb']:6}  {m['idle_mb']:5}  "
                  f"{m['peak_mb']:5}       {m['cpu_s']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
