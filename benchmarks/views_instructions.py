"""Instructions the views stage executes per span: a measure that does not move with the
machine's load, for changes too small for wall or CPU time to show.

    python benchmarks/views_instructions.py LOGDIR [--code CHECKOUT ...] [--spans 4]

On this shared 2-core machine the views stage's CPU time moves by ±10-15 % between runs of
the same code (other tenants, steal time), so a 3-5 % change needs dozens of runs to see.
The count of instructions does not: this runs `build_entry` (the views stage, as a reader
process runs it: imports done and frozen first, one span built before counting) of the
first N spans of LOGDIR under valgrind's callgrind with counting switched on only around
the builds (`callgrind_control -i on|off` from inside), once per checkout given (each on
PYTHONPATH, in its own process, side by side), with PYTHONHASHSEED=0, and prints millions of
instructions per span. It counts instructions, not time: page faults, system calls and
cache misses are not in it (measure those with `getrusage`: `ru_minflt`, `ru_stime`).
Needs valgrind (`apt-get install valgrind`); ~50 s per checkout for 4 spans of scenario B.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _inner(code: str, logdir: str, spans: int) -> None:
    """Runs under valgrind: build the spans with counting on around them only."""
    sys.path.insert(0, code)
    import shutil

    from tb_plugin import discovery
    from tb_plugin.cache import ProfileCache
    from tb_plugin.loading import build

    build.import_and_freeze()
    if hasattr(build, "use_reader_memory_pool"):
        build.use_reader_memory_pool()
    runs, _ = discovery.discover(os.path.abspath(logdir))
    chosen = [s for r in runs.values() for s in r.spans()][:spans]
    cache = ProfileCache(tempfile.mkdtemp(prefix="npu-prof-instr-"))
    try:
        build.build_entry(chosen[0], cache.root, "warm-up")  # first-use costs not counted
        control = ["callgrind_control", "-i"]
        subprocess.run([*control, "on", str(os.getpid())], stdout=subprocess.DEVNULL)
        for i, span in enumerate(chosen):
            build.build_entry(span, cache.root, f"span-{i}")
        subprocess.run([*control, "off", str(os.getpid())], stdout=subprocess.DEVNULL)
    finally:
        shutil.rmtree(cache.root, ignore_errors=True)
    print(f"SPANS {len(chosen)}")


def measure(code: str, logdir: str, spans: int) -> tuple[float, int]:
    """(millions of instructions per span, spans) of `code`'s views stage."""
    out_file = tempfile.mktemp(prefix="callgrind-")
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": os.path.abspath(code)}
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                           f"--callgrind-out-file={out_file}", sys.executable, __file__,
                           "--inner", logdir, "--code", code, "--spans", str(spans)],
                          env=env, capture_output=True, text=True)
    try:
        os.remove(out_file)
    except OSError:
        pass
    collected = re.search(r"Collected\s*:\s*(\d+)", proc.stderr)
    built = re.search(r"SPANS (\d+)", proc.stdout)
    if proc.returncode != 0 or not collected or not built:
        raise RuntimeError(f"valgrind run of {code} failed:\n{proc.stderr[-2000:]}")
    n = int(built.group(1))
    return int(collected.group(1)) / 1e6 / n, n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logdir")
    ap.add_argument("--code", action="append", help="a checkout (default: this one)")
    ap.add_argument("--spans", type=int, default=4)
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    codes = args.code or [os.path.dirname(HERE)]
    if args.inner:
        _inner(codes[0], args.logdir, args.spans)
        return 0
    with cf.ThreadPoolExecutor(max_workers=min(2, len(codes))) as ex:
        results = list(ex.map(lambda c: measure(c, args.logdir, args.spans), codes))
    for code, (per_span, n) in zip(codes, results):
        print(f"{code}: {per_span:.0f} M instructions per span ({n} spans)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
