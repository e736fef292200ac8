"""The reader pool: a bounded pool of spawned reader processes, and what happens when one dies.

Why processes: parsing is CPU-bound Python (the GIL would serialize threads), a reader
that runs out of memory or crashes must not take TensorBoard down, and the memory a reader
used is returned to the OS when the work is done. Processes are `spawn`ed, never forked
from TensorBoard's threaded process. When processes cannot be started (or
`NPU_PROFILER_INPROCESS=1`), the same work runs in one thread in-process.

Retry in isolation: when a reader process dies (killed for memory, or a crash), every task
queued in that pool fails with it (BrokenProcessPool). The tasks that had been handed to a
reader then (the ones running, plus those in the executor's call queue: max_workers +
EXTRA_QUEUED_CALLS, which it marks running when it queues them) may have killed it: each is
run once more, alone in a fresh single-process pool, so only the task that really kills its
process fails for good (its future then raises BrokenProcessPool). The tasks still waiting
in the queue never ran: they go to a fresh shared pool as they were. (Isolating those too
meant one new process per queued task, all at once: with a thousand spans queued, a single
dying reader started a thousand Python processes.)
"""
from __future__ import annotations

import atexit
import concurrent.futures as cf
import concurrent.futures.process  # noqa: F401 (makes cf.process available)
import logging
import os
import threading
import weakref

from ..spawned import adopt_environment, exit_with_parent, reader_context, reader_environment

log = logging.getLogger(__name__)

BrokenReader = cf.process.BrokenProcessPool
MAX_ATTEMPTS = 2  # the first run in the shared pool, then one run alone
EXIT_JOIN_S = 5.0  # how long an exiting process waits for each terminated reader

# Every pool of this process, so that an exiting interpreter ends their readers (below).
_LIVE_POOLS: "weakref.WeakSet[ReaderPool]" = weakref.WeakSet()


def _end_readers_at_exit() -> None:
    """End every pool's reader processes when the interpreter exits (Ctrl+C, SIGTERM, the
    end of a command). concurrent.futures' own exit hook waits for every running task (a
    1 GB trace: half a minute), and multiprocessing's then joins each worker: a reader that
    outlived its pool's thread kept TensorBoard from ever exiting."""
    for pool in list(_LIVE_POOLS):
        pool.shutdown(terminate=True)


# `threading`'s exit hooks run first when the interpreter exits, before `atexit`'s, last
# registered first: this one before concurrent.futures' (registered when it was imported,
# above). A Python without the hook falls back to `atexit`, after concurrent.futures'.
if hasattr(threading, "_register_atexit"):
    threading._register_atexit(_end_readers_at_exit)
else:
    atexit.register(_end_readers_at_exit)


# How much lower than TensorBoard's the readers' CPU priority is (`nice`), unless
# $NPU_PROFILER_READER_NICE says otherwise (0: the same).
READER_NICE = 5
READER_NICE_ENV = "NPU_PROFILER_READER_NICE"


def start_reader(env: dict[str, str] | None = None) -> None:
    """What a reader process runs first: `exit_with_parent`, the environment of the process
    that made its pool (`env`: a reader forked from the fork server has the server's),
    then `lower_priority`."""
    exit_with_parent()
    adopt_environment(env)
    lower_priority()


_lowered = False  # this process' priority was lowered (a forked reader inherits it)


def lower_priority() -> None:
    """Lower this process' CPU priority once (nice +READER_NICE, or $NPU_PROFILER_READER_NICE).

    Why: TensorBoard's process answers the user (a view, a poll, a viewport) in tens of
    milliseconds of CPU each, while readers parse for seconds. On a machine with fewer free
    cores than readers, TensorBoard's answers queued behind their work: a restart on 16
    cached spans with timelines still to build answered its views in ~2.2 s instead of
    ~1.7. At nice 5 (a third of the weight) a reader still gets every core TensorBoard
    leaves idle, which is nearly all of them. The fork server lowers its own once it has
    imported what the readers use (reader_preload.py); the readers forked from it, and
    the trace decoding helpers a reader starts, inherit it."""
    global _lowered
    if _lowered:
        return
    _lowered = True
    raw = os.environ.get(READER_NICE_ENV, "").strip()
    step = int(raw) if raw.lstrip("-").isdigit() else READER_NICE
    if step > 0:
        try:
            os.nice(min(step, 19))
        except OSError:  # not allowed here: the same priority as TensorBoard
            pass


