"""Profile the timeline stage in-process (no TensorBoard): `build_entry` (stage 1) for the
first span of LOGDIR, then `build_trace` (stage 2: trace tables + index), `build_advice`
(stage 3: the advice and dispatch documents), then the first viewport as TensorBoard's
process would answer it. Prints wall time and peak RSS per stage; `--rss` adds the peak RSS per innermost tb_plugin function. Under py-spy:

    py-spy record -o trace.svg -- /work/venv/bin/python benchmarks/profile_trace.py LOGDIR
    CACHE=/tmp/x python benchmarks/profile_trace.py LOGDIR --rss   # keep/reuse stage 1
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_load import RssTimeline, rss_mb  # noqa: E402


def main(logdir: str) -> None:
    from tb_plugin import discovery
    from tb_plugin.analysis import trace as trace_view
    from tb_plugin.cache import ProfileCache, entry_key, open_profile
    from tb_plugin.loading import build_advice, build_entry, build_trace

    cache = ProfileCache(os.environ.get("CACHE") or tempfile.mkdtemp(prefix="npu-prof-trace-"))
    runs, _ = discovery.discover(os.path.abspath(logdir))
    span = next(s for r in runs.values() for s in r.spans())
    key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
    t = time.time()
    build_entry(span, cache.root, key)
    print(f"stage 1 (views): {time.time() - t:.2f}s, peak RSS so far {rss_mb():.0f} MB")
    t = time.time()
    build_trace(span, cache.root, key)
    print(f"stage 2 (trace + index): {time.time() - t:.2f}s, peak RSS so far {rss_mb():.0f} MB")
    t = time.time()
    build_advice(span, cache.root, key)
    print(f"stage 3 (advice + dispatch, after the timeline is served): {time.time() - t:.2f}s, "
          f"peak RSS so far {rss_mb():.0f} MB")
    entry = cache.entry_dir(key)
    prof = open_profile(entry)
    print("rows:", {k: v for k, v in prof.rows.items() if k.startswith(("slices", "flows", "trace_"))})
    t = time.time()
    idx = trace_view.index_for(prof, key)
    m = idx.meta
    idx.viewport(int(m["start_ns"]), int(m["end_ns"]) + 1, 1600, None)
    with open("/proc/self/statm") as fh:
        cur = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    print(f"open index + first viewport: {time.time() - t:.2f}s, RSS now {cur:.0f} MB")
    print(f"cache entry: {entry}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--rss"]
    timeline = RssTimeline() if "--rss" in sys.argv else None
    main(args[0])
    if timeline:
        timeline.report()
