"""Files of a load stage written by a thread of that stage's process, while it goes on.

Why: writing a cache entry's tables is a large share of a big profile's load (a 1 GB trace
writes ~1.1 GB of tables; on the test machine ~350 MB/s, so ~3 s), most of it kernel time
copying into the page cache, during which Arrow holds no GIL. Written by the code that made
them, those seconds were spent one after the other with the computing, and after the trace
is decoded the second core idles through them. A writer thread overlaps the two.

The rules that keep this exact:
- Only inside a `model.spilling` block (a load stage writing its entry), and only by the
  thread that opened it, are writes queued; anywhere else `submit` writes at once. The
  block's end waits for every write it queued (`drain`) and raises the first error (a full
  disk fails the stage as before, only later).
- A file is read back only after its writes are done: `wait_for(path)` (model's
  `read_table`, `Profile.arrow_table`, the args sink's `close`).
- One thread, first in first out: writes of the same path (a table rewritten) land in order.
- At most `MAX_QUEUED` writes wait: a stage that makes tables faster than the disk takes
  them blocks, so memory holds at most that many tables beyond what the stage holds.
- What is queued is immutable by then (Arrow tables and batches made for the write, and
  pandas columns only where pandas copies on write, `model._copy_on_write`).

A process forked from one that had the thread has no thread (threads do not survive a
fork): it is started again on first use, by process id.
"""
from __future__ import annotations

import collections
import os
import queue
import threading
from typing import Callable

MAX_QUEUED = 2


class _Writer:
    def __init__(self):
        self._lock = threading.Condition()
        self._pid = None
        self._queue: queue.Queue | None = None
        self._pending: collections.Counter = collections.Counter()  # path -> writes not done
        self._owed: collections.Counter = collections.Counter()  # thread -> writes not done
        self._errors: dict[int, list[BaseException]] = {}  # thread -> errors of its writes
        self._blocks = threading.local()  # per thread: open `queued_writes` blocks

    def _start(self) -> queue.Queue:
        if self._pid != os.getpid():  # (none yet, or one of the process this was forked from)
            self._queue = queue.Queue(MAX_QUEUED)
            self._pending.clear()
            self._owed.clear()
            self._errors.clear()
            self._pid = os.getpid()
            threading.Thread(target=self._run, args=(self._queue,), daemon=True,
                             name="npu-profiler-file-writes").start()
        return self._queue

    def _run(self, q: queue.Queue) -> None:
        while True:
            path, owner, write = q.get()
            try:
                write()
            except BaseException as exc:  # kept for the owner's `drain`
                with self._lock:
                    self._errors.setdefault(owner, []).append(exc)
            finally:
                with self._lock:
                    for counts, key in ((self._pending, path), (self._owed, owner)):
                        counts[key] -= 1
                        if counts[key] <= 0:
                            del counts[key]
                    self._lock.notify_all()

    def queuing(self) -> bool:
        return getattr(self._blocks, "depth", 0) > 0

    def enter(self) -> None:
        self._blocks.depth = getattr(self._blocks, "depth", 0) + 1

    def leave(self) -> None:
        self._blocks.depth -= 1

    def submit(self, path: str, write: Callable[[], None]) -> None:
        if not self.queuing():
            write()
            return
        owner = threading.get_ident()
        with self._lock:
            q = self._start()
            self._pending[path] += 1
            self._owed[owner] += 1
        q.put((path, owner, write))  # (blocks while MAX_QUEUED writes wait)

    def wait_for(self, path: str) -> None:
        if self._pid != os.getpid():
            return
        with self._lock:
            while self._pending.get(path):
                self._lock.wait()

    def drain(self) -> None:
        """Wait for the writes this thread queued; raise the first error of them."""
        if self._pid != os.getpid():
            return
        owner = threading.get_ident()
        with self._lock:
            while self._owed.get(owner):
                self._lock.wait()
            errors = self._errors.pop(owner, [])
        if errors:
            raise errors[0]


_WRITER = _Writer()


def submit(path: str, write: Callable[[], None]) -> None:
    """Run `write()` (which writes `path`) on the writer thread inside a load stage's
    `spilling` block, else now."""
    _WRITER.submit(path, write)


def wait_for(path: str) -> None:
    """Return once no queued write of `path` is left."""
    _WRITER.wait_for(path)


def drain() -> None:
    """Wait for every write this thread queued; raise the first error any of them had."""
    _WRITER.drain()


class queued_writes:
    """The span of a load stage whose writes may be queued (used by `model.spilling`):
    its end waits for all of them, and raises the first error."""

    def __enter__(self):
        _WRITER.enter()
        return self

    def __exit__(self, exc_type, exc, tb):
        _WRITER.leave()
        try:
            drain()
        except BaseException:
            if exc_type is None:
                raise
        return False
