"""Profile our loading path for one logdir in-process (no TensorBoard): discovery, then
`build_entry` (reader + derive + cache write) for each span, then first use of every route's
analysis. Prints per-phase wall time and peak RSS. Run under py-spy for a flame graph:

    py-spy record -o prof.svg -- /work/venv/bin/python benchmarks/profile_load.py LOGDIR

`--rss` adds the peak RSS reached inside each tb_plugin function (sampled every 0.05 s).
"""
from __future__ import annotations

import os
import resource
import sys
import tempfile
import time


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class RssTimeline:
    """Samples this process' RSS every 0.05 s with the innermost tb_plugin frame of the main
    thread, so the peak can be attributed to a phase (`--rss`)."""

    def __init__(self):
        import threading
        self.samples: list[tuple[float, float, str]] = []
        self._halt = threading.Event()
        self._main = threading.main_thread().ident
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _where(self) -> str:
        frame = sys._current_frames().get(self._main)
        where = "?"
        while frame is not None:
            f = frame.f_code.co_filename
            if "tb_plugin" in f:
                where = f"{os.path.basename(f)}:{frame.f_code.co_name}"
                break
            frame = frame.f_back
        return where

    def _run(self):
        t0 = time.time()
        while not self._halt.is_set():
            with open("/proc/self/statm") as fh:
                rss = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1048576
            self.samples.append((time.time() - t0, rss, self._where()))
            self._halt.wait(0.05)

    def report(self):
        self._halt.set()
        self._thread.join()
        by_where: dict[str, float] = {}
        for _, rss, w in self.samples:
            by_where[w] = max(by_where.get(w, 0), rss)
        print("peak RSS by innermost tb_plugin function (MB):")
        for w, m in sorted(by_where.items(), key=lambda kv: -kv[1])[:12]:
            print(f"  {m:7.0f}  {w}")


def main(logdir: str) -> None:
    from tb_plugin import discovery
    from tb_plugin.cache import ProfileCache, entry_key
    from tb_plugin.loading import build_entry
    from tb_plugin.analysis import kernels, memory, operators, overview

    cache = ProfileCache(tempfile.mkdtemp(prefix="npu-prof-profile-"))
    t = time.time()
    runs, _ = discovery.discover(os.path.abspath(logdir))
    print(f"discover: {time.time() - t:.2f}s")
    for run in runs.values():
        for span in run.spans():
            key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
            t = time.time()
            build_entry(span, cache.root, key)
            print(f"build_entry {span.worker}/{span.span}: {time.time() - t:.2f}s, "
                  f"peak RSS so far {rss_mb():.0f} MB")
            prof = cache.load(key)
            t = time.time()
            overview.steps(prof)
            kernels.table(prof, "name", None)
            operators.table(prof, "name")
            memory.summary(prof, max_points=2000)
            print(f"  routes (first use, from cache): {time.time() - t:.2f}s")
    print(f"peak RSS {rss_mb():.0f} MB")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--rss"]
    timeline = RssTimeline() if "--rss" in sys.argv else None
    main(args[0])
    if timeline:
        timeline.report()
