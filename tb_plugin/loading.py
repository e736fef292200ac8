"""Background loading: discovery polling, a bounded pool of reader processes, per-run state.

Why processes: parsing is CPU-bound Python (the GIL would serialize threads), a reader
that runs out of memory or crashes must not take TensorBoard down, and memory a reader
used is returned to the OS when the work is done. A reader process writes the normalized
tables into the cache; TensorBoard's process only memory-maps them. When the pool cannot
be used (or `NPU_PROFILER_INPROCESS=1`), the same work runs in a thread in-process.
"""
from __future__ import annotations

import collections
import concurrent.futures as cf
import dataclasses
import logging
import multiprocessing
import os
import threading
import time
import traceback
from collections import OrderedDict

from . import discovery
from .cache import ProfileCache, entry_key
from .model import FileError, Profile, spilling
from .readers import SpanSource

log = logging.getLogger(__name__)

POLL_SECONDS = float(os.environ.get("NPU_PROFILER_POLL_SECONDS", "10"))


def build_entry(span: SpanSource, cache_root: str, key: str) -> dict:
    """Read one span and store it in the cache (runs in a reader process)."""
    from . import readers
    from .analysis import derive
    from .cache import ProfileCache as _Cache

    cache = _Cache.__new__(_Cache)
    cache.root = cache_root
    if cache.has(key):
        return {"key": key, "cached": True}
    work = cache.new_work_dir(key)
    started = time.time()
    with spilling(work):  # tables go to the cache entry as soon as they are made
        try:
            profile = readers.read(span, work, stage="views")
        except Exception as exc:  # a reader bug must still give a readable error
            profile = Profile(meta={"producer": span.producer})
            profile.errors.append(FileError(span.rel(span.root),
                                            f"could not read this profile: {exc!r}"))
            log.error("reader failed for %s\n%s", span.root, traceback.format_exc())
        _give_memory_back(collect=False)
        try:
            derive.complete(profile)
        except Exception as exc:
            profile.errors.append(FileError(span.rel(span.root), f"analysis failed: {exc!r}"))
            log.error("derive failed for %s\n%s", span.root, traceback.format_exc())
    profile.meta["load_seconds"] = round(time.time() - started, 3)
    cache.commit(key, work, profile)
    del profile
    _give_memory_back()
    return {"key": key, "cached": False}


def build_trace(span: SpanSource, cache_root: str, key: str) -> dict:
    """Second stage (runs in a reader process): the trace tables, when the first stage
    deferred them, and the timeline index, added to the existing cache entry."""
    from . import readers
    from .analysis import derive
    from .cache import open_profile, write_profile

    entry = os.path.join(cache_root, key[:2], key)
    profile = open_profile(entry)
    if profile.meta.get("trace_ready"):
        return {"key": key, "cached": True}
    started = time.time()
    with spilling(entry):
        if profile.meta.get("trace_deferred"):
            try:
                part = readers.read(span, entry, stage="trace")
            except Exception as exc:
                part = None
                profile.errors.append(FileError(span.rel(span.root),
                                                f"could not read the trace: {exc!r}"))
                log.error("trace reader failed for %s\n%s", span.root, traceback.format_exc())
            if part is not None:
                profile.rows.update(part.rows)
                profile.errors.extend(part.errors)
                for k in ("args_file",):
                    if k in part.meta:
                        profile.meta[k] = part.meta[k]
            _give_memory_back(collect=False)
        try:
            derive.complete_trace(profile)
        except Exception as exc:
            profile.errors.append(FileError(span.rel(span.root),
                                            f"timeline index failed: {exc!r}"))
            log.error("trace index failed for %s\n%s", span.root, traceback.format_exc())
    profile.meta["trace_ready"] = True
    profile.meta["trace_seconds"] = round(time.time() - started, 3)
    write_profile(entry, profile)
    del profile
    _give_memory_back()
    return {"key": key, "cached": False}


def _give_memory_back(collect: bool = True) -> None:
    """Return the freed heap of a big parse to the OS (the reader process lives on)."""
    import gc

    if collect:
        gc.collect()
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()  # Arrow's allocator keeps freed blocks
    except (ImportError, AttributeError):
        pass
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


@dataclasses.dataclass
class SpanState:
    span: SpanSource
    key: str
    state: str = "pending"  # pending | loading | ready | error
    error: str | None = None
    future: object = None
    attempts: int = 0
    # The timeline (second stage): pending | loading | ready | error.
    trace_state: str = "pending"
    trace_error: str | None = None
    trace_attempts: int = 0
    # What /runs needs of a ready profile (its file errors, whether it has any data), kept
    # so that listing hundreds of runs does not reopen every cache entry on each poll.
    summary: tuple[list[dict], bool] | None = None


