"""Tables as files: the Arrow IPC file of each table of a cache entry (`table_path`,
`write_table` / `write_columns`, `read_table`), written aside and renamed, and where a load
stage's tables go as they are made (`spilling`).

Inside a `spilling` block the files are written by a thread of the stage's process while it
goes on (the writer thread below).

Why: writing a cache entry's tables is a large share of a big profile's load (a 1 GB trace
writes ~1.1 GB of tables; on the test machine ~350 MB/s, so ~3 s), most of it kernel time
copying into the page cache, during which Arrow holds no GIL. Written by the code that made
them, those seconds were spent one after the other with the computing, and after the trace
is decoded the second core idles through them. A writer thread overlaps the two.

The rules that keep this exact:
- Only inside a `spilling` block (a load stage writing its entry), and only by the
  thread that opened it, are writes queued; anywhere else `submit` writes at once. The
  block's end waits for every write it queued (`drain`) and raises the first error (a full
  disk fails the stage as before, only later).
- A file is read back only after its writes are done: `wait_for(path)` (`read_table`,
  `Profile.local_file`, the args sink's `close`).
- One thread, first in first out: writes of the same path (a table rewritten) land in order.
- At most `MAX_QUEUED` writes wait: a stage that makes tables faster than the disk takes
  them blocks, so memory holds at most that many tables beyond what the stage holds.
- What is queued is immutable by then (Arrow tables and batches made for the write, and
  pandas columns only where pandas copies on write, `_copy_on_write`).

A process forked from one that had the thread has no thread (threads do not survive a
fork): it is started again on first use, by process id.
"""
from __future__ import annotations

import collections
import contextlib
import os
import queue
import threading
from typing import Callable

import pandas as pd


def _copy_on_write() -> bool:
    """Whether pandas copies a shared column before it is written to (pandas 3, or 2.x
    with the option on): then a conformed frame may share the input's columns."""
    if int(pd.__version__.split(".")[0]) >= 3:
        return True
    try:
        return pd.options.mode.copy_on_write is True
    except AttributeError:
        return False


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
    """The span of a load stage whose writes may be queued (used by `spilling`):
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


# Reader processes set this (see `spilling`): tables a reader sets are written to disk at
# once and dropped from memory, so a reader's peak memory is that of its largest step, not
# the sum of every table it produced.
_SPILL_DIR: str | None = None


@contextlib.contextmanager
def spilling(directory: str):
    """Profiles created inside this block write their tables to `directory` as they are set;
    the files are written by the writer thread while the block goes on, and are all there
    when it ends."""
    global _SPILL_DIR
    previous, _SPILL_DIR = _SPILL_DIR, directory
    try:
        with queued_writes():
            yield
    finally:
        _SPILL_DIR = previous


def table_path(directory: str, name: str) -> str:
    return os.path.join(directory, f"{name}.arrow")


WRITE_ASIDE = ".tmp-"  # <table>.arrow.tmp-<pid>: a table being written (renamed when done)


def _aside(path: str) -> str:
    return f"{path}{WRITE_ASIDE}{os.getpid()}"


def write_table(path: str, df: pd.DataFrame) -> None:
    import pyarrow as pa

    # One thread: for a frame of more than 100 rows per column pyarrow starts a thread pool
    # per call (and joins it), ~0.6 ms a table; the columns convert in microseconds each.
    # 194-233 -> 185-220 ms of CPU per 3.7 MB profile (views stage, three alternated runs),
    # the same on a 1 GB profile's 400 MB of CSVs.
    table = pa.Table.from_pandas(df, preserve_index=False, nthreads=1)

    def write():
        # Write aside and rename: `df` may itself be memory-mapped from `path` (a table read
        # back and replaced); truncating that file in place would pull the pages from under
        # it.
        tmp = _aside(path)
        with pa.OSFile(tmp, "wb") as sink:
            with pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table, max_chunksize=1 << 20)
        os.replace(tmp, path)

    # The Arrow table may share the frame's numeric buffers: written later only where
    # pandas copies a column before anyone writes to it.
    if _copy_on_write():
        submit(path, write)
    else:
        write()


def write_columns(path: str, columns: dict) -> None:
    """Write numpy / pyarrow columns as one record batch, without a pandas copy. A table
    written this way is read back without a copy too (`read_table`: its numeric columns
    stay views of the memory map), which is how the trace index keeps TensorBoard small."""
    import pyarrow as pa

    arrays = [c if isinstance(c, (pa.Array, pa.ChunkedArray)) else pa.array(c)
              for c in columns.values()]
    arrays = [pa.concat_arrays(a.chunks) if isinstance(a, pa.ChunkedArray) else a
              for a in arrays]
    batch = pa.record_batch(arrays, names=list(columns))

    def write():
        tmp = _aside(path)
        with pa.OSFile(tmp, "wb") as sink:
            with pa.ipc.new_file(sink, batch.schema) as writer:
                writer.write_batch(batch)
        os.replace(tmp, path)

    # (the callers' arrays are theirs, made for this table: never written to afterwards)
    submit(path, write)


def read_table(path: str) -> pd.DataFrame:
    import pyarrow as pa

    wait_for(path)
    # The map must stay open: columns converted without a copy still point into it (it is
    # unmapped when the last buffer using it is freed).
    table = pa.ipc.open_file(pa.memory_map(path)).read_all()
    # Tables were conformed when written and Arrow's pandas metadata restores their dtypes,
    # so no conform here. One block per column: single-chunk numeric columns stay views of
    # the map (no copy).
    return table.to_pandas(split_blocks=True)


def spill_directory() -> str | None:
    """The directory of the open `spilling` block (None outside one): where a new
    Profile's tables go."""
    return _SPILL_DIR
