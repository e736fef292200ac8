"""Start the readers' fork server as the `tensorboard` command starts, before TensorBoard
has imported itself: run from a `.pth` line this package installs
(`prestart.pth`, installed as `PTH_NAME`), which Python's `site` runs at every
interpreter start of the environment and which imports this module only when the command
looks like TensorBoard's.

Why: TensorBoard imports its own modules for ~0.35 s on one core before it loads any
plugin; only then did the plugin start the fork server (spawned.py), whose imports (~0.3 s)
every reader waits for. Started here, those imports run on the core TensorBoard's import
leaves idle, and the readers begin ~0.3 s sooner (8 ranks x 2 spans, scenario B:
docs/benchmarks.md, twenty-second session). The plugin later asks for readers exactly as
before and finds the server running (multiprocessing has one fork server per interpreter);
when this did not run (an editable install without the line, `NPU_PROFILER_PRESTART=0`,
another command), the plugin starts it as before.

Also, unless the user chose a BLAS thread count, TensorBoard's process gets one OpenBLAS
thread: NumPy's OpenBLAS starts a thread per core at import and they spin for ~0.1 s of
CPU, on the core the fork server now imports on; TensorBoard multiplies no matrices (the
readers already run with one, reader_preload.py).

Everything here is best effort: it never raises into the interpreter's start, and the
checks made at every interpreter start (the .pth line) are a string test on its
arguments.
"""
from __future__ import annotations

import ntpath
import os
import sys
import threading
import time

PRESTART_ENV = "NPU_PROFILER_PRESTART"  # "0": leave the fork server to the plugin
PTH_NAME = "tensorboard_plugin_npu_profiler-prestart.pth"  # as installed in site-packages
# Its one line (setup.py installs it under PTH_NAME): `site` runs a .pth line that starts
# with "import". The line's test on the command is a substring one, so that only a command
# naming TensorBoard imports this module; `is_tensorboard_server` decides.
PTH_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prestart.pth")

# TensorBoard's flags after which it prints and exits, serving nothing.
_NO_SERVER_FLAGS = ("--help", "-h", "--helpfull", "--helpshort", "--version_tb",
                    "--inspect")
_BLAS_THREAD_ENVS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
SITE_DONE_WAIT_S = 10.0  # how long the starter waits for the interpreter to finish `site`

_started = False


def is_tensorboard_server(argv: list[str], orig_argv: list[str] | None = None,
                          environ=os.environ) -> bool:
    """Whether the interpreter runs TensorBoard to serve a logdir this plugin will read:
    the `tensorboard` command (or `python -m tensorboard[.main]`) with --logdir /
    --logdir_spec (or $NPU_PROFILER_LOGDIR), not one that only prints (--help,
    --version_tb, --inspect)."""
    if not argv:
        return False
    script = ntpath.basename(argv[0]).lower()  # (either separator: the Windows launcher's)
    for suffix in (".exe", "-script.py", ".py"):
        script = script[:-len(suffix)] if script.endswith(suffix) else script
    module = None
    if orig_argv and "-m" in orig_argv[1:-1]:
        module = orig_argv[orig_argv.index("-m", 1) + 1]
    if script != "tensorboard" and module not in ("tensorboard", "tensorboard.main"):
        return False
    flags = [a.split("=", 1)[0] for a in argv[1:]]
    if any(f in _NO_SERVER_FLAGS for f in flags):
        return False
    return ("--logdir" in flags or "--logdir_spec" in flags
            or bool(environ.get("NPU_PROFILER_LOGDIR", "").strip()))


def wanted(environ=os.environ) -> bool:
    """Whether the readers will be local processes forked from the fork server (not
    switched off by $NPU_PROFILER_PRESTART=0, not in-process, not on a Dask cluster).
    (The variables of loading/pool.py and loading/dask_pool.py, named here as text: this
    runs at the interpreter's start, before TensorBoard's import, and imports nothing.)"""
    if environ.get(PRESTART_ENV, "").strip() == "0":
        return False
    if environ.get("NPU_PROFILER_INPROCESS") == "1":
        return False
    return not environ.get("NPU_PROFILER_DASK_SCHEDULER", "").strip()


def start() -> threading.Thread | None:
    """Called by the .pth line: when this interpreter is a TensorBoard server whose readers
    are local, give TensorBoard one BLAS thread (unless the user chose a count) and start
    the fork server from a thread once `site` is done; the thread, or None."""
    global _started
    if _started:  # (a site dir listed twice, e.g. lib64 -> lib, runs the line twice)
        return None
    if not (is_tensorboard_server(sys.argv, getattr(sys, "orig_argv", None)) and wanted()):
        return None
    _started = True
    if not any(os.environ.get(name) for name in _BLAS_THREAD_ENVS):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"  # (before TensorBoard imports NumPy)
    thread = threading.Thread(target=_start_fork_server, name="npu-profiler-prestart",
                              daemon=True)
    thread.start()
    return thread


def _start_fork_server() -> None:
    # The fork server gets this interpreter's sys.path, which `site` is still building
    # while it runs this module's .pth: wait until the command imports TensorBoard (site
    # is done then), so the server and every reader see the same path as TensorBoard.
    deadline = time.monotonic() + SITE_DONE_WAIT_S
    while "tensorboard" not in sys.modules:
        if time.monotonic() > deadline:
            return
        time.sleep(0.002)
    try:
        import multiprocessing.context
        import multiprocessing.forkserver

        from .spawned import reader_context

        if isinstance(reader_context(), multiprocessing.context.ForkServerContext):
            multiprocessing.forkserver.ensure_running()
    except Exception:  # the plugin starts it later, or reports why it cannot
        pass


def install_line(site_dir: str | None = None) -> str:
    """Write the .pth into `site_dir` (default: this interpreter's site-packages) as a
    wheel install puts it there: for an editable install, which does not (`make install`,
    the benchmark's virtualenv). Returns the path written."""
    import shutil
    import sysconfig

    target = os.path.join(site_dir or sysconfig.get_path("purelib"), PTH_NAME)
    shutil.copyfile(PTH_SOURCE, target)
    return target
