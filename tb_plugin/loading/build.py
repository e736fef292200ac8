"""The load stages of one span, as run in a reader process (or a thread in-process).

Stage 1 (`build_entry`) reads what the views need and commits a new cache entry, with the
views' first answers made from those tables (analysis/stored.py); stage 2
(`build_trace`) adds the timeline (the trace tables, when stage 1 deferred them, and the
trace index) to that entry; stage 3 (`build_advice`) stores the documents made from every
table (the advice, the dispatch path). All are top-level functions of (span, cache root,
key) so they can be pickled into a spawned process; all return {"key", "cached"}.
"""
from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import shutil
import time
import traceback

from .. import storage
from ..analysis import rank_summary
from ..cache import META_FILE, ProfileCache, meta_trace_ready, open_profile, write_profile
from ..model import FileError, Profile, ProfileMeta
from ..span_source import SpanSource
from ..table_files import spilling

log = logging.getLogger(__name__)


def build_entry(span: SpanSource, cache_root: str, key: str) -> dict:
    """Read one span and store it in the cache (runs in a reader process)."""
    from .. import readers
    from ..analysis import derive, stored

    prepare_reader_process()
    cache = ProfileCache.at(cache_root)
    if cache.has(key):
        return {"key": key, "cached": True}
    storage.materialize(span.logdir, (span.root, *span.files))  # a remote logdir's files
    started = time.time()
    with cache.building(key) as work:
        if work is None:  # built by another process (of this cache) while we waited
            return {"key": key, "cached": True}
        with spilling(work):  # tables go to the cache entry as soon as they are made
            try:
                profile = readers.read(span, work, stage="views")
            except Exception as exc:  # a reader bug must still give a readable error
                profile = Profile(meta=ProfileMeta(producer=span.producer))
                profile.errors.append(FileError(span.rel(span.root),
                                                f"could not read this profile: {exc!r}"))
                log.error("reader failed for %s\n%s", span.root, traceback.format_exc())
            give_memory_back(collect=False)
            _derive(derive.complete, profile, span, "analysis failed", "derive")
            # The views' first answers, while the tables are at hand (analysis/stored.py).
            profile.meta.stored_results = stored.write_all(profile, work) or None
        summary = _rank_summary(profile, span)
        profile.meta.load_seconds = round(time.time() - started, 3)
        cache.commit(key, work, profile)
    if summary is not None:
        cache.write_derived("distributed", key, rank_summary.SUMMARY_SUFFIX, summary)
    del profile
    give_memory_back()
    return {"key": key, "cached": False}


def _derive(step, profile: Profile, span: SpanSource, error: str, what: str) -> None:
    """Run a load-time derivation on the profile; a failure becomes one file error of the
    profile (what was read is still stored) and a log line with the traceback."""
    try:
        step(profile)
    except Exception as exc:
        profile.errors.append(FileError(span.rel(span.root), f"{error}: {exc!r}"))
        log.error("%s failed for %s\n%s", what, span.root, traceback.format_exc())


def _rank_summary(profile: Profile, span: SpanSource) -> dict | None:
    """A rank's summary for the distributed view, made while its tables are at hand (the
    views-stage tables are all it reads), so that a view over thousands of ranks reads one
    small document per rank instead of opening every rank's tables in TensorBoard."""
    if span.rank is None and profile.meta.rank is None:
        return None
    try:
        return rank_summary.rank_summary(profile)
    except Exception:
        log.error("rank summary failed for %s (it is made again on request)\n%s", span.root,
                  traceback.format_exc())
        return None


def build_trace(span: SpanSource, cache_root: str, key: str) -> dict:
    """Second stage (runs in a reader process): the trace tables, when the first stage
    deferred them, and the timeline index, added to the existing cache entry."""
    prepare_reader_process()
    cache = ProfileCache.at(cache_root)
    # Read before the lock too: from a shared cache this fetches the entry's meta.json into
    # the local mirror, making the directory the lock is taken on (and a done stage returns
    # without waiting for anyone's lock).
    profile = cache.load(key)
    if profile.meta.trace_ready:
        return {"key": key, "cached": True}
    with cache.extending(key):
        profile = cache.load(key)  # again under the lock: as a builder we waited for left it
        if profile.meta.trace_ready:
            return {"key": key, "cached": True}
        _build_trace(span, cache, key, profile)
    del profile
    give_memory_back()
    return {"key": key, "cached": False}


