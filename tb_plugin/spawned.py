"""How this package starts processes (the reader pool, loading/pool.py, and the parallel
trace ranges, readers/trace_ranges.py): the `context()` their pools are made with, and
what each process runs first (`exit_with_parent`, their pools' `initializer=`)."""
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


class _Process(multiprocessing.context.SpawnProcess):
    @staticmethod
    def _Popen(process_obj):
        _launching.ours = True
        try:
            return multiprocessing.context.SpawnProcess._Popen(process_obj)
        finally:
            _launching.ours = False


class _Context(multiprocessing.context.SpawnContext):
    Process = _Process


_CONTEXT = _Context()


def context() -> multiprocessing.context.BaseContext:
    """The `spawn` context of this package's process pools (never `fork`: TensorBoard's
    process is threaded), whose processes do not run the parent's main script."""
    return _CONTEXT


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
