"""Benchmark: the trace timeline at scale (cold/warm time to the first painted timeline,
viewport latency and size, backend peak RSS, browser JS heap), with the peer's load time on
the same data in the same run.

    python benchmarks/trace_bench.py --trace-mb 1000            # generates benchmarks/data/T-fixtures-1000mb
    python benchmarks/trace_bench.py --trace-mb 300 --peer      # + peer (torch-tb-profiler-ascend)
    python benchmarks/trace_bench.py --logdir DIR --no-browser --no-doc

Cold = fresh NPU_PROFILER_CACHE_DIR, TensorBoard started, until `trace/tracks` answered and the
first `trace/viewport` (whole trace, 1600 px) answered (API), and separately until chromium
painted the timeline (browser). Warm = the same with the cache left by the cold run.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run as R  # noqa: E402  (the harness: peer install, RSS sampler, helpers)
from tests.process_group import stop_group  # noqa: E402


def q(**kw) -> str:
    return urllib.parse.urlencode({k: v for k, v in kw.items() if v is not None})


def start_ours(logdir: str, cache: str):
    port = R.free_port()
    env = dict(os.environ, NPU_PROFILER_CACHE_DIR=cache)
    log = open(os.path.join(R.RESULTS, f"tb-trace-{port}.log"), "wb")
    proc = subprocess.Popen([R.ours_tensorboard(), "--logdir", logdir, "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, f"http://127.0.0.1:{port}", log


def stop(proc, log):
    stop_group(proc, timeout=20)
    log.close()


def first_timeline(base: str, t0: float, timeout: float) -> dict:
    api = f"{base}/data/plugin/npu_profiler"
    prof = None
    out: dict = {}
    while time.time() - t0 < timeout:
        if prof is None:
            code, runs = R.get(f"{api}/runs", timeout=5)
            if code != 200 or not runs.get("runs"):
                time.sleep(0.2)
                continue
            run = runs["runs"][0]["name"]
            code, info = R.get(f"{api}/run?" + q(run=run), timeout=30)
            if code != 200 or not info.get("workers"):
                time.sleep(0.2)
                continue
            w = info["workers"][0]
            prof = {"run": run, "worker": w["name"], "span": w["spans"][0]}
        code, tr = R.get(f"{api}/trace/tracks?" + q(**prof), timeout=60)
        if code != 200:
            time.sleep(0.2)
            continue
        out["tracks_s"] = round(time.time() - t0, 2)
        code, vp = R.get(f"{api}/trace/viewport?" + q(start_us=tr["start_us"], end_us=tr["end_us"] + 1,
                                                    width_px=1600, **prof), timeout=60)
        if code == 200:
            out["first_viewport_s"] = round(time.time() - t0, 2)
            out["profile"] = prof
            out["tracks"] = tr
            return out
        time.sleep(0.2)
    out["error"] = "timeout"
    return out


def viewport_stats(base: str, prof: dict, tr: dict, n: int) -> dict:
    import urllib.request
    api = f"{base}/data/plugin/npu_profiler"
    s0, s1 = tr["start_us"], tr["end_us"]
    rnd = random.Random(7)
    times, sizes = [], []
    for i in range(n):
        span = (s1 - s0) * 10 ** rnd.uniform(-6, 0)
        a = s0 + rnd.random() * max(s1 - s0 - span, 0)
        url = f"{api}/trace/viewport?" + q(start_us=a, end_us=a + span, width_px=rnd.choice([800, 1600, 2400]), **prof)
        t = time.perf_counter()
        with urllib.request.urlopen(url, timeout=60) as resp:
            body = resp.read()
        times.append(time.perf_counter() - t)
        sizes.append(len(body))
    times.sort()
    return {"n": n, "p50_ms": round(times[n // 2] * 1000, 1), "p95_ms": round(times[int(n * 0.95)] * 1000, 1),
            "max_ms": round(times[-1] * 1000, 1), "max_kb": round(max(sizes) / 1024, 1),
            "median_kb": round(sorted(sizes)[n // 2] / 1024, 1)}


def browser_paint(base: str, prof: dict, t0: float | None = None, browse: bool = True) -> dict:
    from playwright.sync_api import sync_playwright
    url = f"{base}/data/plugin_entry.html?name=npu_profiler#" + q(view="trace", **prof)
    out = {}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--enable-precise-memory-info"])
        page = b.new_page(viewport={"width": 1600, "height": 900})
        page.set_default_timeout(600000)
        start = time.time()
        page.goto(url)
        page.wait_for_function("() => { const c = document.querySelector('[data-testid=trace-canvas]');"
                               " return c && Number(c.dataset.painted) > 0; }", timeout=600000, polling=100)
        out["page_to_paint_s"] = round(time.time() - start, 2)
        if t0 is not None:
            out["cold_to_paint_s"] = round(time.time() - t0, 2)
        if browse:
            canvas = page.get_by_test_id("trace-canvas")
            box = canvas.bounding_box()
            page.mouse.move(box["x"] + 900, box["y"] + 200)
            peak = 0
            for k in range(40):
                page.mouse.wheel(0, -400 if k < 25 else 600)
                page.wait_for_timeout(120)
                if k % 5 == 0:
                    peak = max(peak, page.evaluate("() => performance.memory.usedJSHeapSize"))
            canvas.focus()
            for key in "ddddddaaaaaa":
                page.keyboard.press(key)
                page.wait_for_timeout(120)
            page.get_by_test_id("trace-search").fill("matmul")
            page.get_by_test_id("trace-search").press("Enter")
            page.wait_for_timeout(2000)
            page.get_by_test_id("trace-fit").click()
            page.wait_for_timeout(1500)
            peak = max(peak, page.evaluate("() => performance.memory.usedJSHeapSize"))
            out["js_heap_peak_mb"] = round(peak / 2**20, 1)
        b.close()
    return out


def run_ours(logdir: str, cache: str, label: str, timeout: float, browser: bool, viewports: int) -> dict:
    proc, base, log = start_ours(logdir, cache)
    sampler = R.MemorySampler(proc.pid)
    sampler.start()
    t0 = time.time()
    try:
        res = first_timeline(base, t0, timeout)
        if browser and "profile" in res:
            res.update(browser_paint(base, res["profile"], t0, browse=False))
        res["peak_rss_load_mb"] = round(sampler.peak / 2**20, 1)
        if viewports and "profile" in res:
            res["viewport"] = viewport_stats(base, res["profile"], res["tracks"], viewports)
        if browser and "profile" in res and label == "cold":
            res["browse"] = browser_paint(base, res["profile"], None, browse=True)
        sampler.sample()
        res["peak_rss_mb"] = round(sampler.peak / 2**20, 1)
    finally:
        sampler.stop()
        stop(proc, log)
    res.pop("tracks", None)
    R.log(f"{label}: {json.dumps(res)}")
    return res


def user_paint(logdir: str, cache: str, timeout: float) -> dict:
    """The user's path: chromium is already open; TensorBoard starts; the timeline page is
    opened as soon as TensorBoard names the profile (its views and timeline still loading);
    seconds from TensorBoard's start until the page has painted the timeline. Includes
    the UI's own waiting (its polls or held requests) and excludes chromium's start."""
    from playwright.sync_api import sync_playwright
    out: dict = {}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                              args=["--no-sandbox", "--disable-gpu"])
        page = b.new_page(viewport={"width": 1600, "height": 900})
        page.set_default_timeout(int(timeout * 1000))
        proc, base, log = start_ours(logdir, cache)
        t0 = time.time()
        try:
            api = f"{base}/data/plugin/npu_profiler"
            prof = None
            while prof is None and time.time() - t0 < timeout:
                code, runs = R.get(f"{api}/runs", timeout=5)
                if code == 200 and runs.get("runs"):
                    run = runs["runs"][0]["name"]
                    code, info = R.get(f"{api}/run?" + q(run=run), timeout=30)
                    if code == 200 and info.get("workers"):
                        w = info["workers"][0]
                        prof = {"run": run, "worker": w["name"], "span": w["spans"][0]}
                        break
                time.sleep(0.05)
            out["page_opened_s"] = round(time.time() - t0, 2)
            # When the timeline is served (a light 503 poll beside the page): the paint
            # minus this is what the UI itself adds.
            served: list[float] = []

            def watch():
                while not served and time.time() - t0 < timeout:
                    code, _ = R.get(f"{api}/trace/tracks?" + q(**prof), timeout=60)
                    if code == 200:
                        served.append(time.time() - t0)
                    else:
                        time.sleep(0.1)
            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            page.goto(f"{base}/data/plugin_entry.html?name=npu_profiler#" + q(view="trace", **prof))
            page.wait_for_function("() => { const c = document.querySelector('[data-testid=trace-canvas]');"
                                   " return c && Number(c.dataset.painted) > 0; }",
                                   timeout=int(timeout * 1000), polling=50)
            out["user_paint_s"] = round(time.time() - t0, 2)
            watcher.join(timeout=60)
            if served:
                out["tracks_served_s"] = round(served[0], 2)
                out["ui_adds_s"] = round(out["user_paint_s"] - served[0], 2)
        finally:
            stop(proc, log)
            b.close()
    R.log(f"user: {json.dumps(out)}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace-mb", type=int, default=1000)
    ap.add_argument("--logdir")
    ap.add_argument("--peer", action="store_true", help="also time the peer loading the run")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--viewports", type=int, default=300)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--user", type=int, default=0, metavar="N",
                    help="also N rounds of the user's path (page open from the start, fresh cache)")
    ap.add_argument("--only-user", action="store_true", help="only the user's path rounds")
    a = ap.parse_args()
    R.ensure_bytecode()
    os.makedirs(R.RESULTS, exist_ok=True)
    logdir = a.logdir
    if not logdir:
        logdir = os.path.join(HERE, "data", f"T-fixtures-{a.trace_mb}mb")
        if not os.path.isdir(logdir):
            subprocess.run([sys.executable, os.path.join(ROOT, "fixtures", "generate.py"), "--out", logdir,
                            "--large", "--trace-mb", str(a.trace_mb)], check=True)
    sizes = R._trace_sizes(logdir)
    # Results named by the trace measured (a --logdir's, not --trace-mb's default).
    label_mb = round(max(sizes)) if sizes else a.trace_mb
    report = {"logdir": os.path.relpath(logdir, ROOT), "trace_mb": [round(s) for s in sizes],
              "machine": R.machine(), "rev": R.our_git_rev()}
    # Each run's cache is removed when it is done: a 1 GB trace's entry is 1.1 GB, and a
    # session of alternated runs once filled the disk with them.
    if a.only_user:
        a.no_doc = True
    else:
        with tempfile.TemporaryDirectory(prefix="npu-trace-bench-") as cache:
            report["cold"] = run_ours(logdir, cache, "cold", a.timeout, not a.no_browser,
                                      a.viewports)
            report["warm"] = run_ours(logdir, cache, "warm", a.timeout, not a.no_browser, 0)
    if a.user:
        report["user"] = []
        for _ in range(a.user):
            with tempfile.TemporaryDirectory(prefix="npu-trace-user-") as cache:
                report["user"].append(user_paint(logdir, cache, a.timeout))
    if a.peer:
        site = R.ensure_peer()
        report["peer"] = R.measure(R.Peer(site), logdir, a.timeout, f"trace-peer-{label_mb}")
        report["peer_version"] = R.peer_version()
    path = os.path.join(R.RESULTS, f"trace-{label_mb}mb-{int(time.time())}.json")
    with open(path, "w") as fh:
        json.dump(report, fh, indent=1)
    R.log(f"wrote {path}")
    if not a.no_doc:
        write_doc(report)
    return 0


def write_doc(r: dict) -> None:
    c, w = r["cold"], r["warm"]
    users = [u["user_paint_s"] for u in r.get("user", []) if "user_paint_s" in u]
    vp = c.get("viewport", {})
    lines = [f"\n### Trace timeline, {r['trace_mb']} MB trace ({time.strftime('%Y-%m-%d')}, rev {r['rev']})\n",
             f"Data: `{r['logdir']}`; machine: {r['machine']['nproc']} cores, {r['machine']['ram_gb']} GB. "
             "Ours: cold = empty cache; times from TensorBoard start.\n",
             "| measure | ours | peer |", "|---|---|---|",
             f"| cold: trace/tracks answered | {c.get('tracks_s')} s | |",
             f"| cold: first trace/viewport answered (API) | {c.get('first_viewport_s')} s | |",
             f"| cold: timeline painted in chromium | {c.get('cold_to_paint_s', '-')} s | |"]
    if users:
        lines.append(f"| cold, the user's path (page open from the start): painted | "
                     f"{' / '.join(f'{u} s' for u in users)} | |")
    if "peer" in r:
        p = r["peer"]
        lines.append(f"| peer: run loaded (all routes answered) | | {p.get('seconds')} s"
                     f"{' (' + p['error'] + ')' if p.get('error') else ''}, peak {p.get('peak_rss_mb')} MB |")
        if c.get("cold_to_paint_s") and p.get("ok"):
            lines.append(f"| speed-up (peer load / our cold paint) | {p['seconds'] / c['cold_to_paint_s']:.1f}x | |")
        if users and p.get("ok"):
            lines.append(f"| speed-up (peer load / the user's path, best) | {p['seconds'] / min(users):.1f}x | |")
    lines += [f"| backend peak RSS while loading (process tree) | {c.get('peak_rss_load_mb')} MB | |",
              f"| backend peak RSS incl. viewport queries | {c.get('peak_rss_mb')} MB | |",
              f"| warm restart: first viewport (API) | {w.get('first_viewport_s')} s | |",
              f"| warm restart: timeline painted | {w.get('cold_to_paint_s', '-')} s | |",
              f"| viewport latency over {vp.get('n')} random zooms (client-measured, localhost) | "
              f"p50 {vp.get('p50_ms')} ms, p95 {vp.get('p95_ms')} ms, max {vp.get('max_ms')} ms | |",
              f"| viewport response size | median {vp.get('median_kb')} KB, max {vp.get('max_kb')} KB | |",
              f"| chromium JS heap while browsing (zoom, pan, search, fit) | {c.get('browse', {}).get('js_heap_peak_mb', '-')} MB | |",
              ""]
    with open(os.path.join(ROOT, "docs", "benchmarks.md"), "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
