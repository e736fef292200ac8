"""The Loader: the runs TensorBoard shows, and the order in which their spans are loaded.

It ties the parts of the package together: the scan loop (`scan.py`) finds runs and
spans, each span's views are built in the reader pool (`pool.py`, `build.py`), then its
timeline, then its advice (the documents made from every table); a span's state (`spans.py`) records each stage and the facts a finished stage
left in the cache; finished profiles are opened from the cache on request
(`profiles.py`); `/runs` status is a pure function of the states (`status.py`).

Order: timelines are indexed only once no span's views are waiting, so every run becomes
browsable before any timeline is indexed; one at a time with local readers, so a core stays
free for TensorBoard's own requests, as many at once as a Dask cluster has worker threads.
A span's advice stage is sent to the pool as soon as its timeline is served. A large trace
whose views stage is long may be decoded beside those views when a reader is idle
(`_start_early_trace`); its timeline stage then starts from the decoded tables.
"""
from __future__ import annotations

import collections
import logging
import os
import shutil
import threading

from .. import discovery, readers, storage
from ..cache import ProfileCache
from ..model import Profile
from ..natural_sort import natural_key
from ..readers import STAGED
from .build import build_advice, build_early_trace, build_entry, build_trace
from .dask_pool import start_pool
from .pool import ReaderPool
from .profiles import OpenProfiles
from .scan import PollLoop, SpanId, span_states
from .spans import SpanFacts, SpanState
from .status import run_status

log = logging.getLogger(__name__)

POLL_SECONDS = float(os.environ.get("NPU_PROFILER_POLL_SECONDS", "10"))
WARM_UP_WAIT_S = 10.0
# A span's trace is decoded beside its views stage only when that stage reads at least this
# much (CSV / JSON; ~4 s of it here): then the second core would idle for seconds, and the
# timeline of a 1 GB trace (400 MB of CSVs) was served 2.5 s sooner. With a 300 MB trace
# (117 MB of CSVs, 1.4 s of views) it gained nothing (7.63 / 8.54 s -> 7.72 / 8.55 s) and
# the decode's memory came on top of the views' (536 -> 883 MB while they load).
EARLY_TRACE_MIN_VIEWS_BYTES = 256 << 20


