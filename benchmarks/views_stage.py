"""The views stage (stage 1, `build_entry`) of every span of LOGDIR, in-process, timed.

    PYTHONPATH=CODE python benchmarks/views_stage.py LOGDIR [LOGDIR ...] [--repeat 3] [--cache DIR]

Imports are done before the clock starts and frozen out of the collector, as in a reader
process (which pays them once, not per span).
Each repeat builds every span into a fresh temporary cache; the best repeat's wall time
(total and per span) and its CPU time are printed. `--cache DIR` builds once into DIR and
keeps it (what `views_equal.py` compares). The code measured is whatever `tb_plugin`
PYTHONPATH names (the script does not put its own checkout on the path, so one copy of it
measures any checkout).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import time

from scratch import scratch_dir  # (benchmarks/: caches where a user's are)


def build_all(logdirs: list[str], cache_dir: str) -> list[tuple[str, float, float]]:
    """[(span root, wall s, CPU s)] of `build_entry` for every span of the logdirs."""
    from tb_plugin import discovery
    from tb_plugin.cache import ProfileCache, entry_key
    from tb_plugin.loading import build_entry

    cache = ProfileCache(cache_dir)
    out = []
    spans = [s for logdir in logdirs
             for r in discovery.discover(os.path.abspath(logdir))[0].values() for s in r.spans()]
    for span in spans:
        key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
        wall, cpu = time.perf_counter(), time.process_time()
        build_entry(span, cache.root, key)
        out.append((span.root, time.perf_counter() - wall, time.process_time() - cpu))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logdir", nargs="+")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cache", help="build once into this directory and keep it")
    ap.add_argument("--json", action="store_true", help="print one JSON line of the results")
    args = ap.parse_args()
    import tb_plugin.analysis.derive  # noqa: F401  (imports before the clock)
    import tb_plugin.loading.build  # noqa: F401
    import tb_plugin.readers  # noqa: F401
    from tb_plugin.readers import msprof, torch_npu  # noqa: F401

    # As a reader process does (loading/build.py prepare_reader_process): the imports are
    # frozen out of the collector's walks, so a span's gc.collect costs what it would there.
    gc.collect()
    gc.freeze()

    if args.cache:
        results = [build_all(args.logdir, args.cache)]
    else:
        results = []
        for _ in range(args.repeat):
            scratch = scratch_dir("npu-prof-views-")
            try:
                results.append(build_all(args.logdir, scratch))
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    best = min(results, key=lambda r: sum(w for _, w, _ in r))
    totals = [round(sum(w for _, w, _ in r), 3) for r in results]
    wall = sum(w for _, w, _ in best)
    cpu = sum(c for _, _, c in best)
    n = len(best)
    doc = {"logdirs": args.logdir, "code": os.path.dirname(os.path.dirname(
        os.path.abspath(sys.modules["tb_plugin"].__file__))), "spans": n,
        "best_wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
        "per_span_s": round(wall / max(n, 1), 4), "all_wall_s": totals}
    if args.json:
        print(json.dumps(doc))
    else:
        print(f"{doc['code']}: {n} span(s), best of {len(results)}: {wall:.2f}s wall"
              f" ({wall / max(n, 1) * 1000:.0f} ms/span), {cpu:.2f}s CPU; all: {totals}")


if __name__ == "__main__":
    main()
