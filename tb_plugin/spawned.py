"""What every process this package spawns runs first (`initializer=` of its process pools:
the reader pool, loading/pool.py, and the parallel trace ranges, readers/trace_ranges.py)."""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading


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