class Loader:
    def __init__(self, logdir: str, cache: ProfileCache | None = None,
                 max_workers: int | None = None, poll_seconds: float = POLL_SECONDS,
                 build=build_entry, build_trace=build_trace):
        self.logdir = os.path.abspath(os.path.expanduser(logdir)) if logdir else ""
        self.cache = cache or ProfileCache()
        self.max_workers = max_workers or max(1, min(2, os.cpu_count() or 1))
        self.poll_seconds = poll_seconds
        self._lock = threading.RLock()
        self._runs: dict[str, discovery.Run] = {}
        self._spans: dict[tuple[str, str, str], SpanState] = {}
        self._notes: list[str] = []
        self._scanned = threading.Event()
        self._pool = None
        self._inprocess = os.environ.get("NPU_PROFILER_INPROCESS") == "1"
        self._profiles: OrderedDict[str, Profile] = OrderedDict()
        self._stop = threading.Event()
        self._thread = None
        # Top-level functions (pickled into reader processes), one per load stage.
        self._build = build
        self._build_trace = build_trace
        self._trace_queue: collections.deque[SpanState] = collections.deque()
        self._trace_running = False

    # ---- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None and self.logdir:
            self._thread = threading.Thread(target=self._poll_loop, name="npu-profiler-scan",
                                            daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _poll_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.scan()
            except Exception:
                log.error("discovery failed\n%s", traceback.format_exc())
            self._scanned.set()
            self._stop.wait(self.poll_seconds)

    def wait_scanned(self, timeout: float | None = None) -> bool:
        return self._scanned.wait(timeout)

    # ---- discovery -------------------------------------------------------------------
    def scan(self) -> None:
        runs, notes = discovery.discover(self.logdir)
        new_spans = []
        with self._lock:
            self._runs = runs
            self._notes = notes
            live = set()
            for run in runs.values():
                for span in run.spans():
                    ident = (run.name, span.worker, span.span)
                    live.add(ident)
                    key = entry_key(span.producer, span.root, span.device_id,
                                    discovery.fingerprint(span))
                    st = self._spans.get(ident)
                    if st is not None and st.key == key:
                        continue
                    st = SpanState(span=span, key=key)
                    self._spans[ident] = st
                    new_spans.append(st)
            for ident in list(self._spans):
                if ident not in live:
                    del self._spans[ident]
        for st in new_spans:
            self._submit(st)

    def _submit(self, st: SpanState) -> None:
        if self.cache.has(st.key):
            st.state = "ready"
            self._submit_trace(st)
            return
        st.state = "loading"
        st.attempts += 1
        fut = self._run(self._build, st, isolated=st.attempts > 1)
        st.future = fut
        fut.add_done_callback(lambda f, st=st: self._done(st, f))

    def _submit_trace(self, st: SpanState) -> None:
        prof = self.profile_for(st)
        if prof is None or prof.meta.get("trace_ready"):
            st.trace_state = "ready" if prof is not None else "error"
            return
        st.trace_state = "loading"
        with self._lock:
            self._trace_queue.append(st)
        self._start_traces()

    def _start_traces(self) -> None:
        """Timelines are indexed one at a time, and only once no view is waiting: the views
        of every run come first, and a core stays free for TensorBoard's own requests."""
        with self._lock:
            if self._trace_running or not self._trace_queue:
                return
            if any(s.state in ("pending", "loading") for s in self._spans.values()):
                return
            st = self._trace_queue.popleft()
            self._trace_running = True
        st.trace_attempts += 1
        fut = self._run(self._build_trace, st, isolated=st.trace_attempts > 1)
        fut.add_done_callback(lambda f, st=st: self._trace_finished(st, f))

    def _trace_finished(self, st: SpanState, fut) -> None:
        try:
            self._trace_done(st, fut)
        finally:
            with self._lock:
                self._trace_running = False
            if not self._stop.is_set():
                self._start_traces()

    def _run(self, fn, st: SpanState, isolated: bool = False):
        if self._inprocess:
            return self._thread_pool().submit(fn, st.span, self.cache.root, st.key)
        if isolated:
            # A retry after a reader process died runs alone, so a profile that really
            # kills its process cannot take the others down with it again.
            ex = cf.ProcessPoolExecutor(max_workers=1,
                                        mp_context=multiprocessing.get_context("spawn"))
            fut = ex.submit(fn, st.span, self.cache.root, st.key)
            fut.add_done_callback(lambda f: ex.shutdown(wait=False))
            return fut
        try:
            return self._process_pool().submit(fn, st.span, self.cache.root, st.key)
        except Exception as exc:  # pool unusable here: fall back to a thread
            log.warning("reader processes unavailable (%s); loading in-process", exc)
            self._inprocess = True
            return self._thread_pool().submit(fn, st.span, self.cache.root, st.key)

    def _pool_broke(self) -> None:
        with self._lock:
            if self._pool is not None and getattr(self._pool, "_broken", False):
                self._pool = None  # the next task creates a new pool

    def _done(self, st: SpanState, fut) -> None:
        try:
            fut.result()
            st.state = "ready"
        except cf.process.BrokenProcessPool:
            # A reader process died (killed for memory, or crashed). Every span queued in
            # that pool fails with it, so each gets one more try in a fresh pool; the span
            # that really kills its process fails twice and is reported.
            self._pool_broke()
            if st.attempts < 2 and not self._stop.is_set():
                self._submit(st)
                return
            st.state = "error"
            st.error = ("the reader process stopped unexpectedly (out of memory?) while"
                        " reading this profile")
        except Exception as exc:
            st.state = "error"
            st.error = f"could not read this profile: {exc!r}"
        if self._stop.is_set():
            return
        if st.state == "ready":
            self._submit_trace(st)
        else:
            self._start_traces()  # this may have been the last view being loaded

    def _trace_done(self, st: SpanState, fut) -> None:
        # Reopen first: the entry now has the index tables (and maybe new errors); a request
        # that sees "ready" must not get the profile opened before them (it would build the
        # index again, in TensorBoard's memory).
        with self._lock:
            self._profiles.pop(st.key, None)
            st.summary = None
        try:
            fut.result()
            st.trace_state = "ready"
        except cf.process.BrokenProcessPool:
            self._pool_broke()
            if st.trace_attempts < 2 and not self._stop.is_set():
                self._submit_trace(st)
                return
            st.trace_state = "error"
            st.trace_error = ("the reader process stopped unexpectedly (out of memory?)"
                              " while indexing the trace")
        except Exception as exc:
            st.trace_state = "error"
            st.trace_error = f"could not index the trace: {exc!r}"

    def reopen(self, st: SpanState) -> Profile | None:
        """The profile read again from its cache entry (after a later load stage wrote it)."""
        with self._lock:
            self._profiles.pop(st.key, None)
            st.summary = None
        return self.profile_for(st)

    def _process_pool(self):
        with self._lock:
            if self._pool is None:
                ctx = multiprocessing.get_context("spawn")
                self._pool = cf.ProcessPoolExecutor(max_workers=self.max_workers,
                                                    mp_context=ctx)
            return self._pool

    def _thread_pool(self):
        with self._lock:
            if self._pool is None or isinstance(self._pool, cf.ProcessPoolExecutor):
                self._pool = cf.ThreadPoolExecutor(max_workers=1,
                                                   thread_name_prefix="npu-profiler-load")
            return self._pool

    # ---- queries -----------------------------------------------------------------------
    def runs(self) -> list[discovery.Run]:
        with self._lock:
            return sorted(self._runs.values(), key=lambda r: discovery._natural(r.name))

    def notes(self) -> list[str]:
        with self._lock:
            return list(self._notes)

    def run(self, name: str) -> discovery.Run | None:
        with self._lock:
            return self._runs.get(name)

    def span_states(self, run: str) -> list[SpanState]:
        with self._lock:
            return [st for (r, _, _), st in self._spans.items() if r == run]

    def span_state(self, run: str, worker: str, span: str) -> SpanState | None:
        with self._lock:
            return self._spans.get((run, worker, span))

    def run_status(self, run: str) -> dict:
        states = self.span_states(run)
        total = len(states)
        done = [s for s in states if s.state in ("ready", "error")]
        found = self.run(run)
        errors: list[dict] = list(found.errors) if found is not None else []
        ready = 0
        for st in states:
            if st.state == "error":
                errors.append({"path": st.span.rel(st.span.root), "message": st.error or ""})
            elif st.state == "ready":
                if st.summary is None:
                    prof = self.profile_for(st)
                    if prof is not None:
                        st.summary = ([e.to_json() for e in prof.errors],
                                      any(n > 0 for n in prof.rows.values()))
                if st.summary is not None:
                    errors.extend(st.summary[0])
                    ready += st.summary[1]
                if st.trace_state == "error":
                    errors.append({"path": st.span.rel(st.span.root),
                                   "message": st.trace_error or ""})
        if total and len(done) < total:
            state = "loading"
        elif total and ready == 0 or not total and errors:
            state = "error"
        else:
            state = "ready"
        # The timeline is indexed after the views are served; it has its own progress.
        traced = [s for s in states if s.trace_state in ("ready", "error") or s.state == "error"]
        return {"name": run, "state": state,
                "progress": (len(done) / total) if total else 1.0, "errors": errors,
                "trace_state": "loading" if len(traced) < total else "ready",
                "trace_progress": (len(traced) / total) if total else 1.0}

    def profile_for(self, st: SpanState) -> Profile | None:
        if st.state != "ready":
            return None
        with self._lock:
            prof = self._profiles.get(st.key)
            if prof is not None:
                self._profiles.move_to_end(st.key)
                return prof
        try:
            prof = self.cache.load(st.key)
        except (OSError, ValueError) as exc:
            st.state = "error"
            st.error = f"cache entry unreadable: {exc}"
            return None
        with self._lock:
            self._profiles[st.key] = prof
            while len(self._profiles) > 64:
                self._profiles.popitem(last=False)
        return prof