def _build_trace(span: SpanSource, cache: ProfileCache, key: str, profile: Profile) -> None:
    from .. import readers
    from ..analysis import derive, stored

    storage.materialize(span.logdir, (span.root, *span.files))
    started = time.time()
    with spilling(cache.entry_dir(key)):
        adopted = _adopt_early_trace(cache, key, profile)
        if profile.meta.trace_deferred and not adopted:
            try:
                part = readers.read(span, cache.entry_dir(key), stage="trace")
            except Exception as exc:
                part = None
                profile.errors.append(FileError(span.rel(span.root),
                                                f"could not read the trace: {exc!r}"))
                log.error("trace reader failed for %s\n%s", span.root, traceback.format_exc())
            if part is not None:
                profile.rows.update(part.rows)
                profile.errors.extend(part.errors)
                if part.meta.args_file:
                    profile.meta.args_file = part.meta.args_file
            give_memory_back(collect=False)
        before = stored.inputs_state(profile)
        _derive(derive.complete_trace, profile, span, "timeline index failed", "trace index")
        # The steps' windows, graph-mode phases, kernels' steps it may have rewritten.
        stored.refresh(profile, cache.entry_dir(key), before)
    profile.meta.trace_ready = True
    profile.meta.trace_seconds = round(time.time() - started, 3)
    cache.update(key, profile)


def build_early_trace(span: SpanSource, cache_root: str, key: str) -> dict:
    """The timeline stage's trace decoding, run beside the views stage of the same span
    (the loader sends it when a reader would otherwise be idle): the trace tables go to
    the entry's early trace directory, which the timeline stage then takes instead of
    decoding the trace itself. Why: on a large trace the views stage is a quarter of the
    wait for the timeline (6.7 of 28 s at 1 GB), and the second core idles through it.
    Only a trace the views stage leaves to the timeline stage (`readers.deferred_trace`)."""
    from .. import readers

    prepare_reader_process()
    cache = ProfileCache.at(cache_root)
    if meta_trace_ready(os.path.join(cache.entry_dir(key), META_FILE)) \
            or readers.deferred_trace(span) is None:
        return {"key": key, "cached": True}
    storage.materialize(span.logdir, (span.root, *span.files))
    with cache.building_early_trace(key) as work:
        if work is None:  # decoded, or being decoded, by another process
            return {"key": key, "cached": True}
        with spilling(work):
            part = readers.read(span, work, stage="trace")
        write_profile(work, part)  # its tables are there; meta.json says what they are
        os.rename(work, cache.early_trace_dir(key))
    del part
    give_memory_back()
    return {"key": key, "cached": False}


def _adopt_early_trace(cache: ProfileCache, key: str, profile: Profile) -> bool:
    """Move the span's early trace tables into its entry (`build_early_trace`); whether
    there were any. One that is still being decoded is waited for; one the entry does not
    need (its views stage read the trace itself) is removed."""
    early = cache.take_early_trace(key)
    if early is None:
        return False
    try:
        if not profile.meta.trace_deferred:
            return False
        part = open_profile(early)
        entry = cache.entry_dir(key)
        for name in os.listdir(early):  # the tables and the args file, not its meta.json
            if name != META_FILE and os.path.isfile(os.path.join(early, name)):
                os.replace(os.path.join(early, name), os.path.join(entry, name))
    except (OSError, ValueError, TypeError) as exc:  # decoded again instead
        log.warning("early trace of %s unusable (%r); decoding the trace again", key, exc)
        return False
    finally:
        shutil.rmtree(early, ignore_errors=True)
    profile.rows.update(part.rows)
    profile.errors.extend(part.errors)
    if part.meta.args_file:
        profile.meta.args_file = part.meta.args_file
    return True