def prepare_reader() -> None:
    """A reader process's first task, sent as it starts: import what the load stages use
    (`build.prepare_reader_process`). Here, in a module TensorBoard's process imports
    without pandas, so that process can send it before importing the rest of the plugin."""
    from .build import prepare_reader_process

    prepare_reader_process()


def _copy_outcome(done: cf.Future, into: cf.Future) -> None:
    if done.cancelled():
        into.cancel()
    elif done.exception() is not None:
        into.set_exception(done.exception())
    else:
        into.set_result(done.result())


class _ReaderProcesses(cf.ProcessPoolExecutor):
    """A process pool that starts a reader only for work that no reader has yet.

    concurrent.futures starts a process for a task unless a reader is marked idle, and it
    marks a reader idle only after the callbacks of the reader's last task have run. The
    loader submits a span's next stage from those callbacks (its timeline, when its views
    are done), so a one-span run started a second reader there: 0.5 s of imports and
    ~110 MB, beside the trace decode. Here a process is started only while there are more
    unfinished tasks than processes."""

    def _adjust_process_count(self):
        try:
            wanted = len(self._pending_work_items) > len(self._processes)
        except AttributeError:  # another Python's internals: its own rule
            return super()._adjust_process_count()
        if wanted and len(self._processes) < self._max_workers:
            self._spawn_process()


