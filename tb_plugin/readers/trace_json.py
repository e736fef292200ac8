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
"""
from __future__ import annotations

import dataclasses
import mmap
from itertools import repeat
from operator import attrgetter, itemgetter
import os
import re
import tempfile
import zlib
from typing import Any, Callable

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .tolerant import InputError, us_spans_to_ns, us_text_to_ns

CHUNK_BYTES = 8 << 20
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_BARE_NA = re.compile(rb'(?<!")N/A(?!")')


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    name: Any = ""
    cat: Any = None
    pid: Any = None
    tid: Any = None
    ts: msgspec.Raw = msgspec.Raw()
    dur: msgspec.Raw = msgspec.Raw()
    id: Any = None
    id2: Any = None
    s: Any = None
    args: msgspec.Raw = msgspec.Raw()


class _TraceObject(msgspec.Struct):
    traceEvents: msgspec.Raw = msgspec.Raw()


_EVENTS = msgspec.json.Decoder(list[_Event])
_ANY = msgspec.json.Decoder()


@dataclasses.dataclass
class TraceTables:
    """What a trace file holds, as columns.

    tracks:   track_id, pid, tid, process, thread, process_sort, thread_sort, process_labels
    slices:   track_id, start_ns, dur_ns, depth, name, cat, args_row (+ extracted arg columns)
    flows:    flow_id, name, cat, phase, track_id, ts_ns
    counters: track_id, ts_ns, series, value
    instants: track_id, ts_ns, name, cat, args_row (+ extracted arg columns)
    metadata: the top-level object's other keys (deviceProperties, distributedInfo, ...)
    args:     args text by args_row: a pyarrow Table in memory, or None when written to
              `args_path`
    errors:   (path, reason) for files truncated/invalid part-way (events before it are kept)
              or not readable at all
    """

    tracks: pd.DataFrame
    slices: pd.DataFrame
    flows: pd.DataFrame
    counters: pd.DataFrame
    instants: pd.DataFrame
    metadata: dict
    args_path: str | None = None
    args: pa.Table | None = None
    errors: list = dataclasses.field(default_factory=list)
    event_count: int = 0
    decode_ranges: int = 1  # byte ranges decoded by separate processes (1: one process)


def _key(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


class _ArgsSink:
    """Collects args JSON text in event order, to a file or in memory."""

    def __init__(self, path: str | None):
        self.path = path
        self.rows = 0
        self._writer = None
        self._batches: list[pa.RecordBatch] = []
        self._schema = pa.schema([("args", pa.string())])

    def add(self, texts: list) -> int:
        first = self.rows
        self._write(pa.record_batch([pa.array(texts, pa.string())], schema=self._schema))
        self.rows += len(texts)
        return first

    def add_raw(self, raws: list, lens: np.ndarray | None = None) -> int:
        """`add` of raw JSON args values (msgspec.Raw, valid UTF-8; `lens`: their lengths,
        when known): one buffer, no Python string per event; an event without args is a
        null."""
        first = self.rows
        self._write(pa.record_batch([_raw_array(raws, pa.string(), lens)],
                                    schema=self._schema))
        self.rows += len(raws)
        return first

    def add_file(self, path: str) -> int:
        """Append the rows of another sink's args file; the row number of the first."""
        first = self.rows
        with pa.memory_map(path) as src:
            reader = pa.ipc.open_file(src)
            for i in range(reader.num_record_batches):
                batch = reader.get_batch(i)
                self._write(pa.record_batch([batch.column(0)], schema=self._schema))
                self.rows += batch.num_rows
        return first

    def _write(self, batch: pa.RecordBatch) -> None:
        if self.path:
            if self._writer is None:
                self._writer = pa.ipc.new_file(self.path, self._schema)
            self._writer.write_batch(batch)
        else:
            self._batches.append(batch)

    def close(self) -> pa.Table | None:
        if self.path:
            if self._writer is None:
                self._writer = pa.ipc.new_file(self.path, self._schema)
            self._writer.close()
            return None
        return pa.Table.from_batches(self._batches, schema=self._schema)


def _open_mapped(path: str, tmp_dir: str | None):
    """Memory-map the file, inflating .gz first to a temp file. Returns (mmap, cleanup)."""
    src = path
    tmp_name = None
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        fd, tmp_name = tempfile.mkstemp(prefix="trace-", suffix=".json", dir=tmp_dir)
        reason = _inflate(path, fd)
        return _map(tmp_name), tmp_name, reason
    return _map(src), tmp_name, None


def _inflate(path: str, fd: int) -> str | None:
    """Inflate a gzip file into fd, block by block; a damaged or truncated stream keeps
    everything inflated before the damage. Returns a reason when the stream was damaged."""
    reason = None
    with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while True:
                block = src.read(1 << 20)
                if not block:
                    if not d.eof:
                        reason = "gzip data is truncated"
                    break
                out.write(d.decompress(block))
                while d.eof and d.unused_data:  # concatenated gzip members
                    rest = d.unused_data
                    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    out.write(d.decompress(rest))
            out.write(d.flush())
        except zlib.error as exc:
            reason = f"gzip data is damaged ({exc})"
    return reason


