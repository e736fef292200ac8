"""How this package starts processes (the reader pool, loading/pool.py, and the parallel
trace ranges, readers/trace_ranges.py): the contexts their pools are made with
(`reader_context()`: readers forked from a fork server that has imported what they use;
`context()`: spawned), and what each process runs first (`exit_with_parent`, their pools'
`initializer=`)."""
from __future__ import annotations

import multiprocessing
import multiprocessing.context
import multiprocessing.spawn
import os
import signal
import threading

# ---- starting processes without the parent's main script ---------------------------------
# A spawned process first runs the parent's main script again (as `__mp_main__`), so that
# functions defined there can be unpickled. Our processes only run functions of this
# package, and the parent's main script is TensorBoard's (`from tensorboard.main import
# run_main`): 0.16 s of CPU and 35 MB in every reader and every trace-range process, for
# nothing. Processes started through `context()` skip it; any other process this
# interpreter starts is prepared as before.
_launching = threading.local()
_preparation_data = multiprocessing.spawn.get_preparation_data


def _preparation_data_for(name: str) -> dict:
    data = _preparation_data(name)
    if getattr(_launching, "ours", False):
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


multiprocessing.spawn.get_preparation_data = _preparation_data_for


def _without_main_script(base: type, name: str) -> type:
    """A subclass of the process class `base` whose processes skip the parent's main
    script; `name` is the module attribute it is assigned to (a spawned child unpickles
    its process object by that name)."""
    def _Popen(process_obj):
        _launching.ours = True
        try:
            return base._Popen(process_obj)
        finally:
            _launching.ours = False

    cls = type(name, (base,), {"_Popen": staticmethod(_Popen), "__module__": __name__})
    cls.__qualname__ = name
    return cls


_Process = _without_main_script(multiprocessing.context.SpawnProcess, "_Process")


class _Context(multiprocessing.context.SpawnContext):
    Process = _Process


_CONTEXT = _Context()


def context() -> multiprocessing.context.BaseContext:
    """The `spawn` context of this package's process pools (never `fork`: TensorBoard's
    process is threaded), whose processes do not run the parent's main script."""
    return _CONTEXT


# ---- readers forked from a server that has imported what they use -----------------------
# A spawned reader imports pandas, pyarrow and the load stages before its first span: ~0.45 s
# of CPU, paid again by each reader, on a machine whose cores are busy with TensorBoard's own
# start and the other reader (8 ranks x 2 spans: two readers, 4.8 s of reader CPU of which
# 0.9 s were imports). A fork server (multiprocessing's `forkserver`) is one process,
# started like a spawned one, that imports `READER_PRELOAD` once; each reader is then forked
# from it (not from TensorBoard's threaded process) with those imports done and shared.
READER_PRELOAD = "tb_plugin.loading.reader_preload"
FORKSERVER_ENV = "NPU_PROFILER_FORKSERVER"  # "0": spawn every reader


_ForkServerProcess = _without_main_script(multiprocessing.context.ForkServerProcess,
                                          "_ForkServerProcess")


class _ForkServerContext(multiprocessing.context.ForkServerContext):
    Process = _ForkServerProcess


_READER_CONTEXT: multiprocessing.context.BaseContext | None = None
_reader_context_lock = threading.Lock()


def reader_context() -> multiprocessing.context.BaseContext:
    """The context of the reader pools (loading/pool.py): the fork server where this
    platform has one and $NPU_PROFILER_FORKSERVER is not "0", else `context()`.

    A forked reader has the environment of the fork server (of when it started), not of
    the process that asks for the reader now: the pools pass theirs along
    (`reader_environment`, applied by the reader's initializer)."""
    global _READER_CONTEXT
    if os.environ.get(FORKSERVER_ENV, "").strip() == "0" \
            or "forkserver" not in multiprocessing.get_all_start_methods():
        return _CONTEXT
    with _reader_context_lock:
        if _READER_CONTEXT is None:
            ctx = _ForkServerContext()
            ctx.set_forkserver_preload([READER_PRELOAD])  # (the interpreter's one server)
            _READER_CONTEXT = ctx
        return _READER_CONTEXT


def reader_environment() -> dict[str, str]:
    """This process' environment, for a reader to take on (`adopt_environment`)."""
    return dict(os.environ)


def adopt_environment(env: dict[str, str] | None) -> None:
    """Make this (forked) reader's environment that of the process that started it."""
    if env is not None and env != os.environ:
        os.environ.clear()
        os.environ.update(env)


def exit_with_parent() -> None:
    """End this process as soon as the process that started it is gone, and leave Ctrl+C to
    that process.

    Why the watch: a pool's worker waits for work on a queue that does not report its other
    end closing, so the readers of a TensorBoard that was killed (or of a command that exits
    at once, cli.py) would otherwise wait forever, each holding its imports' memory.

    Why SIGINT is ignored: Ctrl+C in a terminal reaches every process of the foreground
    group. In a pool's worker, the KeyboardInterrupt became the result of the task it was
    running, and re-raised in the parent's pool thread it killed that thread: the pool then
    never told its workers to exit, and TensorBoard hung on exit waiting for them. The
    parent ends its readers itself when it exits (loading/pool.py)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch():
        parent.join()  # returns when the parent process has exited, however it ended
        os._exit(0)

    threading.Thread(target=watch, name="npu-profiler-exit-with-parent", daemon=True).start()
