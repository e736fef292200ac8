"""Reader pool on a Dask cluster: each load stage of each span is one task on a worker.

`NPU_PROFILER_DASK_SCHEDULER=tcp://host:8786` (or `Loader(scheduler=...)`, or
`npu-profiler cache build --scheduler`) sends the parses to a `dask.distributed` cluster
instead of local reader processes. A worker runs the same `build_entry` / `build_trace`
functions a local reader runs, with the same arguments: the span (file paths) and the
versioned cache root. So the workers must see the profile files and the cache directory at
the same paths as this process (a shared filesystem; set `NPU_PROFILER_CACHE_DIR` to a
directory on it). TensorBoard only memory-maps the entries the views ask for.

Failure handling is Dask's: a task whose worker dies is rescheduled on another worker (up to
the scheduler's `allowed-failures`), then fails with `KilledWorker`, which the loader reports
for that span alone. A scheduler that cannot be reached within `CONNECT_TIMEOUT_S` makes
`make_pool` fall back to the local pool, with a note that says why.

One build at a time per worker process: a build's table spilling is process-wide state
(`table_files.spilling`), so tasks that land on a multi-threaded worker take turns.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import os
import threading

from .pool import ReaderPool

log = logging.getLogger(__name__)

SCHEDULER_ENV = "NPU_PROFILER_DASK_SCHEDULER"
CONNECT_TIMEOUT_S = float(os.environ.get("NPU_PROFILER_DASK_TIMEOUT", "10"))

_one_build_per_process = threading.Lock()


def run_exclusive(fn, *args):
    """Run one build in this worker process, after any build already running in it."""
    with _one_build_per_process:
        return fn(*args)


class DaskReaderPool:
    """The reader pool interface (`submit`, `shutdown`, `stopped`) over a
    `distributed.Client`."""

    def __init__(self, address: str, connect_timeout: float = CONNECT_TIMEOUT_S):
        from distributed import Client

        self.address = address
        self.client = Client(address, timeout=connect_timeout, set_as_default=False)
        self._lock = threading.Lock()
        self._pending: set = set()
        self._stopped = False

    def submit(self, fn, *args) -> cf.Future:
        outcome: cf.Future = cf.Future()
        with self._lock:
            if self._stopped:
                outcome.set_exception(RuntimeError("the reader pool is shut down"))
                return outcome
            # pure=False: a span rebuilt after its files changed must run again, and two
            # identical submissions must not be merged into one key that is forgotten early.
            task = self.client.submit(run_exclusive, fn, *args, pure=False)
            self._pending.add(task)
        task.add_done_callback(lambda t: self._finished(outcome, t))
        return outcome

    @property
    def stopped(self) -> bool:
        return self._stopped

    def trace_slots(self) -> int:
        """How many timeline builds to run at once: the cluster's worker threads now."""
        try:
            return max(1, sum(self.client.nthreads().values()))
        except Exception:  # the scheduler went away: the task submission will say so
            return 1

    def _finished(self, outcome: cf.Future, task) -> None:
        with self._lock:
            self._pending.discard(task)
        if task.status == "cancelled":
            outcome.cancel() or outcome.set_exception(cf.CancelledError())
            return
        try:
            outcome.set_result(task.result())
        except BaseException as exc:  # the task's own error, or KilledWorker
            outcome.set_exception(exc)

    def shutdown(self, terminate: bool = False) -> None:
        """Stop taking work and disconnect. Tasks already sent are cancelled (the cluster
        stays up: it is not ours); with or without `terminate`, nothing is left running
        for this process."""
        with self._lock:
            self._stopped = True
            pending, self._pending = list(self._pending), set()
        try:
            if pending:
                self.client.cancel(pending)
            self.client.close(timeout=5)
        except Exception as exc:  # the scheduler went away first
            log.debug("closing the Dask client: %r", exc)


def start_pool(max_workers: int | None = None, scheduler: str | None = None,
               warm: bool = True):
    """`make_pool`, with (`warm`) the first local reader process started at once: it
    imports (~1 s) while TensorBoard is still starting. (pool, note, the warm-up's future
    or None); the Loader takes the three."""
    pool, note = make_pool(max_workers, scheduler)
    warming = None
    if warm and getattr(pool, "inprocess", True) is False:
        warming = pool.warm()
    return pool, note, warming


def make_pool(max_workers: int | None = None, scheduler: str | None = None):
    """The reader pool to use, and a note for `/runs` when the choice needs explaining.

    `scheduler` (else `$NPU_PROFILER_DASK_SCHEDULER`) selects a Dask cluster; without one, or
    when it cannot be used, the local process pool."""
    address = scheduler if scheduler is not None else os.environ.get(SCHEDULER_ENV, "")
    address = address.strip()
    if not address:
        return ReaderPool(max_workers), None
    try:
        pool = DaskReaderPool(address)
    except ImportError:
        note = (f"{SCHEDULER_ENV}={address} is set but dask.distributed is not installed "
                f"(pip install 'tensorboard-plugin-npu-profiler[dask]'); reading locally")
    except Exception as exc:  # unreachable, refused, timed out, bad address
        note = (f"Dask scheduler {address} cannot be used ({type(exc).__name__}: {exc}); "
                f"reading locally")
    else:
        log.info("reading profiles on the Dask cluster at %s", address)
        return pool, None
    log.warning(note)
    return ReaderPool(max_workers), note