class Loader:
    def __init__(self, logdir: str, cache: ProfileCache | None = None,
                 max_workers: int | None = None, poll_seconds: float = POLL_SECONDS,
                 build=build_entry, build_trace=build_trace, build_advice=build_advice,
                 scheduler: str | None = None, readers: tuple | None = None,
                 build_early_trace=build_early_trace):
        self.cache = cache or ProfileCache()
        # Where the files are (storage.py): a local directory, or the local mirror tree of
        # a remote URL, which every scan lists first. `logdir` is the local path either way.
        self.source = storage.open_logdir(logdir, self.cache.mirror_root()) if logdir else None
        self.logdir = self.source.path if self.source is not None else ""
        self.open_profiles = OpenProfiles(self.cache)
        # Local reader processes, or a Dask cluster (`scheduler`, $NPU_PROFILER_DASK_SCHEDULER);
        # or `readers`, from `dask_pool.start_pool` (the plugin starts them before it
        # imports the Loader): (pool, note, the first reader's warm-up or None).
        if readers is None:
            readers = start_pool(max_workers, scheduler, warm=False)
        self._pool, self._pool_note, warming = readers
        # `/runs` says "scanned" once the first scan is done: a change of what it answers.
        self._poll = PollLoop(self.scan, poll_seconds, on_first_scan=self._changed)
        self._lock = threading.RLock()
        # Counts the changes of the spans' states; requests held until a profile is loaded
        # or the run list changes (`http/holding.py`) wait on it instead of polling.
        self._changes = threading.Condition()
        self._generation = 0
        self._runs: dict[str, discovery.Run] = {}
        self._spans: dict[SpanId, SpanState] = {}
        self._notes: list[str] = []
        # Top-level functions (pickled into reader processes), one per load stage.
        self._build = build
        self._build_trace = build_trace
        self._build_advice = build_advice
        self._build_early_trace = build_early_trace
        self._early_started: set[SpanId] = set()  # spans whose trace was sent early
        self._early_running: set[SpanId] = set()
        self._trace_queue: collections.deque[SpanState] = collections.deque()
        self._traces_running = 0
        # Spans whose files could not be fetched from a remote logdir: tried again at the
        # next scan (their files did not change, so the scan alone would keep the error).
        self._fetch_failed: set[SpanId] = set()
        self._warming = warming  # the reader process started first, until ready

    # ---- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        if self.logdir:
            if self._warming is None and getattr(self._pool, "inprocess", True) is False:
                # A reader process starts and imports (~1-1.5 s) while TensorBoard itself
                # is still starting, instead of after the first scan found spans; the
                # first scan hands its work over once that reader is ready (else the pool
                # would start a second process for it: memory a one-span run never needs).
                self._warming = self._pool.warm()
            self._poll.start()

    def stop(self, terminate_readers: bool = False) -> None:
        """Stop scanning and loading (`terminate_readers`: end the reader processes now)."""
        self._poll.stop()
        self._pool.shutdown(terminate=terminate_readers)
        self._changed()  # held requests answer now

    # ---- changes -----------------------------------------------------------------------
    @property
    def generation(self) -> int:
        """A number that grows whenever a span's state may have changed (a stage ended, a
        scan found or dropped spans, the loader stopped)."""
        with self._changes:
            return self._generation

    def wait_changed(self, since: int, timeout: float) -> bool:
        """Wait up to `timeout` s until `generation` is past `since`; whether it is."""
        with self._changes:
            return self._changes.wait_for(lambda: self._generation != since, timeout)

    def _changed(self) -> None:
        with self._changes:
            self._generation += 1
            self._changes.notify_all()

    def wait_scanned(self, timeout: float | None = None) -> bool:
        return self._poll.wait_scanned(timeout)

    @property
    def stopped(self) -> bool:
        # The pool stops on its own when the interpreter exits (loading/pool.py).
        return self._poll.stopped or self._pool.stopped

    # ---- scheduling ------------------------------------------------------------------
    def scan(self) -> None:
        failure = None
        try:
            synced = self.source.sync(discovery.remote_descend)
        except storage.StorageError as exc:  # shown as a run of its own; the last good
            synced, failure = [], str(exc)  # listing (if any) is still served
            log.warning("%s", failure)
        runs, notes = discovery.discover(self.logdir)
        notes = synced + notes
        if failure is not None:
            name = self.source.display
            message = failure.removeprefix(f"{name}: ")  # the path says where already
            runs[name] = discovery.Run(name=name, path=self.logdir,
                                       errors=[{"path": name, "message": message}])
        with self._lock:
            listed = (_listing(self._runs), self._notes, len(self._spans))
            self._runs = runs
            self._notes = notes
            self._spans, new = span_states(runs, self._spans)
            new += self._retry_fetches()
            changed = bool(new) or listed != (_listing(runs), notes, len(self._spans))
        self.cache.prefetch([st.key for st in new])  # a shared cache's meta.json, batched
        warming, self._warming = self._warming, None
        # Wait for the warmed reader only when there is exactly one span to read: a task
        # sent before that reader is ready would make the pool start a second reader for
        # it (memory a one-span run never needs). With two or more the pool starts the
        # second one anyway, so they are sent now and both readers begin as they come up
        # (not once this thread has woken and sent them). Spans all in the cache (a
        # restart) are served at once, with no reader at all.
        if warming is not None and sum(not self.cache.has(st.key) for st in new) == 1:
            try:
                warming.result(timeout=WARM_UP_WAIT_S)
            except Exception:  # slow or failed: the pool starts readers as it needs them
                pass
        for st in new:
            self._load_views(st)
        # Spans found in the cache are queued for their timeline during the loop above,
        # while later ones were still pending; nothing else may come to start them (the
        # last span may have been complete already).
        self._start_traces()
        self._start_early_trace()
        if changed or failure is not None:
            self._changed()

    def _retry_fetches(self) -> list[SpanState]:
        """Fresh states for the spans whose fetch failed, still at the same files."""
        fresh = []
        for ident in self._fetch_failed:
            st = self._spans.get(ident)
            if st is not None and st.state == "error":
                st = self._spans[ident] = SpanState(span=st.span, key=st.key)
                fresh.append(st)
        self._fetch_failed.clear()
        return fresh

    def _load_views(self, st: SpanState) -> None:
        if self.cache.has(st.key):
            self._views_built(st)
            return
        st.views_loading()
        fut = self._pool.submit(self._build, st.span, self.cache.root, st.key)
        fut.add_done_callback(lambda f, st=st: self._views_done(st, f))

    def _views_done(self, st: SpanState, fut) -> None:
        try:
            fut.result()
        except storage.StorageError as exc:
            self._drop_unused_early_trace(st, views_failed=True)
            st.views_failed(str(exc))
            with self._lock:
                self._fetch_failed.add((st.span.run, st.span.worker, st.span.span))
        except Exception as exc:
            self._drop_unused_early_trace(st, views_failed=True)
            st.views_failed(exc)
        else:
            self._views_built(st)
        self._changed()
        if not self.stopped:
            self._start_traces()  # this may have been the last view being loaded
            self._start_early_trace()  # or a reader is free beside the last ones

    def _views_built(self, st: SpanState) -> None:
        """The entry exists: keep its facts, then queue its timeline if it has none yet."""
        facts = self._read_facts(st)
        if facts is None:
            return
        st.views_ready(facts)
        if st.trace_state == "ready":
            return
        st.trace_loading()
        with self._lock:
            self._trace_queue.append(st)
        self._start_traces()

    def _read_facts(self, st: SpanState) -> SpanFacts | None:
        self.open_profiles.forget(st.key)  # a later stage may have rewritten the entry
        try:
            return SpanFacts.of(self.open_profiles.get(st.key))
        except (OSError, ValueError) as exc:
            st.views_failed(f"cache entry unreadable: {exc}")
            return None
        except Exception as exc:  # a bug: the span must still end (never "loading" forever)
            log.exception("cannot read the facts of %s", st.key)
            st.views_failed(f"cache entry unusable: {exc!r}")
            return None

    def _start_traces(self) -> None:
        # One timeline at a time with local readers (a core stays free for TensorBoard); as
        # many as the cluster has worker threads on Dask (else 8,192 timelines would queue
        # behind each other on a cluster of hundreds of workers).
        slots = max(1, int(getattr(self._pool, "trace_slots", lambda: 1)()))
        while True:
            with self._lock:
                if self._traces_running >= slots or not self._trace_queue:
                    return
                if any(s.state in ("pending", "loading") for s in self._spans.values()):
                    return
                st = self._trace_queue.popleft()
                self._traces_running += 1
            fut = self._pool.submit(self._build_trace, st.span, self.cache.root, st.key)
            fut.add_done_callback(lambda f, st=st: self._trace_done(st, f))

    def _start_early_trace(self) -> None:
        """With a local reader idle while views are still being built, and no timeline
        running, send the largest trace those views leave to the timeline stage to that
        reader (`build.build_early_trace`): the timeline stage then starts from decoded
        tables. Only where the views stage is long (EARLY_TRACE_MIN_VIEWS_BYTES); not on
        Dask, where every worker has views to build, nor in-process."""
        pool = self._pool
        if not isinstance(pool, ReaderPool) or pool.inprocess or self.stopped:
            return
        with self._lock:
            building = [s for s in self._spans.values() if s.state in ("pending", "loading")]
            if self._traces_running or len(building) >= pool.max_workers:
                return
            sizes = {id(s): _early_trace_bytes(s.span) for s in building
                     if s.state == "loading" and _span_id(s) not in self._early_started}
            candidates = [s for s in building if sizes.get(id(s))]
            if not candidates:
                return
            st = max(candidates, key=lambda s: sizes[id(s)])
            self._early_started.add(_span_id(st))
            self._early_running.add(_span_id(st))
            self._traces_running += 1  # the timeline's slot: its stage waits for this
        fut = pool.submit(self._build_early_trace, st.span, self.cache.root, st.key)
        fut.add_done_callback(lambda f, st=st: self._early_trace_done(st, f))

    def _early_trace_done(self, st: SpanState, fut) -> None:
        exc = None if fut.cancelled() else fut.exception()
        if exc is not None:  # the timeline stage decodes the trace itself
            log.warning("early trace decoding failed for %s: %r", st.span.root, exc)
        with self._lock:
            self._traces_running = max(0, self._traces_running - 1)
        self._drop_unused_early_trace(st, decoded=True)
        with self._lock:
            self._early_running.discard(_span_id(st))
        self._drop_unused_early_trace(st)  # (views that failed in the meantime)
        if not self.stopped:
            self._start_traces()

    def _drop_unused_early_trace(self, st: SpanState, views_failed: bool = False,
                                 decoded: bool = False) -> None:
        """An early trace of a span whose views failed: no timeline stage will take it,
        and it may hold as much as the trace (removed once its decoding has ended). It goes
        before the span says so (`views_failed`: its views failed, not yet on the span;
        `decoded`: its decoding ended, the span still counted as decoding), so whoever sees
        the failure, or the decoding over, sees no leftover."""
        with self._lock:
            unused = (views_failed or st.state == "error") \
                and _span_id(st) in self._early_started \
                and (decoded or _span_id(st) not in self._early_running)
        if unused:
            shutil.rmtree(self.cache.early_trace_dir(st.key), ignore_errors=True)

    def _trace_done(self, st: SpanState, fut) -> None:
        try:
            try:
                fut.result()
            except Exception as exc:
                self.open_profiles.forget(st.key)
                st.trace_failed(exc)
            else:
                # Facts first, from the entry read again: a request that sees "ready" must
                # not get the profile opened before the index existed (it would build the
                # index again, in TensorBoard's memory).
                facts = self._read_facts(st)
                if facts is not None:
                    st.trace_finished(facts)
                    if not self.stopped:
                        self._start_advice(st)
        finally:
            with self._lock:
                self._traces_running = max(0, self._traces_running - 1)
            self._changed()
            if not self.stopped:
                self._start_traces()

    def _start_advice(self, st: SpanState) -> None:
        st.advice_loading()
        fut = self._pool.submit(self._build_advice, st.span, self.cache.root, st.key)
        fut.add_done_callback(lambda f, st=st: self._advice_done(st, f))

    def _advice_done(self, st: SpanState, fut) -> None:
        try:
            fut.result()
        except Exception as exc:  # the documents are then made on request
            log.warning("advice stage failed for %s: %r", st.span.root, exc)
            st.advice_failed()
        else:
            st.advice_finished()
        self._changed()

    # ---- queries -----------------------------------------------------------------------
    def runs(self) -> list[discovery.Run]:
        with self._lock:
            return sorted(self._runs.values(), key=lambda r: natural_key(r.name))

    def notes(self) -> list[str]:
        with self._lock:
            # The pool's and the cache's (a shared cache URL not used, or only read).
            return [n for n in (self._pool_note, self.cache.note) if n] + list(self._notes)

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
        found = self.run(run)
        return run_status(run, self.span_states(run), found.errors if found is not None else [])

    def profile_for(self, st: SpanState) -> Profile | None:
        """The open profile of a ready span (None when it is not ready or unreadable)."""
        if st.state != "ready":
            return None
        try:
            return self.open_profiles.get(st.key)
        except (OSError, ValueError) as exc:
            st.views_failed(f"cache entry unreadable: {exc}")
            return None

    def reopen(self, st: SpanState) -> Profile | None:
        """The profile read again from its cache entry (after a later load stage wrote it)."""
        self.open_profiles.forget(st.key)
        return self.profile_for(st)


def _listing(runs: dict[str, discovery.Run]) -> list:
    """What `/runs` shows of a scan's runs besides the span states: names and errors."""
    return sorted((name, repr(run.errors)) for name, run in runs.items())


def _span_id(st: SpanState) -> SpanId:
    return (st.span.run, st.span.worker, st.span.span)


def _early_trace_bytes(span) -> int:
    """The size of the trace this span's views stage leaves to the timeline stage, when
    that views stage reads at least EARLY_TRACE_MIN_VIEWS_BYTES; else 0. The file sizes
    are checked first, so a small span never imports its reader here."""
    if span.producer not in STAGED:
        return 0
    sizes = {}
    for path in span.files:
        try:
            sizes[path] = os.path.getsize(path)
        except OSError:
            pass
    if sum(sizes.values()) < EARLY_TRACE_MIN_VIEWS_BYTES:
        return 0
    trace = readers.deferred_trace(span)
    if trace is None:
        return 0
    size = sizes.get(trace)
    if size is None:
        try:
            size = os.path.getsize(trace)
        except OSError:
            return 0
    views = sum(sizes.values()) - sizes.get(trace, 0)
    return size if views >= EARLY_TRACE_MIN_VIEWS_BYTES else 0
