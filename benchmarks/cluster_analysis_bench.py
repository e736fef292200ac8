#!/usr/bin/env python3
"""Benchmark: a msprof-analyze `cluster_analysis_output/` of N ranks, in-process and through
a real `tensorboard` until `/distributed` answers.

    python benchmarks/cluster_analysis_bench.py [--ranks 256] [--steps 50] [--no-tb]

Data: fixtures/cluster_analysis (4 ranks, 2 steps) widened to N ranks and S steps by
copying its rank entries under new rank ids and step numbers (the shapes msprof-analyze
writes), into a temp dir. Reported: file sizes; discovery (cold, then memoised); reading
one rank (parses the JSON files), then every rank in the same process (the parsed files
are memoised per process); and, unless --no-tb, wall time from starting tensorboard to
the first 200 of `/distributed`. Prints a table; nothing is asserted.
"""
from __future__ import annotations

import argparse
import copy
import csv
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.error

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tb_plugin import discovery as D  # noqa: E402
from tb_plugin.readers import read  # noqa: E402

SRC = os.path.join(ROOT, "fixtures", "cluster_analysis", "cluster_analysis_output")


def widen(dest: str, ranks: int, steps: int) -> None:
    os.makedirs(dest)
    with open(os.path.join(SRC, "cluster_step_trace_time.csv"), newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    head, body = rows[0], [r for r in rows[1:] if r[1] == "rank"]
    with open(os.path.join(dest, "cluster_step_trace_time.csv"), "w", newline="",
              encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        for s in range(steps):
            for r in range(ranks):
                src = body[(r % 4) * 2 + s % 2]
                w.writerow([str(s)] + ["rank", str(r)] + src[3:])
    for name in ("cluster_communication.json", "cluster_communication_matrix.json"):
        with open(os.path.join(SRC, name), encoding="utf-8") as fh:
            doc = json.load(fh)
        (_, step_docs), = doc.items()
        first = next(iter(step_docs.values()))
        out_steps = {}
        for s in range(steps):
            ops = {}
            for key, per in first.items():
                if name == "cluster_communication.json":
                    ops[key] = {str(r): copy.deepcopy(per[str(r % 4)]) for r in range(ranks)}
                else:
                    links = {}
                    for r in range(ranks):
                        for link, v in per.items():
                            a, b = (int(x) for x in link.split("-"))
                            if a == r % 4:
                                links[f"{r}-{(r + (b - a)) % ranks}"] = v
                    ops[key] = links
            out_steps[f"step{s}"] = ops
        with open(os.path.join(dest, name), "w", encoding="utf-8") as fh:
            json.dump({str(tuple(range(ranks))): out_steps}, fh)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--no-tb", action="store_true")
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="cluster-bench-")
    try:
        out = os.path.join(tmp, "job", "cluster_analysis_output")
        widen(out, a.ranks, a.steps)
        sizes = {n: os.path.getsize(os.path.join(out, n)) / 2 ** 20 for n in os.listdir(out)}
        t0 = time.perf_counter()
        runs, _ = D.discover(tmp)
        t_disc = time.perf_counter() - t0
        t0 = time.perf_counter()
        D.discover(tmp)
        t_disc2 = time.perf_counter() - t0
        run = runs["job/cluster_analysis_output"]
        workers = run.sorted_workers()
        t0 = time.perf_counter()
        read(workers[0].spans[D.CLUSTER_SPAN])
        t_one = time.perf_counter() - t0
        t0 = time.perf_counter()
        for w in workers[1:]:
            read(w.spans[D.CLUSTER_SPAN])
        t_rest = (time.perf_counter() - t0) / max(1, len(workers) - 1)
        print(f"ranks {a.ranks}, steps {a.steps}; files (MiB): "
              + ", ".join(f"{n} {s:.1f}" for n, s in sorted(sizes.items())))
        print(f"| discovery cold | {t_disc:.2f} s |\n| discovery memoised | {t_disc2:.3f} s |")
        print(f"| first rank read (parses the JSON) | {t_one:.2f} s |")
        print(f"| each further rank, same process | {t_rest * 1000:.1f} ms |")
        if not a.no_tb:
            from tests.tb_server import TensorBoard

            tb = TensorBoard(tmp)
            t0 = time.perf_counter()
            tb.start()
            try:
                while True:
                    try:
                        tb.get("distributed", run="job/cluster_analysis_output")
                        break
                    except urllib.error.HTTPError as exc:
                        if exc.code != 503 and exc.code != 404:
                            raise
                        time.sleep(0.5)
                print(f"| tensorboard start -> /distributed 200 | "
                      f"{time.perf_counter() - t0:.1f} s |")
            finally:
                tb.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
