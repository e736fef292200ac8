"""One large trace file decoded in parallel byte ranges (`trace_json.read_traces`).

Why: decoding is CPU-bound per event; a 1 GB trace is ~25 s on one core. Its event array is
cut at event boundaries into ranges, decoded by spawned processes (each with its own
builder, args side file and interned values) while the calling process decodes the first
range; the parts are then merged in file order, codes remapped to the caller's builder.
The cuts are exactly where the one-process path cuts its chunks, so the merged tables are
the same byte for byte. Any damage in a range (a truncated or invalid file) falls back to
the one-process path, which keeps the events before the damage and says where it is.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import os
import pickle
import shutil
import tempfile
import time

import numpy as np

from ..spawned import context as spawned_context
from ..spawned import exit_with_parent
from .trace_args import _ArgsSink
from .trace_builder import _Builder
from .trace_chunks import _BOUNDARY, _Utf8Repairs, _map, read_range

log = logging.getLogger(__name__)


PARALLEL_MIN_BYTES = 128 << 20
MAX_DECODE_WORKERS = 4
# What the calling process decodes while a range's process starts (~0.6 s of imports).
SPAWN_LEAD_BYTES = 32 << 20


def decode_workers(size: int) -> int:
    """How many processes decode a file of `size` bytes: `$NPU_PROFILER_DECODE_WORKERS`, else
    1 below PARALLEL_MIN_BYTES, else the cores not busy now (this process counts as free)."""
    env = os.environ.get("NPU_PROFILER_DECODE_WORKERS", "").strip()
    if env.isdigit():
        return max(1, min(int(env), 16))
    if size < PARALLEL_MIN_BYTES:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
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
        b = read_stat()
        total = sum(b) - sum(a)
        idle = (b[3] + b[4]) - (a[3] + a[4])  # idle + iowait
        if total > 0:
            return max(0.0, min(1.0, 1.0 - idle / total)) * cpus
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def _cpu_times() -> list[int]:
    """The machine's CPU time counters (user nice system idle iowait irq softirq steal)."""
    with open("/proc/stat") as fh:
        return [int(v) for v in fh.readline().split()[1:9]]


def split_ranges(mm, pos: int, end: int, k: int, chunk_bytes: int) -> list[tuple[int, int]]:
    """k byte ranges of the event array made of whole chunks: the cuts are exactly where the
    one-process path cuts its chunks, so every chunk, every interned value and every args
    row comes out as that path makes them (the merged tables are the same, byte for byte)."""
    cuts = []
    p = pos
    while True:
        m = (_BOUNDARY.search(mm, p + chunk_bytes, end) if p + chunk_bytes < end - 1
             else None)
        if m is None:
            break
        cuts.append((m.start() + 1, m.end() - 1))  # (end of a chunk, start of the next)
        p = m.end() - 1
    if not cuts:
        return [(pos, end)]
    n = len(cuts) + 1  # chunks
    k = min(k, n)
    if k < 2:
        return [(pos, end)]
    # The calling process starts on its range at once, the others after their process has
    # started and imported (SPAWN_LEAD_BYTES of decoding): the first range is longer by
    # that much more than the others, so that all end together (else the caller waits).
    lead = min(SPAWN_LEAD_BYTES // max(chunk_bytes, 1), (n - k) // k)
    first = round((n - lead) / k) + lead
    chosen = [cuts[first - 1]] + [cuts[first + round(i * (n - first) / (k - 1)) - 1]
                                  for i in range(1, k - 1)]
    bounds, lo = [], pos
    for chunk_end, next_start in chosen:
        bounds.append((lo, chunk_end))
        lo = next_start
    bounds.append((lo, end))
    return bounds


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
    }


def read_parallel(mm, mapped_path: str, pos: int, end: int, k: int, b: "_Builder",
                   chunk_bytes: int, tmp_dir: str | None, repairs: _Utf8Repairs) -> int:
    """Decode mm[pos:end] in up to k ranges into `b`; how many, or 0 (and `b` untouched)
    when it could not (no process could start, or a range is damaged: the caller reads the
    file in one process)."""
    if multiprocessing.current_process().daemon:  # e.g. a Dask worker: no child processes
        return 0
    try:
        pickle.dumps((b.extract_args, b.extract_for))
    except Exception:  # a filter that is not a module-level function
        return 0
    ranges = split_ranges(mm, pos, end, k, chunk_bytes)
    if len(ranges) < 2:
        return 0
    work = tempfile.mkdtemp(prefix="trace-ranges-", dir=tmp_dir)
    states: list[dict] = []
    try:
        with cf.ProcessPoolExecutor(len(ranges) - 1,
                                    mp_context=spawned_context(),
                                    initializer=exit_with_parent) as ex:
            futures = [ex.submit(decode_range_job, mapped_path, lo, hi, b.extract_args or None,
                                 b.extract_for, os.path.join(work, f"args-{i}.arrow"),
                                 chunk_bytes)
                       for i, (lo, hi) in enumerate(ranges[1:], 1)]
            first = _Builder(_ArgsSink(os.path.join(work, "args-0.arrow")),
                             b.extract_args or None, b.extract_for)
            first_repairs = _Utf8Repairs()
            err = read_range(mm, ranges[0][0], ranges[0][1], first, chunk_bytes,
                                 first_repairs)
            first.sink.close()
            states.append(builder_state(first, first_repairs, err))
            del first
            for f in futures:
                states.append(f.result())
    except Exception as exc:  # no process could start or run: decode in this one
        log.warning("parallel trace decoding not used: %r", exc)
        shutil.rmtree(work, ignore_errors=True)
        return 0
    if any(st["error"] for st in states):
        shutil.rmtree(work, ignore_errors=True)
        return 0
    try:
        for i, st in enumerate(states):
            merge_state(b, st, os.path.join(work, f"args-{i}.arrow"))
            repairs.sequences += st["repairs"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return len(ranges)


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
