#!/usr/bin/env python3
"""Benchmark: the kernel counter analysis on a synthetic kernels table (in process).

    PYTHONPATH=. python benchmarks/kernel_counters_bench.py [--rows 1000000] [--names 2000]

Builds `rows` kernel calls over `names` kernel names with the 14 PipeUtilization ratio
columns (aic_* and aiv_*, 5% NaN as if N/A), then times `kernel_counters.table` (what the
/kernels route adds), `kernel_counters.table_with_counters` and one kernel's per-call distribution
(/kernels/pmu). Wall times, best of `--repeat`.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tb_plugin.analysis import kernel_counters as kc  # noqa: E402
from tb_plugin.model import Profile  # noqa: E402


def synthetic(rows: int, names: int) -> Profile:
    rng = np.random.default_rng(1)
    labels = np.array([f"kernel_{i}" for i in range(names)])
    cores = np.array(["AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "AI_CPU"])
    df = pd.DataFrame({
        "name": labels[rng.integers(0, names, rows)], "type": "T",
        "core_type": cores[rng.integers(0, 4, rows)], "start_ns": np.arange(rows) * 1000,
        "dur_ns": rng.integers(1000, 100000, rows), "wait_ns": 0,
        "block_dim": rng.integers(1, 64, rows)})
    for core in ("aic", "aiv"):
        for pipe in ("mac", "vec", "scalar", "mte1", "mte2", "mte3", "fixpipe"):
            v = rng.random(rows)
            v[rng.random(rows) < 0.05] = np.nan
            df[f"pmu_{core}_{pipe}_ratio"] = v
    p = Profile(meta={"device": "npu", "producer": "torch_npu", "ai_core_num": 24,
                      "aiv_num": 48})
    p.set("kernels", df, keep_extra=True)
    return p


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--names", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    p = synthetic(a.rows, a.names)
    cases = [("kernel_counters.table", lambda: kc.table(p)),
             ("kernel_counters.table_with_counters", lambda: kc.table_with_counters(p)),
             ("one kernel's distribution", lambda: kc.distribution(kc.call_rows(p, "kernel_7")))]
    print(f"{a.rows:,} calls, {a.names:,} names, load average {os.getloadavg()[0]:.1f}")
    for label, fn in cases:
        best = float("inf")
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        print(f"{label:32s} {best:7.3f} s")


if __name__ == "__main__":
    main()