def build_advice(span: SpanSource, cache_root: str, key: str) -> dict:
    """Third stage (runs in a reader process, once the timeline is served): the documents
    that read every table, the timeline's included — the advice and the host dispatch path —
    stored next to the entry, so that neither TensorBoard's process nor the first request
    pays for them. Kept out of the timeline stage because drawing the timeline does not
    need them, and on a large profile they take a third of that stage. Each document is
    made at most once: a stored one is kept."""
    from ..advisor import runs as advisor_runs
    from ..analysis import dispatch

    prepare_reader_process()
    cache = ProfileCache.at(cache_root)
    profile = cache.load(key)
    # The advisor's host_dispatch rule and the stored /dispatch document read the same
    # dispatch analysis: made once for both (the entry no longer changes here).
    with dispatch.shared_analysis(profile):
        try:
            advisor_runs.precompute(profile, span, cache_root, key)
        except Exception:
            log.error("advisor failed for %s (it runs again on request)\n%s", span.root,
                      traceback.format_exc())
        try:
            dispatch.precompute(profile, cache_root, key)
        except Exception:
            log.error("dispatch analysis failed for %s (it runs again on request)\n%s",
                      span.root, traceback.format_exc())
    del profile
    give_memory_back()
    return {"key": key, "cached": False}


_prepared = False


def prepare_reader_process() -> None:
    """Once per reader process (a spawned pool process or a Dask worker, never TensorBoard's
    own): import what both stages use, then freeze the objects that exist now (modules,
    classes, functions: they live as long as the process) out of the garbage collector's
    view. Without this each full collection in `give_memory_back` walks every object of
    pandas, pyarrow and our modules: ~70 ms per call, twice per span, which was the largest
    fixed cost of a small profile."""
    if _prepared:
        return
    if multiprocessing.parent_process() is None:
        return  # in-process loading (a thread of TensorBoard): leave its collector alone
    import_and_freeze()


def import_and_freeze() -> None:
    """`prepare_reader_process`'s work, in any process: also the fork server the readers
    are forked from (loading/reader_preload.py), whose readers then start prepared."""
    global _prepared
    _prepared = True
    from .. import readers
    from ..advisor import runs  # noqa: F401
    from ..analysis import derive, dispatch, stored, trace_index  # noqa: F401

    readers.import_readers()
    from ..arrow_tables import warm_metadata

    warm_metadata()  # (what every reader's first tables would make again)

    # No collection first: the imports leave ~750 unreachable objects (~190 KB) that a full
    # collection of ~118,000 objects would take 27 ms to find, on the path of every reader's
    # start (the fork server's); frozen, they stay as a few hundred KB never written to.
    gc.freeze()


# Arrow's allocator in the local readers (reader_preload.py), unless the user chose one.
READER_MEMORY_POOL = "jemalloc"


def use_reader_memory_pool() -> str:
    """Arrow's allocations of this reader process go to jemalloc where pyarrow has it and
    $ARROW_DEFAULT_MEMORY_POOL does not name another; returns the pool's name. Why: Arrow's
    default (mimalloc) hands freed pages back to the OS while a span is being read and
    faults them in again at the next allocation: ~3,900 page faults per 3.7 MB span, 20-30
    ms of kernel time (a sixth of a small span's CPU); with jemalloc ~1,100 and ~10 ms less
    (docs/benchmarks.md, fifteenth session). Memory (`benchmarks/reader_memory.py`, the
    300 MB span of scenario A, views -> timeline -> advice in one reader): jemalloc holds more
    right after the views stage (286-312 against 213-214 MB: its dirty pages decay over about
    a second instead of going back at once), but less once the reader waits for its next span
    (198 against 244-248 MB, two seconds idle) and less at the peak (551-556 against 599-623
    MB)."""
    import pyarrow as pa

    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        try:
            pa.set_memory_pool(getattr(pa, f"{READER_MEMORY_POOL}_memory_pool")())
        except (NotImplementedError, AttributeError):  # a pyarrow built without it
            pass
    return pa.default_memory_pool().backend_name


# A reader keeps the heap it freed while its resident memory is below this: the next span
# reuses those pages. Handed back after every span, a small span (B's 3.3 MB) faulted
# ~1,700 of them in again each time, and the trim itself cost ~1.4 ms.
KEEP_RESIDENT_BYTES = 256 << 20


def give_memory_back(collect: bool = True) -> None:
    """Return the freed heap of a big parse to the OS (the reader process lives on), once
    the process holds more than `KEEP_RESIDENT_BYTES`."""
    if collect:
        gc.collect()
    resident = resident_bytes()
    if resident is not None and resident < KEEP_RESIDENT_BYTES:
        return
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


def resident_bytes() -> int | None:
    """This process' resident memory (Linux: /proc/self/statm), or None where unknown."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
