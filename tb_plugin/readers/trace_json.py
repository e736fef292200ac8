"""Chrome-trace JSON (trace_view.json, msprof_*.json, *.pt.trace.json[.gz]) -> columns.

Why it is built this way: traces reach several GB. Building a Python dict per event costs
~1 KB each and makes peak memory a multiple of the file. Instead the file is memory-mapped
(gz files are first inflated to a temporary file), the event array is cut into chunks of a
few MB at event boundaries, and each chunk is decoded by msgspec into small typed structs
whose `ts`/`dur`/`args` stay raw bytes. The chunk becomes columns (numpy/pyarrow) and is
dropped before the next one; pages already processed are released from memory. Event
`args` are written as JSON text to an Arrow IPC side file (`args_path`), referenced by row,
so the details of any event can be fetched later without keeping them in memory.

Timestamps keep full precision: `"1700000000000100.250"` -> 1700000000000100250 ns.

The work is split by concept: `trace_chunks` maps the file and cuts and decodes its chunks,
`trace_builder` turns each chunk's events into column parts, `trace_tables` joins the parts
into `TraceTables`, `trace_args` keeps the args side file.
This module is the public entry point (`read_trace`, `read_traces`, `TraceTables`) and holds
the drivers that tie them together (`_read_one`, `_read_mapped`); `TraceTables` is
defined in `trace_tables`, the chunk loop of one byte range (`read_range`) in `trace_chunks`.
"""
from __future__ import annotations

import os
from typing import Callable


from .tolerant import InputError
from .trace_args import _ArgsSink
from .trace_chunks import _Utf8Repairs, _locate_events, _open_mapped, read_range
from .trace_builder import _Builder
from .trace_tables import TraceTables, _build_tables

CHUNK_BYTES = 8 << 20


def read_trace(path: str, **kw) -> TraceTables:
    """Read one Chrome-trace file into columns (see `read_traces`)."""
    return read_traces([path], **kw)


def read_traces(paths: list[str], *, args_path: str | None = None, tmp_dir: str | None = None,
                extract_args: dict[str, str] | None = None,
                extract_for: Callable[[str, str], bool] | None = None,
                chunk_bytes: int = CHUNK_BYTES, max_bytes: int = 64 << 30,
                decode_workers: int | None = None) -> TraceTables:
    """Read Chrome-trace files into one set of columns (tracks are shared by (pid, tid)).

    args_path: where to write the args side file (None: keep args in memory, for tests).
    extract_args: column name -> arg key, copied into slices/instants columns for events where
    `extract_for(ph, cat)` is true (default: all). Values are kept as Python objects.
    decode_workers: processes that decode one large file in parallel byte ranges (None: as
    many as the cores left free, for files of PARALLEL_MIN_BYTES or more; see
    `_decode_workers`).
    A file that cannot be read at all, or only in part, is listed in `.errors` as
    (path, reason); events before the damage are kept. Raises InputError only when no file
    yields any event (message of the first failure).
    """
    sink = _ArgsSink(args_path)
    b = _Builder(sink, extract_args, extract_for)
    errors: list[tuple[str, str]] = []
    metadata: dict = {}
    for path in paths:
        try:
            meta = _read_one(path, b, tmp_dir, chunk_bytes, max_bytes, errors, decode_workers)
            for k, v in meta.items():
                metadata.setdefault(k, v)
        except InputError as exc:
            errors.append((path, str(exc)))
    if b.count == 0 and errors:
        sink.close()
        raise InputError(errors[0][1])
    tables = _build_tables(b, metadata, args_path, None, errors)
    tables.args = sink.close()  # after B/E pairing, which adds rows
    return tables


def _read_one(path, b, tmp_dir, chunk_bytes, max_bytes, errors, workers=None) -> dict:
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}") from None
    if size == 0:
        raise InputError("file is empty")
    if size > max_bytes:
        raise InputError(f"file is {size / 2**30:.1f} GiB, larger than the {max_bytes >> 30} GiB limit")
    try:
        mm, tmp_name, gz_error = _open_mapped(path, tmp_dir)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}") from None
    try:
        if mm is None:
            raise InputError(gz_error or "file is empty")
        return _read_mapped(mm, b, chunk_bytes, gz_error, path, errors,
                            mapped_path=tmp_name or path, tmp_dir=tmp_dir, workers=workers)
    finally:
        if mm is not None:
            mm.close()
        if tmp_name:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass


def _read_mapped(mm, b: "_Builder", chunk_bytes, gz_error, path, errors, *,
                 mapped_path: str | None = None, tmp_dir: str | None = None,
                 workers: int | None = None) -> dict:
    repairs = _Utf8Repairs()
    start, end, metadata, error = _locate_events(mm, repairs)
    if start == end == 0:
        raise InputError(error or "no trace events")
    before = b.count
    pos = start + 1  # after '['
    while pos < end and mm[pos:pos + 1] in (b" ", b"\n", b"\r", b"\t"):
        pos += 1
    if pos < end and mm[pos:pos + 1] == b"]":
        pos = end
    from . import trace_ranges  # (it imports this module)

    n_workers, grow = trace_ranges.decode_plan(end - pos, workers)
    if (n_workers > 1 or grow) and error is None and mapped_path:
        processes, error = trace_ranges.read_dynamic(mm, mapped_path, pos, end, b,
                                                     chunk_bytes, tmp_dir, repairs,
                                                     n_workers, grow)
        b.decode_ranges = max(b.decode_ranges, processes)
    else:
        error = read_range(mm, pos, end, b, chunk_bytes, repairs, error)
    if gz_error:
        error = gz_error if error is None else f"{gz_error}; {error}"
    if error and b.count == before:
        raise InputError(error)
    if repairs.sequences:
        errors.append((path, f"not valid UTF-8: {repairs.sequences} invalid byte sequence(s)"
                             " in names, args or categories were replaced by U+FFFD"
                             " (every event kept)"))
    if error:
        errors.append((path, f"{error} (kept the {b.count - before} events before it)"))
    return metadata


