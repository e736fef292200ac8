"""Benchmark: what our plugin adds to every TensorBoard start.

    python benchmarks/tb_start.py                 # 5 starts each, on fixtures/
    python benchmarks/tb_start.py --repeat 9 --root /path/to/other/checkout

Starts TensorBoard on 127.0.0.1 (a fresh NPU_PROFILER_CACHE_DIR each time) and measures,
from the process start: the first answer of TensorBoard itself (`/data/environment`), and
with our plugin the first `/data/plugin/npu_profiler/runs` that lists runs. The baseline is
the same TensorBoard with only its own plugins (`default.get_static_plugins()`), started the
same way, alternating with ours. `--root` puts another checkout's `tb_plugin` first on the
path (to compare revisions in the same minutes). Medians of --repeat starts.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

from scratch import scratch_dir  # (benchmarks/: caches where a user's are)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

_CHILD = r"""
import sys
from tensorboard import default, program
plugins = default.get_static_plugins()
if sys.argv[1] == "ours":
    plugins += default.get_dynamic_plugins()
tb = program.TensorBoard(plugins=plugins)
tb.configure(argv=[None, "--logdir", sys.argv[2], "--host", "127.0.0.1", "--port", sys.argv[3]])
tb.main()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status, r.read()
    except Exception:
        return None, b""


def start_once(mode: str, logdir: str, root: str | None, timeout: float = 60) -> dict:
    port = _free_port()
    env = dict(os.environ, NPU_PROFILER_CACHE_DIR=scratch_dir("tb-start-"))
    if root:
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.time()
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, mode, logdir, str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    out: dict = {}
    try:
        while time.time() - t0 < timeout:
            if "first_answer_s" not in out and _get(base + "/data/environment")[0] == 200:
                out["first_answer_s"] = round(time.time() - t0, 3)
                if mode != "ours":
                    break
            if "first_answer_s" in out:
                status, body = _get(base + "/data/plugin/npu_profiler/runs")
                if status == 200 and json.loads(body).get("runs"):
                    out["runs_listed_s"] = round(time.time() - t0, 3)
                    break
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logdir", default=os.path.join(ROOT, "fixtures"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--root", action="append", default=[],
                    help="a checkout whose tb_plugin is measured (repeatable: alternated)")
    a = ap.parse_args(argv)
    roots = a.root or [None]
    sys.path.insert(0, HERE)
    from run import ensure_bytecode  # as installed: with its bytecode (see there)
    for r in roots:
        ensure_bytecode(r or ROOT)
    rows: dict[tuple, list[dict]] = {("tensorboard", None): []}
    rows.update({("ours", r): [] for r in roots})
    for _ in range(a.repeat):
        for mode, root in rows:
            rows[mode, root].append(start_once(mode, a.logdir, root))
    print("| TensorBoard with | first answer s (median) | our runs listed s (median) | n |")
    print("|---|---|---|---|")
    for (mode, root), got in rows.items():
        label = "its own plugins" if mode == "tensorboard" else \
            "+ npu_profiler" + (f" ({root})" if root else "")
        first = [r["first_answer_s"] for r in got if "first_answer_s" in r]
        listed = [r["runs_listed_s"] for r in got if "runs_listed_s" in r]
        med = (lambda v: f"{statistics.median(v):.2f}" if v else "-")
        print(f"| {label} | {med(first)} | {med(listed)} | {len(first)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
