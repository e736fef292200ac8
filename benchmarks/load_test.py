"""Load test: many concurrent clients over every route of several runs, one of them large and
still loading, against a real TensorBoard (`tests/tb_server.py`).

    python benchmarks/load_test.py                       # 50 clients x 60 s, 300 MB run
    python benchmarks/load_test.py --clients 20 --seconds 20 --trace-mb 0   # no large run
    python benchmarks/load_test.py --large-dir /tmp/big  # reuse a generated large run
    python benchmarks/load_test.py --doc                 # append the figures to docs/benchmarks.md

Data: a copy of every fixture run under `fixtures/` plus, unless `--trace-mb 0`, one run
`large` made by `fixtures/generate.py --large --trace-mb N` in a temporary directory.
TensorBoard starts with an empty cache; once every fixture run is ready (views and
timeline), `large` is moved into the logdir and the clients start while it loads, so its
requests answer 503 at first and real data later (the request pool is rebuilt when its state
changes).
Reported per route class: requests, 5xx (the 503 "still loading" answers apart), other
non-2xx, p50/p95/p99 latency (client-side, localhost); the TensorBoard process tree's RSS (reader processes included) at the start,
its maximum and at the end. Goal: zero 5xx, p95 <= 300 ms for answers asked before (every
class except `loading:*`), memory bounded.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.load import driver  # noqa: E402
from tests.tb_server import FIXTURES, TensorBoard, get_json  # noqa: E402

P95_GOAL_MS = 300


def make_logdir(dest: str, staging: str, trace_mb: int, large_dir: str | None) -> str | None:
    """Copy the fixture runs to dest; prepare the large run in `staging` (moved into the
    logdir later, so that it is loading while the clients run); its path or None."""
    for name in sorted(os.listdir(FIXTURES)):
        src = os.path.join(FIXTURES, name)
        if os.path.isdir(src) and not name.startswith(("_", ".")):
            shutil.copytree(src, os.path.join(dest, name), symlinks=True)
    if not trace_mb and not large_dir:
        return None
    target = os.path.join(staging, "large")
    if large_dir:
        shutil.copytree(large_dir, target, symlinks=True)
    else:
        t = time.time()
        subprocess.run([sys.executable, os.path.join(ROOT, "fixtures", "generate.py"), "--large",
                        "--trace-mb", str(trace_mb), "--out", target], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"generated the {trace_mb} MB run in {time.time() - t:.0f} s")
    return target


def wait_ready_except(tb: TensorBoard, skip: set[str], timeout: float = 600) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        data = get_json(f"{tb.api}/runs")
        others = [r for r in data["runs"] if r["name"] not in skip]
        if data.get("scanned") and others and all(
                r["state"] != "loading" and r.get("trace_state") != "loading" for r in others):
            return data
        time.sleep(0.5)
    raise RuntimeError("fixture runs still loading")


def run_state(tb: TensorBoard, name: str) -> tuple[str, str]:
    for r in get_json(f"{tb.api}/runs")["runs"]:
        if r["name"] == name:
            return r["state"], r.get("trace_state", "")
    return "absent", ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--trace-mb", type=int, default=300, help="0: no large run")
    ap.add_argument("--large-dir", help="a run made by fixtures/generate.py --large, reused")
    ap.add_argument("--doc", action="store_true", help="append to docs/benchmarks.md")
    ap.add_argument("--note", default="")
    a = ap.parse_args(argv)

    work = tempfile.mkdtemp(prefix="npu-load-")
    logdir = os.path.join(work, "logdir")
    os.makedirs(logdir)
    tb = None
    try:
        staged = make_logdir(logdir, work, a.trace_mb, a.large_dir)
        large = "large" if staged else None
        tb = TensorBoard(logdir).start()
        t0 = time.time()
        wait_ready_except(tb, set())
        print(f"fixture runs ready after {time.time() - t0:.1f} s")
        if staged:
            os.rename(staged, os.path.join(logdir, large))  # appears at the next scan
            while run_state(tb, large)[0] == "absent":
                time.sleep(0.2)
        state = run_state(tb, large) if large else ("", "")
        pool = driver.build_requests("127.0.0.1", tb.port, {large} if large and
                                     state != ("ready", "ready") else set())
        seen = [state]

        def refresh():
            now = run_state(tb, large)
            if now == seen[0]:
                return None
            seen[0] = now
            print(f"  large run now {now} (t={time.time() - t0:.0f} s); request pool rebuilt")
            return driver.build_requests("127.0.0.1", tb.port,
                                         set() if now == ("ready", "ready") else {large})

        classes = sorted({r.route_class for r in pool})
        print(f"{len(pool)} distinct requests in {len(classes)} classes; large run {state};"
              f" {a.clients} clients for {a.seconds:.0f} s")
        res = driver.hammer("127.0.0.1", tb.port, pool, a.clients, a.seconds,
                            server_pid=tb.proc.pid, refresh=refresh if large else None)
        end_state = run_state(tb, large) if large else ("", "")
    finally:
        if tb is not None:
            tb.stop()
        shutil.rmtree(work, ignore_errors=True)

    rss = [m for _, m in res.rss_mb]
    report = driver.table(res)
    goal = []
    for cls, lat in sorted(res.by_class.items()):
        if cls.startswith("loading:"):
            continue
        p95 = driver.percentile(lat, 95) * 1000
        goal.append(f"{cls} {'met' if p95 <= P95_GOAL_MS else 'NOT met'} ({p95:.0f} ms)")
    rate = res.requests / res.seconds if res.seconds else 0
    summary = (f"{res.requests} requests in {res.seconds:.0f} s ({rate:.0f}/s), {a.clients}"
               f" clients, {res.count_5xx()} 5xx (503 still loading not counted); large run"
               f" at the start {state}, at the end {end_state}\nserver RSS (process tree) start {rss[0]:.0f} MB, max"
               f" {max(rss):.0f} MB, end {rss[-1]:.0f} MB\np95 <= {P95_GOAL_MS} ms: "
               + "; ".join(goal))
    print(report)
    print(summary)
    for cls, path, status, body in res.errors[:20]:
        print(f"5xx {cls} {status} {path}: {body[:200]}")
    if a.doc:
        _append_doc(a, report, summary)
    return 1 if res.count_5xx() else 0


def _append_doc(a, report: str, summary: str) -> None:
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
    except OSError:
        rev = "?"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    stamp = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M")
    text = (f"\n### Load test ({stamp} UTC, {rev}, `benchmarks/load_test.py --clients"
            f" {a.clients} --seconds {a.seconds:.0f} --trace-mb {a.trace_mb}`)\n\n"
            f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}; load"
            f" average (1 min) at the end: {load:.1f}. {a.note}\n\n{report}\n\n"
            + summary.replace("\n", "\n\n") + "\n")
    with open(os.path.join(ROOT, "docs", "benchmarks.md"), "a", encoding="utf-8") as fh:
        fh.write(text)


if __name__ == "__main__":
    sys.exit(main())
