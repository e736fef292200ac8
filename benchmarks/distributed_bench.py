#!/usr/bin/env python3
"""Benchmark: a generated N-rank torch_npu run until its distributed view answers, cold
(empty cache) with the local reader pool, cold with a Dask LocalCluster, and warm (restart
on the same cache).

    .venv/bin/python benchmarks/distributed_bench.py [--ranks 64] [--trace-mb 10]
        [--dask-workers 2] [--no-record]
    .venv/bin/python benchmarks/distributed_bench.py --ranks 1024 --trace-mb 0.3 --layers 2

Data is generated once into benchmarks/data/dist{ranks}/ (planted straggler rank 5).
*Time* is wall time from starting `tensorboard` until `/distributed?run=...` answers 200
(polled every 0.5 s; 503 = still loading). *TB memory* is the peak RSS of the tensorboard
process itself (readers and Dask workers are other processes), sampled every 0.5 s. The
same cold load is also timed through the `Loader` alone (no TensorBoard, same reader pool,
same 2 s rescans), so that ranks/s through TensorBoard and through the Loader stand side by
side: a gap between them is TensorBoard's (or the harness') doing. The result is appended
to docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import json

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tests.tb_server import TensorBoard  # noqa: E402
from scratch import scratch_dir  # noqa: E402  (benchmarks/: caches where a user's are)


def ensure_data(ranks: int, trace_mb: float, layers: int | None) -> str:
    out = os.path.join(HERE, "data", f"dist{ranks}" + (f"-{trace_mb:g}mb" if ranks > 64 else ""))
    run = os.path.join(out, "run")
    if not os.path.isdir(run) or len(os.listdir(run)) < ranks:
        shutil.rmtree(run, ignore_errors=True)
        cmd = [sys.executable, os.path.join(ROOT, "fixtures", "generate.py"), "--out", run,
               "--ranks", str(ranks), "--trace-mb", str(trace_mb), "--straggler", "5"]
        if layers:
            cmd += ["--layers", str(layers)]
        subprocess.run(cmd, check=True)
    return out


def size_mb(path: str) -> tuple[float, float]:
    total, trace = 0, 0
    for d, _, files in os.walk(path):
        for f in files:
            s = os.path.getsize(os.path.join(d, f))
            total += s
            if f == "trace_view.json":
                trace = max(trace, s)
    return total / 2**20, trace / 2**20


def time_until_ready(logdir: str, cache: str, timeout: float = 3600,
                     scheduler: str | None = None) -> tuple[float, dict, float]:
    """(seconds until the distributed view answered, its answer, TB peak RSS in MB)."""
    import psutil

    t0 = time.time()
    env = {"NPU_PROFILER_DASK_SCHEDULER": scheduler} if scheduler else None
    tb = TensorBoard(logdir, cache_dir=cache, extra_env=env).start(timeout=120)
    peak = 0
    try:
        proc = psutil.Process(tb.proc.pid)
        url = f"{tb.api}/distributed?run=run&rank_limit=8"
        while time.time() - t0 < timeout:
            peak = max(peak, proc.memory_info().rss)
            try:
                with urllib.request.urlopen(url, timeout=600) as resp:
                    body = json.loads(resp.read())
                    peak = max(peak, proc.memory_info().rss)
                    return time.time() - t0, body, peak / 2**20
            except urllib.error.HTTPError as e:
                if e.code not in (503, 404):
                    raise
            time.sleep(0.5)
        raise RuntimeError("timeout")
    finally:
        tb.stop()


def loader_until_views(logdir: str, cache: str, timeout: float = 3600) -> tuple[float, int]:
    """(seconds until every span's views are loaded through the Loader alone, span count)."""
    from tb_plugin.cache import ProfileCache
    from tb_plugin.loading import Loader

    t0 = time.time()
    loader = Loader(os.path.abspath(logdir), cache=ProfileCache(cache), poll_seconds=2)
    loader.start()
    try:
        loader.wait_scanned(timeout)
        while time.time() - t0 < timeout:
            states = [st for run in loader.runs() for st in loader.span_states(run.name)]
            if states and all(st.views_done for st in states):
                return time.time() - t0, len(states)
            time.sleep(0.5)
        raise RuntimeError("timeout")
    finally:
        loader.stop(terminate_readers=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--trace-mb", type=float, default=10)
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--dask-workers", type=int, default=2,
                    help="workers of the LocalCluster run (0: skip it)")
    ap.add_argument("--no-loader", action="store_true",
                    help="skip the cold load through the Loader alone")
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args(argv)
    logdir = ensure_data(a.ranks, a.trace_mb, a.layers)
    total, trace = size_mb(logdir)
    cache = scratch_dir("dist-bench-cache-")
    dask_cold = dask_rss = loader_cold = None
    try:
        load = os.getloadavg()[0]
        if not a.no_loader:
            loader_cold, _ = loader_until_views(logdir, cache)
            shutil.rmtree(cache, ignore_errors=True)
        cold, body, cold_rss = time_until_ready(logdir, cache)
        warm, body2, warm_rss = time_until_ready(logdir, cache)
        if a.dask_workers:
            from distributed import LocalCluster

            shutil.rmtree(cache, ignore_errors=True)
            with LocalCluster(n_workers=a.dask_workers, threads_per_worker=1,
                              host="127.0.0.1", dashboard_address=None) as lc:
                dask_cold, _, dask_rss = time_until_ready(logdir, cache,
                                                          scheduler=lc.scheduler_address)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    finding = next((f["message"] for f in body.get("findings", []) if f["kind"] == "straggler"),
                   "no straggler found")
    lines = [
        "",
        f"## Distributed view, {a.ranks} ranks ({datetime.datetime.now():%Y-%m-%d %H:%M}, "
        f"{_git()})",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}; load average "
        f"(1 min) before: {load:.1f}. Harness: `benchmarks/distributed_bench.py`.",
        f"Data: generated torch_npu run, {a.ranks} ranks x 1 span, {total:.0f} MB in total, "
        f"trace_view.json {trace:.1f} MB per rank, planted straggler rank 5.",
        "Time: from starting `tensorboard` until `/distributed?run=run` answers 200 "
        "(every rank parsed, per-rank summaries computed, findings ready).",
        "",
        "| scenario | time | TB peak RSS | per rank | ranks/s | target |",
        "|---|---|---|---|---|---|",
        f"| cold, local reader pool | {cold:.1f} s | {cold_rss:.0f} MB | "
        f"{cold / a.ranks * 1000:.0f} ms | {a.ranks / cold:.2f} | |",
    ]
    if loader_cold is not None:
        lines.append(f"| cold, the Loader alone (no TensorBoard; every rank's views) | "
                     f"{loader_cold:.1f} s | | {loader_cold / a.ranks * 1000:.0f} ms | "
                     f"{a.ranks / loader_cold:.2f} | TensorBoard within 1.2x: "
                     f"{'met' if cold <= 1.2 * loader_cold else 'NOT met'} |")
    if dask_cold is not None:
        lines.append(f"| cold, Dask LocalCluster ({a.dask_workers} workers) | {dask_cold:.1f} s | "
                     f"{dask_rss:.0f} MB | {dask_cold / a.ranks * 1000:.0f} ms | "
                     f"{a.ranks / dask_cold:.2f} | |")
    lines += [
        f"| warm restart (cache) | {warm:.1f} s | {warm_rss:.0f} MB | "
        f"{warm / a.ranks * 1000:.1f} ms | {a.ranks / warm:.0f} | "
        f"≤ 5 s: {'met' if warm <= 5 else 'NOT met'} |",
        "",
        f"Finding reported: {finding}",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not a.no_record:
        with open(os.path.join(ROOT, "docs", "benchmarks.md"), "a", encoding="utf-8") as fh:
            fh.write(text)
    return 0


def _git() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True).stdout.strip()
    except OSError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