class ReaderPool:
    def __init__(self, max_workers: int | None = None, inprocess: bool | None = None):
        self.max_workers = max_workers or max(1, min(2, os.cpu_count() or 1))
        self.inprocess = (os.environ.get("NPU_PROFILER_INPROCESS") == "1"
                          if inprocess is None else inprocess)
        self._pool: cf.Executor | None = None
        self._lock = threading.Lock()
        self._stopped = False
        # shared process pool -> its unfinished futures; once it broke, also the futures
        # that had been handed to a reader at that moment (see `_was_started`)
        self._inflight: dict[cf.Executor, set[cf.Future]] = {}
        self._started_when_broken: dict[cf.Executor, set[cf.Future]] = {}
        self._isolated: set[cf.ProcessPoolExecutor] = set()  # one retried task each
        _LIVE_POOLS.add(self)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def submit(self, fn, *args) -> cf.Future:
        """Run fn(*args) in a reader; the returned future holds the final outcome, after
        the retry in isolation when the reader process died."""
        outcome: cf.Future = cf.Future()
        self._attempt(outcome, fn, args, 1)
        return outcome

    def warm(self) -> cf.Future:
        """Start the first reader now (`prepare_reader`), without waiting for it: a reader
        forked from the fork server exists only once the server has imported (~0.5 s), and
        the process pool's submit waits for that. From a thread, so that TensorBoard's
        start (the plugin's constructor) goes on meanwhile. The future is the warm-up's."""
        outcome: cf.Future = cf.Future()

        def start() -> None:
            try:
                fut = self.submit(prepare_reader)
            except BaseException as exc:  # (submit gives failures as its future's)
                outcome.set_exception(exc)
                return
            fut.add_done_callback(lambda f: _copy_outcome(f, outcome))

        threading.Thread(target=start, name="npu-profiler-warm-reader", daemon=True).start()
        return outcome

    def shutdown(self, terminate: bool = False) -> None:
        """Stop taking work; queued tasks are cancelled. With `terminate`, the reader
        processes are ended too instead of finishing their current task: a command-line
        process that exits must not leave readers behind (they would outlive it and hold
        its output pipes open)."""
        with self._lock:
            self._stopped = True
            pool, self._pool = self._pool, None
            pools = [p for p in (pool, *self._isolated) if p is not None]
            self._isolated.clear()
        # A process pool's workers (a thread pool has none); read before shutdown forgets them.
        procs = [proc for p in pools for proc in (getattr(p, "_processes", None) or {}).values()
                 ] if terminate else []
        managers = [t for p in pools if (t := getattr(p, "_executor_manager_thread", None))
                    ] if terminate else []
        for p in pools:
            p.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            try:
                proc.terminate()
            except (OSError, AttributeError):
                pass
        for proc in procs:
            proc.join(timeout=EXIT_JOIN_S)
        # Each pool's manager thread closes its wake-up pipe on its way out; concurrent.futures'
        # exit hook writes to that pipe without the pool's lock, so at interpreter exit the two
        # raced ("OSError: Bad file descriptor" printed at Ctrl+C). Once the thread has ended
        # the pipe is marked closed and the hook skips it.
        for thread in managers:
            thread.join(timeout=EXIT_JOIN_S)

    # ---- internals -------------------------------------------------------------------
    def _attempt(self, outcome: cf.Future, fn, args, attempt: int) -> None:
        try:
            fut = self._start(fn, args, isolated=attempt > 1)
        except Exception as exc:  # stopped, or no executor could take the task
            outcome.set_exception(exc)
            return
        fut.add_done_callback(lambda f: self._finished(outcome, fn, args, attempt, f))

    def _finished(self, outcome: cf.Future, fn, args, attempt: int, fut: cf.Future) -> None:
        broken = not fut.cancelled() and isinstance(fut.exception(), BrokenReader)
        started = self._settle(fut, broken)
        if fut.cancelled():  # the pool was shut down before the task ran
            outcome.cancel()
            return
        exc = fut.exception()
        if broken:
            self._forget_broken_pool()
            if not started and not self._stopped:
                self._attempt(outcome, fn, args, attempt)  # it never ran: same attempt
                return
            if attempt < MAX_ATTEMPTS and not self._stopped:
                self._attempt(outcome, fn, args, attempt + 1)
                return
        if exc is not None:
            outcome.set_exception(exc)
        else:
            outcome.set_result(fut.result())

    def _start(self, fn, args, isolated: bool) -> cf.Future:
        if self._stopped:
            raise RuntimeError("the reader pool is shut down")
        if self.inprocess:
            return self._thread_pool().submit(fn, *args)
        if isolated:
            # Alone in a fresh process: a task that really kills its process cannot take
            # the others down with it again.
            ex = cf.ProcessPoolExecutor(max_workers=1,
                                        mp_context=reader_context(),
                                        initializer=start_reader,
                                        initargs=(reader_environment(),))
            with self._lock:
                self._isolated.add(ex)
            fut = ex.submit(fn, *args)
            fut.add_done_callback(lambda f: self._isolated_done(ex))
            return fut
        try:
            pool = self._process_pool()
            fut = pool.submit(fn, *args)
            with self._lock:
                self._inflight.setdefault(pool, set()).add(fut)
            return fut
        except Exception as exc:  # processes unusable here: fall back to a thread
            if self._stopped:
                raise
            log.warning("reader processes unavailable (%s); loading in-process", exc)
            self.inprocess = True
            return self._thread_pool().submit(fn, *args)

    def _isolated_done(self, ex: cf.ProcessPoolExecutor) -> None:
        with self._lock:
            self._isolated.discard(ex)
        ex.shutdown(wait=False)

    def _settle(self, fut: cf.Future, broken: bool) -> bool:
        """Forget a finished future of a shared pool; for one that failed because its pool
        broke, whether it had been handed to a reader (True when unknown, e.g. an isolated
        run). The pool fails its futures one after the other, so at the first failure the
        others still show whether they had been handed out (`running`) or were waiting."""
        with self._lock:
            pool = next((p for p, futs in self._inflight.items() if fut in futs), None)
            if pool is None:
                return True
            futs = self._inflight[pool]
            futs.discard(fut)
            started = True
            if broken:
                if pool not in self._started_when_broken:
                    self._started_when_broken[pool] = {f for f in futs if f.running()}
                    started = True  # the oldest task: it was with a reader
                else:
                    started = fut in self._started_when_broken[pool]
            if not futs:
                del self._inflight[pool]
                self._started_when_broken.pop(pool, None)
            return started

    def _forget_broken_pool(self) -> None:
        with self._lock:
            if self._pool is not None and getattr(self._pool, "_broken", False):
                self._pool = None  # the next task creates a new pool

    def _process_pool(self) -> cf.Executor:
        with self._lock:
            if self._pool is None:
                self._pool = _ReaderProcesses(
                    max_workers=self.max_workers, mp_context=reader_context(),
                    initializer=start_reader, initargs=(reader_environment(),))
            return self._pool

    def _thread_pool(self) -> cf.Executor:
        with self._lock:
            if self._pool is None or isinstance(self._pool, cf.ProcessPoolExecutor):
                self._pool = cf.ThreadPoolExecutor(max_workers=1,
                                                   thread_name_prefix="npu-profiler-load")
            return self._pool
