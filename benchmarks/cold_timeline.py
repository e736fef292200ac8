"""Where a cold load's wall time goes: TensorBoard's start, the plugin's, the readers' and
the cache entries on one time axis.

    python benchmarks/cold_timeline.py [LOGDIR] [--repeat 3]

Starts TensorBoard (benchmarks/.ours-venv, as `run.py` does) on LOGDIR (default: scenario
B's data) with a fresh cache, through a small launcher that runs `tensorboard.main.run_main`
after wrapping a few functions to note when they run (seconds from the launch, on stderr):
the plugin's `fix_flags` (loading starts), its constructor, TensorBoard's zipping of its own
web files (`CorePlugin.get_resource_apps`), each reader process started, the first and last
span sent to the readers. Meanwhile this process notes when `/runs` first answers and when
each cache entry appears (every 10 ms), and at the end prints the events in time order
(those noted in TensorBoard with its process' CPU seconds so far) and the CPU seconds of
every process of the tree (TensorBoard, fork server, readers).

The wrapping only notes times; what runs is the installed plugin unchanged. Use it to see
which phase a change moves (docs/benchmarks.md, nineteenth session); the harness (`run.py`)
stays the measure of record.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as R  # noqa: E402  (the harness: its venv, ports and HTTP helper)

# Runs in TensorBoard's interpreter: note when the wrapped functions run, then start
# TensorBoard as its `tensorboard` command does.
_LAUNCHER = r"""
import os, sys, time
T0 = float(os.environ["NPU_TIMELINE_T0"])

def note(what):
    sys.stderr.write(f"@timeline {time.time() - T0:.3f} {what}"
                     f" (TensorBoard's CPU {time.process_time():.2f} s)\n")
    sys.stderr.flush()

def around(owner, name, before, after=None):
    fn = getattr(owner, name)
    def wrapper(*args, **kwargs):
        note(before)
        try:
            return fn(*args, **kwargs)
        finally:
            if after:
                note(after)
    setattr(owner, name, wrapper)

# What the installed .pth does for the `tensorboard` command (this launcher is `python -c`):
sys.argv = ["tensorboard", *sys.argv[1:]]
from tb_plugin import prestart
if prestart.start() is not None:
    note("fork server being started (prestart)")
from tensorboard.main import run_main
note("TensorBoard imported")
from tensorboard.plugins.core import core_plugin
from tb_plugin import plugin
from tb_plugin.loading import pool
around(plugin.NpuProfilerLoader, "fix_flags", "fix_flags: loading starts")
around(plugin.NpuProfilerPlugin, "__init__", "plugin constructor", "plugin constructed")
around(core_plugin.CorePlugin, "get_resource_apps", "TensorBoard zips its web files",
       "TensorBoard's web files zipped")
around(pool._ReaderProcesses, "_spawn_process", "reader process requested",
       "reader process started")
submit = pool.ReaderPool.submit
sent = []
def counted_submit(self, fn, *args):
    if getattr(fn, "__name__", "") == "build_entry":
        sent.append(1)
        if len(sent) == 1:
            note("first span sent to the readers")
        elif len(sent) == int(os.environ["NPU_TIMELINE_SPANS"]):
            note("last span sent to the readers")
    return submit(self, fn, *args)
pool.ReaderPool.submit = counted_submit
run_main()
"""


def _spans(logdir: str) -> int:
    from tb_plugin import discovery

    runs, _ = discovery.discover(os.path.abspath(logdir))
    return sum(len(r.spans()) for r in runs.values())


def _role(p, tensorboard_pid: int) -> str:
    """What a process of TensorBoard's tree is, from its command line (a reader is forked
    from the fork server, so it has the server's)."""
    if p.pid == tensorboard_pid:
        return "TensorBoard"
    line = " ".join(p.cmdline())
    if "forkserver" in line:
        return "reader" if "forkserver" in " ".join(p.parent().cmdline()) else "fork server"
    if "resource_tracker" in line:
        return "resource tracker"
    if "data_server" in line or "--reload" in line:
        return "TensorBoard's data server"
    return "process"


def one_run(logdir: str, spans: int, timeout: float) -> tuple[list, dict]:
    import psutil

    python = os.path.join(os.path.dirname(R.ours_tensorboard()), "python")
    port = R.free_port()
    cache = R.bench_cache_root()  # (where a user's cache is: run.py)
    t0 = time.time()
    env = dict(os.environ, NPU_PROFILER_CACHE_DIR=cache, NPU_TIMELINE_T0=repr(t0),
               NPU_TIMELINE_SPANS=str(spans))
    proc = subprocess.Popen([python, "-c", _LAUNCHER, "--logdir", os.path.abspath(logdir),
                             "--host", "127.0.0.1", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    api = f"http://127.0.0.1:{port}/data/plugin/npu_profiler"
    events, entries, answered = [], 0, False
    tree = psutil.Process(proc.pid)
    cpu: dict = {}
    try:
        while time.time() - t0 < timeout and proc.poll() is None:
            now = time.time() - t0
            n = len(glob.glob(os.path.join(cache, "v*", "*", "*", "meta.json")))
            if n != entries:
                entries = n
                events.append((now, f"cache entries: {n} of {spans}"))
            if not answered and R.get(f"{api}/runs", timeout=5)[0] == 200:
                answered = True
                events.append((time.time() - t0, "/runs answers"))
            if answered and entries >= spans:
                break
            time.sleep(0.01)
        for p in [tree, *tree.children(recursive=True)]:
            try:
                c = p.cpu_times()
                cpu[f"{_role(p, tree.pid)} {p.pid}"] = round(c.user + c.system, 2)
            except psutil.Error:
                pass
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        shutil.rmtree(cache, ignore_errors=True)
    for line in err.splitlines():
        if line.startswith("@timeline "):
            _, at, what = line.split(" ", 2)
            events.append((float(at), what))
    return sorted(events), cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logdir", nargs="?", default=os.path.join(HERE, "data", "B-fixtures-8mb"))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    if not os.path.isdir(a.logdir):
        sys.exit(f"{a.logdir}: no such directory (run.py --scenario B makes B's data)")
    R.ensure_bytecode()
    spans = _spans(a.logdir)
    for i in range(a.repeat):
        R.settle()
        events, cpu = one_run(a.logdir, spans, a.timeout)
        print(f"run {i + 1} of {a.repeat}: {spans} spans of {a.logdir}")
        for at, what in events:
            print(f"  {at:6.2f} s  {what}")
        print(f"  CPU seconds: {cpu} (sum {sum(cpu.values()):.2f})")


if __name__ == "__main__":
    main()