def _map(path: str):
    size = os.path.getsize(path)
    if size == 0:
        return None
    with open(path, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def _release(mm, start: int, end: int) -> None:
    """Drop already-processed pages from this process's resident memory."""
    if mm is None or not hasattr(mm, "madvise"):
        return
    page = mmap.PAGESIZE
    a = (start // page) * page
    b = (end // page) * page
    if b > a:
        try:
            mm.madvise(mmap.MADV_DONTNEED, a, b - a)
        except (OSError, ValueError):
            pass


def _locate_events(mm, repairs: "_Utf8Repairs") -> tuple[int, int, dict, str | None]:
    """Find the event array: (start offset of '[', end offset after ']', metadata, error)."""
    n = len(mm)
    i = 0
    head = mm[: min(n, 4096)]
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    i = len(head) - len(stripped)
    if not stripped:
        return 0, 0, {}, "file is empty"
    first = stripped[:1]
    if first == b"[":
        return i, n, {}, None
    if first != b"{":
        return 0, 0, {}, "not a Chrome trace: expected a JSON array or an object with traceEvents"
    try:
        obj = msgspec.json.decode(mm, type=_TraceObject)
        raw = obj.traceEvents
        meta_ok = True
    except msgspec.DecodeError as exc:
        raw = None
        meta_ok = False
        err = str(exc)
    except RecursionError:  # nesting deeper than any trace: read the events as far as they go
        raw = None
        meta_ok = False
        err = "JSON is nested too deeply"
    if meta_ok:
        view = memoryview(raw)
        if view.nbytes == 0:
            return 0, 0, {}, "object has no traceEvents array"
        # Offset of the Raw slice inside the map.
        start = _find_subview_offset(mm, view)
        length = view.nbytes
        view.release()
        del raw, obj
        metadata = _top_level_metadata(mm, start, start + length, repairs)
        # The validating pass touched every page: let them go before the real pass.
        _release(mm, 0, len(mm))
        return start, start + length, metadata, None
    # Invalid/truncated object: find '"traceEvents"' and parse the array as far as it goes.
    pos = mm.find(b'"traceEvents"')
    if pos < 0:
        return 0, 0, {}, f"invalid JSON: {err}"
    br = mm.find(b"[", pos)
    if br < 0:
        return 0, 0, {}, f"invalid JSON: {err}"
    return br, n, {}, f"invalid JSON: {err}"


def _find_subview_offset(mm, view: memoryview) -> int:
    """The Raw returned by msgspec references the mapped buffer; find where it starts."""
    probe = bytes(view[: min(64, view.nbytes)])
    pos = mm.find(b'"traceEvents"')
    while pos >= 0:
        j = mm.find(probe, pos)
        if j >= 0:
            return j
        pos = mm.find(b'"traceEvents"', pos + 1)
    return mm.find(probe)


class _Meta(msgspec.Struct):
    deviceProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    displayTimeUnit: Any = None
    schemaVersion: Any = None
    traceName: Any = None
    Framework: Any = None


def _top_level_metadata(mm, start: int, end: int, repairs: "_Utf8Repairs") -> dict:
    """Top-level keys other than traceEvents, without decoding the events again."""
    head = bytes(mm[:start]) + b"[]" + bytes(mm[end:])
    head, replaced = _valid_utf8(head)
    try:
        meta = msgspec.json.decode(head, type=_Meta)
    except msgspec.DecodeError:
        return {}
    repairs.sequences += replaced
    return {k: getattr(meta, k) for k in _Meta.__struct_fields__ if getattr(meta, k) is not None}


def _next_chunk(mm, pos: int, end: int, target: int,
                repairs: "_Utf8Repairs") -> tuple[list[_Event] | None, int, str | None]:
    """Decode events from `pos` (just after '[' or ',') to a boundary near pos+target."""
    search_from = pos + target
    attempts = 0
    while True:
        if search_from >= end - 1:
            # Last chunk: up to the closing bracket.
            body = mm[pos:end]
            text = body.rstrip()
            if text.endswith(b"]"):
                data = b"[" + text[:-1] + b"]" if not text.startswith(b"[") else text
            else:
                data = b"[" + text + b"]"
            evs, err = _decode(data, repairs)
            if evs is not None:
                return evs, end, None
            return _salvage(mm, pos, end, err, repairs)
        m = _BOUNDARY.search(mm, search_from, end)
        if m is None:
            search_from = end
            continue
        cut = m.start() + 1
        data = b"".join((b"[", memoryview(mm)[pos:cut], b"]"))  # one copy of the chunk
        evs, err = _decode(data, repairs)
        if evs is not None:
            return evs, m.end() - 1, None
        attempts += 1
        if attempts >= 4:
            return _salvage(mm, pos, cut, err, repairs)
        search_from = m.end()


_REPLACEMENT = "\ufffd".encode()


class _Utf8Repairs:
    """Invalid UTF-8 found in one file: how many byte sequences became U+FFFD."""

    def __init__(self):
        self.sequences = 0


def _valid_utf8(data: bytes) -> tuple[bytes, int]:
    """`data` with every invalid UTF-8 sequence replaced by U+FFFD, and how many were.

    msgspec refuses invalid UTF-8 in a string it decodes (one bad byte in one name would end
    the file there) and copies it unchecked into Raw fields (args), so a chunk is made valid
    before it is decoded. The common case costs one ASCII scan; a chunk with non-ASCII text
    has only its runs of non-ASCII bytes validated (a multi-byte sequence never contains an
    ASCII byte, so the text is valid exactly when each run is); only a chunk that really
    holds invalid bytes is copied.
    """
    if data.isascii() or _high_runs_valid(data):
        return data, 0
    fixed = data.decode("utf-8", "replace").encode("utf-8")
    return fixed, fixed.count(_REPLACEMENT) - data.count(_REPLACEMENT)


def _high_runs_valid(data: bytes) -> bool:
    """Whether the runs of bytes >= 0x80 of `data` are valid UTF-8 (3-4x faster than
    decoding the whole chunk, which builds a wide str of it)."""
    arr = np.frombuffer(data, np.uint8)
    at = np.flatnonzero(arr >= 0x80)
    high = arr[at]
    gaps = np.flatnonzero(np.diff(at) > 1) + 1
    try:
        np.insert(high, gaps, 0x20).tobytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode(data: bytes, repairs: _Utf8Repairs | None = None):
    """Events of one chunk, or (None, reason). With `repairs`, invalid UTF-8 is replaced
    first and counted there only when this decode is kept (a chunk cut at a false boundary
    is decoded again)."""
    replaced = 0
    if repairs is not None:
        data, replaced = _valid_utf8(data)
    try:
        evs = _EVENTS.decode(data)
    except msgspec.DecodeError as exc:
        evs = None
        if b"N/A" in data:
            try:
                evs = _EVENTS.decode(_BARE_NA.sub(b'"N/A"', data))
            except msgspec.DecodeError:
                pass
        if evs is None:
            return None, str(exc)
    except msgspec.ValidationError as exc:
        return None, f"unexpected event structure: {exc}"
    except RecursionError:
        return None, "JSON is nested too deeply"
    if repairs is not None:
        repairs.sequences += replaced
    return evs, None


def _salvage(mm, pos: int, end: int, err: str | None, repairs: _Utf8Repairs):
    """A damaged region: keep the whole events before the damage, then stop."""
    good: list[_Event] = []
    lo = pos
    # Walk boundaries one event at a time is too slow for big regions; bisect on boundaries.
    bounds = [m.start() + 1 for m in _BOUNDARY.finditer(mm, pos, end)]
    best = None
    left, right = 0, len(bounds) - 1
    while left <= right:
        mid = (left + right) // 2
        trial = _Utf8Repairs()
        evs, _ = _decode(b"[" + mm[lo:bounds[mid]] + b"]", trial)
        if evs is not None:
            best = (evs, mid, trial.sequences)
            left = mid + 1
        else:
            right = mid - 1
    if best is not None:
        good = best[0]
        repairs.sequences += best[2]
    reason = f"JSON is truncated or invalid after byte {bounds[best[1]] if best else pos}: {err}"
    return good, -1, reason


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


class _Interner:
    """Values -> dense int codes, shared by all chunks (cheap columns, one category list)."""

    def __init__(self):
        self.table: dict = {}
        self.values: list = []

    def codes(self, values) -> np.ndarray:
        get = self.table.get
        n = len(values)
        try:  # C-level lookups; -1 where a value is new
            codes = np.fromiter(map(get, values, repeat(-1)), np.int32, n)
        except TypeError:  # an unhashable value (a list as a name, a dict as a pid)
            values = [_hashable(v) for v in values]
            codes = np.fromiter(map(get, values, repeat(-1)), np.int32, n)
        new = np.flatnonzero(codes == -1)
        if len(new):  # Python only for the values not seen before (and their repeats)
            table = self.table
            for i in new.tolist():
                v = values[i]
                c = table.get(v)
                if c is None:
                    c = table[v] = len(self.values)
                    self.values.append(v)
                codes[i] = c
        return codes

    def finalize(self, normalize) -> tuple[list, np.ndarray]:
        """(unique normalized values, remap from code to index in them)."""
        uniq: dict = {}
        remap = np.empty(len(self.values), dtype=np.int32)
        for i, v in enumerate(self.values):
            k = normalize(v)
            j = uniq.get(k)
            if j is None:
                j = uniq[k] = len(uniq)
            remap[i] = j
        return list(uniq), remap


def _hashable(v):
    """`v`, or its text where it (or a member of a (pid, tid) pair) cannot be a dict key."""
    if isinstance(v, tuple):
        return tuple(_hashable(x) for x in v)
    return v if isinstance(v, (str, int, float)) or v is None else _key(v)


def _cat_text(v) -> str:
    """A category as the filters of extracted args see it (the text of a string, else "")."""
    return v if isinstance(v, str) else ""


def _text(v) -> str:
    return v if isinstance(v, str) else _key(v)


class _Builder:
    def __init__(self, sink: _ArgsSink, extract_args, extract_for):
        self.sink = sink
        self.tracks = _Interner()   # (pid, tid) as written
        self.names = _Interner()
        self.cats = _Interner()
        self.meta_events: list[tuple[str, str, str, Any]] = []
        self.extract_args = extract_args or {}
        self.extract_for = extract_for
        # Extracted args whose values were all JSON integers in a chunk (ids: correlation,
        # External id, stream: distinct on nearly every event): decoded to Python values by
        # msgspec from the next chunk on, since decoding them once per distinct text is one
        # decode per event anyway. The others stay raw (`_raw_values`).
        self._typed_args: frozenset = frozenset()
        # Extracted args that held a value other than an integer: not tried as integers again.
        self._untyped_args: set = set()
        if self.extract_args:
            self._args_decoders()
        self.x_parts: list[pd.DataFrame] = []
        self.i_parts: list[pd.DataFrame] = []
        self.flow_parts: list[pd.DataFrame] = []
        self.counter_rows: list[tuple] = []
        self.be_events: list[tuple] = []
        self.count = 0
        self.decode_ranges = 1

    def _args_decoders(self) -> None:
        """The struct the extracted args of a chunk decode into: a field of `_typed_args`
        as its Python value (None where absent), the others as raw JSON text, so that an
        input shape or call stack repeated on every call is decoded once per chunk."""
        fields = [(f"f{i}", Any, None) if i in self._typed_args
                  else (f"f{i}", msgspec.Raw, msgspec.Raw())
                  for i in range(len(self.extract_args))]
        rename = {f"f{i}": key for i, key in enumerate(self.extract_args.values())}
        self._args_type = msgspec.defstruct("_Args", fields, rename=rename, gc=False)
        self._args_dec = msgspec.json.Decoder(self._args_type)
        self._args_list_dec = msgspec.json.Decoder(list[self._args_type])

    def track(self, pid, tid) -> int:
        return int(self.tracks.codes([(pid, tid)])[0])

    def _track_codes(self, pids: list, tids: list) -> np.ndarray:
        """(pid, tid) codes: integer ids (the usual case) are paired as numbers, so only each
        chunk's distinct pairs are interned; anything else goes pair by pair."""
        p, t = np.array(pids), np.array(tids)
        if p.dtype == np.int64 and t.dtype == np.int64 and len(p) and p.min() >= 0 \
                and t.min() >= 0 and p.max() < 2 ** 31 and t.max() < 2 ** 31:
            inverse, uniq = pd.factorize((p << 32) | t)
            codes = self.tracks.codes([(k >> 32, k & 0xFFFFFFFF) for k in uniq.tolist()])
            return codes[inverse]
        return self.tracks.codes(list(zip(pids, tids)))

    def _extract(self, evs: list[_Event], raws: list, lens: np.ndarray, part: dict,
                 ph: str | None) -> None:
        names = list(self.extract_args)
        n = len(raws)
        want = lens > 0
        if self.extract_for is not None:
            # The filter is a function of (ph, cat): asked once per distinct pair of the
            # chunk (categories by their interned code).
            ph_codes, phs = ((0, [ph]) if ph is not None
                             else pd.factorize(np.array([e.ph for e in evs], object)))
            width = len(self.cats.values)
            pairs, inverse = np.unique(ph_codes * width + part["cat"], return_inverse=True)
            verdict = np.array([bool(self.extract_for(phs[k // width],
                                                      _cat_text(self.cats.values[k % width])))
                                for k in pairs.tolist()], bool)
            want &= verdict[inverse.reshape(-1)]
        cols = [np.full(n, None, object) for _ in names]
        rows = np.flatnonzero(want)
        if len(rows):
            chosen = _pick(raws, rows)
            try:  # one decode for the chunk's args; one bad args object: each on its own
                decoded = self._args_list_dec.decode(b"[" + b",".join(chosen) + b"]")
                ok_rows = rows
            except (msgspec.DecodeError, msgspec.ValidationError):
                decoded, keep = [], []
                for i, raw in zip(rows.tolist(), chosen):
                    try:
                        decoded.append(self._args_dec.decode(raw))
                        keep.append(i)
                    except (msgspec.DecodeError, msgspec.ValidationError):
                        pass
                ok_rows = np.asarray(keep, np.int64)
            if len(ok_rows):
                ints = set()
                for j, col in enumerate(cols):
                    values = list(map(attrgetter(f"f{j}"), decoded))
                    if j in self._typed_args:
                        got = np.fromiter(values, object, len(values))
                    else:
                        got, kind = _raw_values_kind(values, j not in self._untyped_args)
                        if kind == "ints":  # typed from the next chunk on
                            ints.add(j)
                        elif kind == "other":
                            self._untyped_args.add(j)
                    if len(ok_rows) == n:
                        cols[j] = got
                    else:
                        col[ok_rows] = got
                if ints:
                    self._typed_args |= ints
                    self._args_decoders()
        for name, col in zip(names, cols):
            part[name] = col  # an object array: joined by np.concatenate, no list per value

    def _common(self, evs: list[_Event]) -> dict:
        # One list per field (a comprehension each: ~70 ns per event and field, the cheapest
        # way to take attributes of structs), then the work is per column in C.
        return {
            "track_id": self._track_codes([e.pid for e in evs], [e.tid for e in evs]),
            "ts": _raw_us_to_ns([e.ts for e in evs]),
            "name": self.names.codes([e.name for e in evs]),
            "cat": self.cats.codes([e.cat for e in evs]),
        }

    def add(self, evs: list[_Event]) -> None:
        n = len(evs)
        self.count += n
        if not n:
            return
        phs = [e.ph for e in evs]
        kinds = _phase_kinds(phs)
        present = np.unique(kinds).tolist()

        def group(kind, values: list = evs) -> list:
            """The items of `values` (the events, or a per-event list) of events of `kind`."""
            if kind not in present:
                return []
            return values if len(present) == 1 else _pick(values, np.flatnonzero(kinds == kind))

        for e in group(_META):
            self.meta_events.append((e.name, _key(e.pid), _key(e.tid), e.args))
        for e in group(_BEGIN_END):
            self.be_events.append((e.ph, self.track(e.pid, e.tid), bytes(e.ts), e.name,
                                   e.cat, bytes(e.args) if e.args else b""))
        counters = group(_COUNTER)
        if counters:
            self._counters(counters)
        xs = group(_SLICE)
        if xs:
            part = self._common(xs)
            part["dur_ns"] = np.maximum(_raw_us_to_ns([e.dur for e in xs]), 0)
            self._args(xs, part, "X")
            self.x_parts.append(_finish_part(part))
        inst = group(_INSTANT)
        if inst:
            part = self._common(inst)
            part["scope"] = [e.s if isinstance(e.s, str) else "" for e in inst]
            self._args(inst, part)
            self.i_parts.append(_finish_part(part, has_dur=False))
        flows = group(_FLOW)
        if flows:
            part = self._common(flows)
            part["flow_id"] = _flow_ids([e.id for e in flows], [e.id2 for e in flows])
            # s / f / t as int8 codes (a category of present values at the end)
            part["phase"] = np.fromiter(map(_FLOW_PHASES.index, group(_FLOW, phs)), np.int8,
                                        len(flows))
            self.flow_parts.append(_finish_part(part, has_dur=False))

    def _args(self, evs: list[_Event], part: dict, ph: str | None = None) -> None:
        """The args side file rows, and the extracted args columns (`ph`: the phase of every
        event of `evs`, when they share one)."""
        raws = [e.args for e in evs]
        lens = np.fromiter(map(len, raws), np.int64, len(raws))
        part["args_row"] = self.sink.add_raw(raws, lens)
        if self.extract_args:
            self._extract(evs, raws, lens, part, ph)

    def _counters(self, evs: list[_Event]) -> None:
        tracks = self.tracks.codes([(e.pid, e.tid) for e in evs])
        rows = self.counter_rows
        for e, t in zip(evs, tracks.tolist()):
            try:
                a = _ANY.decode(e.args) if e.args else {}
            except msgspec.DecodeError:
                continue
            if not isinstance(a, dict):
                continue
            name = _text(e.name)
            ts = bytes(e.ts)
            for k, v in a.items():
                if isinstance(v, bool):
                    continue
                if isinstance(v, str):
                    try:
                        v = float(v)
                    except ValueError:
                        continue
                if isinstance(v, (int, float)):
                    rows.append((t, ts, f"{name}/{k}" if k else name, float(v)))


# What an event's phase makes of it (Trace Event Format): one code per kind of row.
_OTHER, _SLICE, _META, _FLOW, _COUNTER, _INSTANT, _BEGIN_END = range(7)
_PHASE_KIND = {"X": _SLICE, "M": _META, "s": _FLOW, "f": _FLOW, "t": _FLOW, "C": _COUNTER,
               "i": _INSTANT, "I": _INSTANT, "n": _INSTANT, "R": _INSTANT,
               "B": _BEGIN_END, "E": _BEGIN_END}


_FLOW_PHASES = ("s", "f", "t")  # the phases of kind _FLOW


def _flow_phase_column(codes: np.ndarray) -> pd.Categorical:
    """Flow phase codes (`_FLOW_PHASES`) -> the Categorical of the phases present, as pandas
    infers it from the texts (sorted categories)."""
    present = sorted(_FLOW_PHASES[c] for c in np.unique(codes).tolist())
    categories = pd.Categorical(present).categories
    lut = np.full(len(_FLOW_PHASES), -1, np.int8)
    lut[[_FLOW_PHASES.index(p) for p in present]] = np.arange(len(present), dtype=np.int8)
    return pd.Categorical.from_codes(lut[codes], categories=categories)


def _phase_kinds(phs: list) -> np.ndarray:
    """Kind code per event (C-level dict lookups)."""
    try:
        return np.fromiter(map(_PHASE_KIND.get, phs, repeat(_OTHER)), np.int8, len(phs))
    except TypeError:  # an unhashable phase: not an event we use
        return np.array([_PHASE_KIND.get(p, _OTHER) if isinstance(p, str) else _OTHER
                         for p in phs], np.int8)


def _raw_array(raws: list, type_: pa.DataType, lens: np.ndarray | None = None) -> pa.Array:
    """Raw JSON values of one chunk as one Arrow string/binary array over one joined buffer
    (no Python object per value); an absent value (empty Raw) is a null. A chunk is a few
    MB, so 32-bit offsets hold it. `lens`: the values' lengths, when known."""
    n = len(raws)
    if lens is None:
        lens = np.fromiter(map(len, raws), np.int64, n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    validity = None if lens.all() else pa.py_buffer(np.packbits(lens > 0, bitorder="little"))
    return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(offsets.astype(np.int32)),
                                            pa.py_buffer(b"".join(raws))])


def _raw_values(raws: list) -> np.ndarray:
    """Raw JSON values -> Python values (None where absent), as an object array: each
    distinct text is decoded once (Arrow hashes the texts)."""
    return _raw_values_kind(raws)[0]


def _raw_values_kind(raws: list, try_ints: bool = True) -> tuple[np.ndarray, str]:
    """`_raw_values`, and what the values were: "absent" (all), "ints" (every present one
    a JSON integer; not tried unless `try_ints`) or "other"."""
    out = np.full(len(raws), None, object)
    texts = _raw_array(raws, pa.binary())
    if texts.null_count == len(raws):
        return out, "absent"
    ints = _json_ints(texts) if try_ints else None
    if ints is not None:
        return ints, "ints"
    encoded = texts.dictionary_encode()
    texts = encoded.dictionary.to_pylist()
    lut = np.full(len(texts) + 1, None, object)  # the last: absent
    for i, text in enumerate(texts):
        try:
            lut[i] = _ANY.decode(text)  # item by item: a list value stays one object
        except (msgspec.DecodeError, RecursionError):
            pass
    return lut[encoded.indices.fill_null(len(texts)).to_numpy(zero_copy_only=False)], "other"


def _json_ints(texts: pa.Array) -> np.ndarray | None:
    """The values of `texts` (raw JSON, nulls where absent) as an object array, when every
    present one is a JSON integer that fits 64 bits (ids: correlation, External id, stream,
    device: distinct on nearly every event, so decoding each distinct text would be one
    decode per event); parsed by Arrow's cast in C. None when any is something else."""
    try:
        nums = pc.cast(texts.cast(pa.string()), pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    out = nums.fill_null(0).to_numpy().astype(object)
    if nums.null_count:
        out[nums.is_null().to_numpy(zero_copy_only=False)] = None
    return out


def _raw_us_to_ns(raws: list) -> np.ndarray:
    """Raw `ts` / `dur` values (JSON numbers or strings of µs) to int64 ns, exactly.

    msgspec writes the list as one JSON array in C; a time holds no comma, so the commas
    are the boundaries (a value with a comma in it, junk, takes the slower way)."""
    enc = np.frombuffer(msgspec.json.encode(raws), np.uint8)
    commas = np.flatnonzero(enc == 44)
    if len(commas) == len(raws) - 1:
        bounds = np.empty(len(raws) + 1, np.int64)
        bounds[0], bounds[-1] = 0, len(enc) - 1
        bounds[1:-1] = commas
        return us_spans_to_ns(enc, bounds[:-1] + 1, bounds[1:])
    return us_text_to_ns(_raw_array(raws, pa.binary()))


def _pick(values: list, rows: np.ndarray) -> list:
    """The items of `values` at `rows`, in C."""
    if len(rows) == 1:
        return [values[int(rows[0])]]
    return list(itemgetter(*rows.tolist())(values)) if len(rows) else []


def _flow_ids(id1: list, id2: list) -> pa.Array:
    """Flow ids as text (`id`, else `id2`): integer ids convert in Arrow, others one by one."""
    ids = id1 if None not in id1 else [a if a is not None else b for a, b in zip(id1, id2)]
    types = set(map(type, ids))
    if types == {int}:
        try:
            return pa.array(ids, pa.int64()).cast(pa.string())
        except (pa.ArrowInvalid, OverflowError):
            pass
    elif types <= {int, str}:  # ints and strings print as themselves
        return pa.array(list(map(str, ids)), pa.string())
    return pa.array([_key(v) for v in ids], pa.string())


def _finish_part(part: dict, has_dur: bool = True) -> dict:
    """One chunk's columns: numpy arrays; flow ids as an Arrow string array (not millions of
    Python strings); phase/scope and extracted args stay lists until the end."""
    n = len(part["ts"])
    first_row = part.pop("args_row", None)
    out = {}
    for k, v in part.items():
        if k == "ts":
            out["start_ns" if has_dur else "ts_ns"] = v
        else:
            out[k] = v
    if first_row is not None:
        out["args_row"] = np.arange(first_row, first_row + n, dtype=np.int64)
    return out


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

    n_workers = trace_ranges.decode_workers(end - pos) if workers is None else workers
    if n_workers > 1 and error is None and mapped_path:
        ranges = trace_ranges.read_parallel(mm, mapped_path, pos, end, n_workers, b,
                                            chunk_bytes, tmp_dir, repairs)
        if ranges:
            b.decode_ranges = max(b.decode_ranges, ranges)
            pos = end
    error = _read_range(mm, pos, end, b, chunk_bytes, repairs, error)
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


def _read_range(mm, pos: int, end: int, b: "_Builder", chunk_bytes: int,
                repairs: _Utf8Repairs, error: str | None = None) -> str | None:
    """Decode the events in mm[pos:end] chunk by chunk into `b`; the reason the range
    ended early, if it did (events before the damage are kept)."""
    while pos < end:
        evs, nxt, err = _next_chunk(mm, pos, end, chunk_bytes, repairs)
        if evs:
            b.add(evs)
        del evs
        if err:
            return err if error is None else f"{error}; {err}"
        _release(mm, pos, nxt)
        pos = nxt
        while pos < end and mm[pos:pos + 1] in (b",", b" ", b"\n", b"\r", b"\t"):
            pos += 1
    return error


def _build_tables(b: "_Builder", metadata, args_path, args_table, errors) -> TraceTables:
    track_keys, track_remap = b.tracks.finalize(lambda k: (_key(k[0]), _key(k[1])))
    names, name_remap = b.names.finalize(_text)
    cats, cat_remap = b.cats.finalize(lambda v: "" if v is None else _text(v))

    def finish(parts, cols):
        df = _concat(parts, cols)
        if len(df) == 0:
            return pd.DataFrame({c: [] for c in cols})
        df["track_id"] = track_remap[df["track_id"].to_numpy()]
        df["name"] = pd.Categorical.from_codes(name_remap[df["name"].to_numpy()], categories=names) \
            if names else pd.Categorical([""] * len(df))
        df["cat"] = pd.Categorical.from_codes(cat_remap[df["cat"].to_numpy()], categories=cats) \
            if cats else pd.Categorical([""] * len(df))
        return df

    slices = finish(b.x_parts, ["track_id", "start_ns", "dur_ns", "name", "cat", "args_row"])
    slices = _add_be_slices(slices, b, track_remap)
    holder = [slices]
    del slices
    slices = assign_depth(holder)
    flows = finish(b.flow_parts, ["flow_id", "name", "cat", "phase", "track_id", "ts_ns"])
    if len(flows):
        flows["phase"] = _flow_phase_column(flows["phase"].to_numpy())
    instants = finish(b.i_parts, ["track_id", "ts_ns", "name", "cat", "scope", "args_row"])
    if b.counter_rows:
        t, ts, series, value = zip(*b.counter_rows)
        counters = pd.DataFrame({
            "track_id": track_remap[np.asarray(t, dtype=np.int32)],
            "ts_ns": us_text_to_ns(pa.array(ts, pa.binary())),
            "series": pd.Categorical(series),
            "value": np.asarray(value, dtype=np.float64),
        })
    else:
        counters = pd.DataFrame({"track_id": np.zeros(0, np.int32), "ts_ns": np.zeros(0, np.int64),
                                 "series": pd.Categorical([]), "value": np.zeros(0)})
    tracks = _tracks(b, track_keys)
    return TraceTables(tracks=tracks, slices=slices, flows=flows, counters=counters,
                       instants=instants, metadata=metadata, args_path=args_path,
                       args=args_table, errors=errors, event_count=b.count,
                       decode_ranges=b.decode_ranges)


def _concat(parts: list[dict], cols: list[str]) -> pd.DataFrame:
    """The chunks' columns joined, one column at a time (each column's pieces are dropped as
    soon as it is joined, so the peak is the table plus one column, not twice the table)."""
    if not parts:
        return pd.DataFrame({c: [] for c in cols})
    out = {}
    for c in list(parts[0]):
        pieces = [p.pop(c) for p in parts]
        first = pieces[0]
        if isinstance(first, np.ndarray):  # numbers, or extracted args as objects
            v = np.concatenate(pieces) if len(pieces) > 1 else first
        elif isinstance(first, (pa.Array, pa.ChunkedArray)):
            v = pd.array(pa.chunked_array(pieces).combine_chunks(), dtype="string")
        else:
            v = [x for piece in pieces for x in piece]
            if c in ("phase", "scope"):
                v = pd.Categorical(v)
        del pieces, first
        out[c] = v
        del v
    parts.clear()
    return pd.DataFrame(out, copy=False)


def _add_be_slices(slices: pd.DataFrame, b: _Builder, track_remap) -> pd.DataFrame:
    """Pair B/E events per track into slices (rare: old msprof step_trace)."""
    if not b.be_events:
        return slices
    stacks: dict[int, list] = {}
    rows = []
    for ph, t, ts, name, cat, args in b.be_events:
        ns = int(us_text_to_ns([ts.decode("utf-8", "replace")])[0])
        if ph == "B":
            stacks.setdefault(t, []).append((ns, name, cat, args))
        elif stacks.get(t):
            s_ns, s_name, s_cat, s_args = stacks[t].pop()
            rows.append((int(track_remap[t]), s_ns, max(ns - s_ns, 0), _text(s_name),
                         "" if s_cat is None else _text(s_cat),
                         s_args.decode("utf-8", "replace") or None))
    if not rows:
        return slices
    first = b.sink.add([r[5] for r in rows])
    extra = pd.DataFrame({
        "track_id": np.asarray([r[0] for r in rows], np.int32),
        "start_ns": np.asarray([r[1] for r in rows], np.int64),
        "dur_ns": np.asarray([r[2] for r in rows], np.int64),
        "name": pd.Categorical([r[3] for r in rows]),
        "cat": pd.Categorical([r[4] for r in rows]),
        "args_row": np.arange(first, first + len(rows), dtype=np.int64),
    })
    out = pd.concat([slices, extra], ignore_index=True)
    for c in ("name", "cat"):
        out[c] = out[c].astype("category")
    return out


def assign_depth(slices) -> pd.DataFrame:
    """Sort by (track, start, -dur) and give each slice its nesting depth on its track.

    depth = number of earlier slices of the same track still open at this slice's start
    (rank within the track minus the slices of the track that ended by then). For properly
    nested slices (host threads) this is the call depth; for partially overlapping device
    tasks it is the number of tasks still running. Vectorized per track: no per-slice Python.
    `slices` may be a one-element list holding the table, so it can be freed column by
    column while the sorted copy is made.
    """
    if isinstance(slices, list):
        slices = slices.pop()
    if len(slices) == 0:
        slices = slices.copy()
        slices["depth"] = np.zeros(0, np.int16)
        return slices
    order = np.lexsort((-slices["dur_ns"].to_numpy(), slices["start_ns"].to_numpy(),
                        slices["track_id"].to_numpy()))
    # Column by column: each unsorted column is dropped once its sorted copy exists.
    src = {c: slices[c] for c in slices.columns}
    del slices
    cols = {}
    for c in list(src):
        col = src.pop(c)
        if isinstance(col.dtype, np.dtype) and col.dtype != object:
            cols[c] = col.to_numpy()[order]
        else:
            cols[c] = col.take(order).reset_index(drop=True)
        del col
    del order
    track = cols["track_id"]
    start = cols["start_ns"]
    n = len(start)
    end = start + cols["dur_ns"]
    # First row of each track's run (rows are grouped by track after the sort).
    first = np.r_[0, np.flatnonzero(np.diff(track)) + 1]
    counts = np.diff(np.r_[first, n])
    depth = np.empty(n, np.int16)
    for f, c in zip(first.tolist(), counts.tolist()):
        s_, e_ = start[f:f + c], end[f:f + c]
        # rank within the track minus how many of its slices ended by this start; a
        # zero-length slice's own end is not "before" it.
        closed = np.searchsorted(np.sort(e_), s_, side="right") - (e_ == s_)
        depth[f:f + c] = np.clip(np.arange(c) - closed, 0, 32767)
    del end
    cols["depth"] = depth
    return pd.DataFrame(cols, copy=False)


def _tracks(b: _Builder, track_keys: list) -> pd.DataFrame:
    proc_name: dict[str, str] = {}
    proc_sort: dict[str, int] = {}
    proc_labels: dict[str, str] = {}
    thread_name: dict[tuple[str, str], str] = {}
    thread_sort: dict[tuple[str, str], int] = {}
    for name, pid, tid, raw in b.meta_events:
        try:
            args = _ANY.decode(raw) if raw else {}
        except msgspec.DecodeError:
            args = {}
        if not isinstance(args, dict):
            continue
        if name == "process_name":
            proc_name[pid] = str(args.get("name", ""))
        elif name == "process_labels":
            proc_labels[pid] = str(args.get("labels", ""))
        elif name == "process_sort_index":
            proc_sort[pid] = _int(args.get("sort_index"))
        elif name == "thread_name":
            thread_name[(pid, tid)] = str(args.get("name", ""))
        elif name == "thread_sort_index":
            thread_sort[(pid, tid)] = _int(args.get("sort_index"))
    rows = []
    for t, (pid, tid) in enumerate(track_keys):
        rows.append({
            "track_id": t,
            "pid": pid,
            "tid": tid,
            "process": proc_name.get(pid, ""),
            "thread": thread_name.get((pid, tid), ""),
            "process_labels": proc_labels.get(pid, ""),
            "process_sort": proc_sort.get(pid, 1 << 20),
            "thread_sort": thread_sort.get((pid, tid), 1 << 20),
        })
    cols = ["track_id", "pid", "tid", "process", "thread", "process_labels", "process_sort",
            "thread_sort"]
    df = pd.DataFrame(rows, columns=cols)
    df["track_id"] = df["track_id"].astype(np.int32)
    return df


def _int(v) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return 1 << 20


def read_args(args_path: str | None, args: pa.Table | None, rows: list[int]) -> list[dict]:
    """The args objects of the given rows (for details on demand)."""
    out = []
    if args is None and args_path:
        with pa.memory_map(args_path) as src:
            table = pa.ipc.open_file(src).read_all()
            texts = table.column("args").take(pa.array(rows, pa.int64())).to_pylist()
    elif args is not None:
        texts = args.column("args").take(pa.array(rows, pa.int64())).to_pylist()
    else:
        texts = [None] * len(rows)
    for t in texts:
        try:
            out.append(_ANY.decode(t) if t else {})
        except msgspec.DecodeError:
            out.append({})
    return out
