"""Per-profile fixed cost: CPU time of each load stage per span, measured where it runs, in
one spawned reader process (as the local pool runs it), over the first N spans of LOGDIR.

    .venv/bin/python benchmarks/fixed_cost.py LOGDIR [--spans 40] [--views-only]
    .venv/bin/python benchmarks/fixed_cost.py benchmarks/data/dist1024-0.3mb --spans 40

CPU time (`time.process_time` of the reader process), so the load of a shared machine
matters little. The first span is reported apart: it pays the reader process' imports.
`--cprofile FILE` writes a cProfile of the spans after the first (for `pstats`).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing
import os
import statistics
import sys

from scratch import scratch_dir  # (benchmarks/: caches where a user's are)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def measure(logdir: str, spans: int, views_only: bool, cprofile: str | None) -> dict:
    """Runs in the reader process: [(views CPU s, trace CPU s)] per span."""
    import time

    from tb_plugin import discovery
    from tb_plugin.cache import ProfileCache, entry_key
    from tb_plugin.loading import build_advice, build_entry, build_trace

    scratch = scratch_dir("npu-prof-fixed-cost-")
    cache = ProfileCache(scratch)
    runs, _ = discovery.discover(os.path.abspath(logdir))
    chosen = [s for r in runs.values() for s in r.spans()][:spans]
    prof = None
    out = []
    for i, span in enumerate(chosen):
        if i == 1 and cprofile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
        t = time.process_time()
        build_entry(span, cache.root, key)
        views = time.process_time() - t
        trace = 0.0
        if not views_only:
            t = time.process_time()
            build_trace(span, cache.root, key)
            build_advice(span, cache.root, key)
            trace = time.process_time() - t
        out.append((views, trace))
    if prof is not None:
        prof.disable()
        prof.dump_stats(cprofile)
    return {"stages": out, "cache": scratch}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("logdir")
    ap.add_argument("--spans", type=int, default=40)
    ap.add_argument("--views-only", action="store_true")
    ap.add_argument("--cprofile", default=None)
    a = ap.parse_args(argv)
    with cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
        res = ex.submit(measure, a.logdir, a.spans, a.views_only, a.cprofile).result()
    import shutil

    shutil.rmtree(res["cache"], ignore_errors=True)
    stages = res["stages"]
    first, rest = stages[0], stages[1:] or stages
    views = [v * 1000 for v, _ in rest]
    trace = [t * 1000 for _, t in rest]
    print(f"spans: {len(stages)} of {a.logdir}")
    print(f"first span (with the process' imports): views {first[0] * 1000:.0f} ms, "
          f"timeline {first[1] * 1000:.0f} ms CPU")
    print(f"each further span, CPU ms: views median {statistics.median(views):.0f} "
          f"(mean {statistics.mean(views):.0f}), timeline median {statistics.median(trace):.0f} "
          f"(mean {statistics.mean(trace):.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
