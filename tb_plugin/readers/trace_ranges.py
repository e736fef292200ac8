"""One large trace file decoded in pieces by this process and helper processes
(`trace_json.read_traces`).

Why: decoding is CPU-bound per event; a 1 GB trace is ~16 s on one core. Its event array
is cut at event boundaries into pieces of ~PIECE_BYTES. This process decodes pieces from
the front into its own builder, which is the one-process path itself; spawned helpers
(each with its own builder, args side file and interned values) take pieces from the back,
one at a time, and their parts are merged after this process' in file order, codes
remapped to its builder. The cuts are exactly where the one-process path cuts its chunks,
so the tables are the same byte for byte. Helpers start for the cores free at the start,
and one more joins whenever a core was free during two pieces in a row (`read_dynamic`):
a trace decoded beside a views stage gets the core those views leave. Any damage in a
helper's piece (a truncated or invalid file) makes this process read the rest alone, which
keeps the events before the damage and says where it is, as the one-process path does.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import os
import pickle
import shutil
import tempfile
import threading
import time

import numpy as np

from ..spawned import context as spawned_context
from ..spawned import exit_with_parent
from .trace_args import _ArgsSink
from .trace_builder import _Builder
from .trace_chunks import _BOUNDARY, _Utf8Repairs, _map, read_range, read_until

log = logging.getLogger(__name__)


PARALLEL_MIN_BYTES = 128 << 20
MAX_DECODE_WORKERS = 4
# The unit of work handed out: ~0.5 s of decoding, so that the calling process and its
# helpers end within about that of each other, whenever the helpers joined.
PIECE_BYTES = 32 << 20
# A helper joins when this much of a core was idle while the last piece was decoded.
GROW_FREE_CORES = 0.75


def decode_plan(size: int, workers: int | None = None) -> tuple[int, bool]:
    """(processes to start with, whether helpers may join later) for a file of `size`
    bytes: `workers` when given, or `$NPU_PROFILER_DECODE_WORKERS`, both fixed; else
    `decode_workers`, and more as cores free up when the file is large enough."""
    if workers is not None:
        return workers, False
    fixed = os.environ.get("NPU_PROFILER_DECODE_WORKERS", "").strip().isdigit()
    return decode_workers(size), not fixed and size >= PARALLEL_MIN_BYTES


def decode_workers(size: int) -> int:
    """How many processes decode a file of `size` bytes: `$NPU_PROFILER_DECODE_WORKERS`, else
    1 below PARALLEL_MIN_BYTES, else the cores not busy now (this process counts as free)."""
    env = os.environ.get("NPU_PROFILER_DECODE_WORKERS", "").strip()
    if env.isdigit():
        return max(1, min(int(env), 16))
    if size < PARALLEL_MIN_BYTES:
        return 1
    cpus = _cpu_count()
    busy = busy_cores(cpus)
    return max(1, min(MAX_DECODE_WORKERS, cpus, int(cpus - busy + 1.5)))


def busy_cores(cpus: int, sample_s: float = 0.2, read_stat=None) -> float:
    """How many of `cpus` cores are busy now: the machine's busy share of CPU time over
    `sample_s` (/proc/stat), times `cpus`. Not the load average: it lags by a minute, so
    right after the views stage (a reader at 100 % and Arrow's CSV threads) it said "busy"
    and a 1 GB trace was decoded in one process while both cores were idle. Falls back
    to the 1-minute load average where /proc/stat cannot be read."""
    read_stat = read_stat or _cpu_times
    try:
        a = read_stat()
        time.sleep(sample_s)
        share = _idle_share(a, read_stat())
        if share is not None:
            return (1.0 - share) * cpus
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def _idle_share(a: list[int] | None, b: list[int] | None) -> float | None:
    """The machine's idle share of CPU time (idle + iowait) between two `_cpu_times`
    samples, in [0, 1]; None when unknown."""
    if a is None or b is None:
        return None
    total = sum(b) - sum(a)
    if total <= 0:
        return None
    return max(0.0, min(1.0, ((b[3] + b[4]) - (a[3] + a[4])) / total))


def _cpu_times() -> list[int]:
    """The machine's CPU time counters (user nice system idle iowait irq softirq steal)."""
    with open("/proc/stat") as fh:
        return [int(v) for v in fh.readline().split()[1:9]]


def split_pieces(mm, pos: int, end: int, chunk_bytes: int,
                 piece_bytes: int = 0) -> list[tuple[int, int]]:
    """The event array mm[pos:end] as byte ranges of whole chunks, each at least
    `piece_bytes` long but the last: the cuts are exactly where the one-process path cuts
    its chunks, so every chunk, every interned value and every args row comes out as that
    path makes them (the merged tables are the same, byte for byte)."""
    pieces, lo, p = [], pos, pos
    while p + chunk_bytes < end - 1:
        m = _BOUNDARY.search(mm, p + chunk_bytes, end)
        if m is None:
            break
        chunk_end, next_start = m.start() + 1, m.end() - 1
        if chunk_end - lo >= piece_bytes:
            pieces.append((lo, chunk_end))
            lo = next_start
        p = next_start
    pieces.append((lo, end))
    return pieces


def piece_bytes_for(size: int, workers: int) -> int:
    """Pieces of PIECE_BYTES, smaller for a file that would not give each of `workers`
    processes a few of them."""
    return max(1, min(PIECE_BYTES, size // max(1, 4 * workers)))


def decode_range_job(mapped_path: str, lo: int, hi: int, extract_args, extract_for,
                      args_path: str, chunk_bytes: int) -> dict:
    """Decode one range in a worker process; its builder's state, picklable."""
    mm = _map(mapped_path)
    try:
        b = _Builder(_ArgsSink(args_path), extract_args, extract_for)
        repairs = _Utf8Repairs()
        err = read_range(mm, lo, hi, b, chunk_bytes, repairs)
        b.sink.close()
        return builder_state(b, repairs, err)
    finally:
        mm.close()


def builder_state(b: "_Builder", repairs: _Utf8Repairs, err: str | None) -> dict:
    return {
        "error": err, "repairs": repairs.sequences, "count": b.count, "args_rows": b.sink.rows,
        "tracks": b.tracks.values, "names": b.names.values, "cats": b.cats.values,
        "x_parts": b.x_parts, "i_parts": b.i_parts, "flow_parts": b.flow_parts,
        "counter_rows": b.counter_rows, "be_events": b.be_events,
        "meta_events": [(n, p, t, bytes(a)) for n, p, t, a in b.meta_events],
        "pid": os.getpid(),
    }


def can_use_helpers(b: "_Builder") -> bool:
    """Whether helper processes can decode for this builder: not from a daemonic process
    (a Dask worker cannot have children), and only with filters that can be pickled."""
    if multiprocessing.current_process().daemon:
        return False
    try:
        pickle.dumps((b.extract_args, b.extract_for))
    except Exception:  # a filter that is not a module-level function
        return False
    return True


class _Pieces:
    """Who decodes which piece: the calling process from the front, helper processes from
    the back, each helper one piece at a time (a new one when it hands one back), so the
    two meet wherever the work is balanced, whenever helpers joined."""

    def __init__(self, pieces, submit):
        self.pieces = pieces
        self.front = 0  # the next piece for the calling process
        self.back = len(pieces)  # pieces [back:] are the helpers'
        self.jobs: dict[int, cf.Future] = {}
        self.failed = False  # a helper's piece failed: the caller reads on alone
        self._submit = submit
        self._lock = threading.Lock()

    def take_front(self) -> int | None:
        with self._lock:
            if self.failed or self.front >= self.back:
                return None
            self.front += 1
            return self.front - 1

    def give_helper(self) -> bool:
        """One more piece to a helper, from the back (never the caller's next one)."""
        with self._lock:
            if self.failed or self.back - 1 <= self.front:
                return False
            self.back -= 1
            i = self.back
            try:
                fut = self._submit(i, *self.pieces[i])
            except Exception as exc:  # no process could start: the caller reads on alone
                log.warning("parallel trace decoding not used: %r", exc)
                self.failed = True
                return False
            self.jobs[i] = fut
        fut.add_done_callback(self._done)
        return True

    def _done(self, fut: cf.Future) -> None:
        ok = not fut.cancelled() and fut.exception() is None and not fut.result()["error"]
        if not ok:
            with self._lock:
                self.failed = True
            return
        self.give_helper()

    def fail(self) -> None:
        with self._lock:
            self.failed = True


def read_dynamic(mm, mapped_path: str, pos: int, end: int, b: "_Builder", chunk_bytes: int,
                 tmp_dir: str | None, repairs: _Utf8Repairs, workers: int,
                 grow: bool) -> tuple[int, str | None]:
    """Decode mm[pos:end] into `b` with `workers` processes (this one and workers - 1
    helpers), and, with `grow`, one more helper whenever a core has been free during the
    last two pieces (up to MAX_DECODE_WORKERS): a trace decoded beside a long views stage gets
    the second core the moment those views are done. Returns (processes whose pieces were
    merged, the reason the decoding ended early or None).

    The tables are those of the one-process path: this process decodes its pieces into
    `b` as that path does, the helpers' pieces are merged after them in file order; any
    failure of a helper (a damaged range, a process that died) or a piece that does not
    start where this process' chunks end makes this process read the rest alone."""
    max_helpers = max(workers - 1, 0)
    if grow:
        max_helpers = max(max_helpers, min(MAX_DECODE_WORKERS, _cpu_count()) - 1)
    if max_helpers == 0 or not can_use_helpers(b):
        return 1, read_range(mm, pos, end, b, chunk_bytes, repairs)
    pieces = split_pieces(mm, pos, end, chunk_bytes,
                          piece_bytes_for(end - pos, max(workers, 2)))
    if len(pieces) < 2:
        return 1, read_range(mm, pos, end, b, chunk_bytes, repairs)
    work = tempfile.mkdtemp(prefix="trace-ranges-", dir=tmp_dir)
    # (no process starts before the first piece is given to a helper)
    executor = cf.ProcessPoolExecutor(max_helpers, mp_context=spawned_context(),
                                      initializer=exit_with_parent)

    def submit(i: int, lo: int, hi: int) -> cf.Future:
        return executor.submit(decode_range_job, mapped_path, lo, hi, b.extract_args or None,
                               b.extract_for, os.path.join(work, f"args-{i}.arrow"),
                               chunk_bytes)

    share = _Pieces(pieces, submit)
    helpers = 0
    try:
        for _ in range(max(workers - 1, 0)):
            helpers += share.give_helper()
        at, err = pos, None
        before, was_free = _busy_sample(), False
        while (i := share.take_front()) is not None:
            lo, _hi = pieces[i]
            if at != lo:  # a cut the chunks did not make (a boundary inside a string)
                share.fail()
                break
            stop = pieces[i + 1][0] if i + 1 < len(pieces) else end
            at, err = read_until(mm, at, end, stop, b, chunk_bytes, repairs)
            if err:  # the one-process path stops here too, with what came before
                share.fail()
                return 1, err
            if grow and helpers < max_helpers:
                # Free during two pieces in a row, not counting the first (its window holds
                # this process' own start): a helper never joins a views stage that only
                # paused, where it would take the core the views are waited for on.
                now = _busy_sample()
                free = i > 0 and _free_cores(before, now) >= GROW_FREE_CORES
                if free and was_free:
                    helpers += share.give_helper()
                    free = False
                was_free, before = free, now
        if share.jobs:
            cf.wait(list(share.jobs.values()))
        states = {i: f.result() for i, f in share.jobs.items()
                  if not f.cancelled() and f.exception() is None}
        if share.failed or len(states) != len(share.jobs) \
                or any(st["error"] for st in states.values()):
            if share.jobs:
                log.warning("parallel trace decoding not used for the rest of the file"
                            " (a helper's range failed); read on in one process")
            return 1, read_range(mm, at, end, b, chunk_bytes, repairs)
        for i in sorted(states):
            merge_state(b, states[i], os.path.join(work, f"args-{i}.arrow"))
            repairs.sequences += states[i]["repairs"]
        return 1 + len({st["pid"] for st in states.values()}), None
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(work, ignore_errors=True)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _busy_sample() -> list[int] | None:
    try:
        return _cpu_times()
    except (OSError, ValueError, IndexError):
        return None


def _free_cores(a: list[int] | None, b: list[int] | None) -> float:
    """Cores idle between two /proc/stat samples (0 when unknown)."""
    share = _idle_share(a, b)
    return 0.0 if share is None else share * _cpu_count()


def merge_state(b: "_Builder", st: dict, args_file: str) -> None:
    """Append one range's parts to `b`, in order: codes remapped, args rows offset."""
    track_map = b.tracks.codes(st["tracks"]) if st["tracks"] else np.zeros(0, np.int32)
    name_map = b.names.codes(st["names"]) if st["names"] else np.zeros(0, np.int32)
    cat_map = b.cats.codes(st["cats"]) if st["cats"] else np.zeros(0, np.int32)
    first_row = b.sink.add_file(args_file) if st["args_rows"] else b.sink.rows
    for key, target in (("x_parts", b.x_parts), ("i_parts", b.i_parts),
                        ("flow_parts", b.flow_parts)):
        for part in st[key]:
            part["track_id"] = track_map[part["track_id"]]
            part["name"] = name_map[part["name"]]
            part["cat"] = cat_map[part["cat"]]
            if "args_row" in part:
                part["args_row"] = part["args_row"] + first_row
            target.append(part)
    b.counter_rows.extend((int(track_map[t]), ts, series, value)
                          for t, ts, series, value in st["counter_rows"])
    b.be_events.extend((ph, int(track_map[t]), ts, name, cat, args)
                       for ph, t, ts, name, cat, args in st["be_events"])
    b.meta_events.extend(st["meta_events"])
    b.count += st["count"]
