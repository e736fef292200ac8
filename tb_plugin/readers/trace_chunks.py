"""Chrome-trace JSON bytes -> lists of decoded events, one chunk at a time.

What it holds: everything that treats the trace as bytes. Opening the file (gz inflated
block by block to a temp file) and memory-mapping it; finding the `traceEvents` array and
the top-level metadata beside it; cutting the next few-MB chunk at an event boundary and
decoding it by msgspec into `_Event` structs whose `ts`/`dur`/`args` stay raw bytes;
making invalid UTF-8 valid before a chunk is decoded (`_Utf8Repairs` counts it); keeping
the whole events before damage (`_salvage`); releasing pages already processed.

Why it is separate: it knows nothing of columns or args. Its output, a list of `_Event`
per chunk, is all `trace_builder._Builder` consumes; `trace_json` drives the two, and
`trace_ranges` maps the same file and cuts at the same boundaries (`_BOUNDARY`) in other
processes.
"""
from __future__ import annotations

import mmap
import os
import re
import tempfile
import zlib
from typing import Any

import msgspec
import numpy as np

from . import trace_scanned
from .json_numbers import decode_json

_BOUNDARY = re.compile(rb"\}\s*,\s*\{")


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
    rescanned = False  # the boundary was found by reading the structure
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
        if rescanned:  # a cut at a real event boundary that does not decode: damage
            return _salvage(mm, pos, cut, err, repairs)
        # The byte search found `}, {` inside a string or a nested array (an event's args);
        # the event boundary is found again by reading the structure (rare: costs a scan of
        # the chunk). None: no event ends after `search_from` but the last one.
        rescanned = True
        real = event_boundary(mm, pos, search_from, end)
        if real is None:
            search_from = end
            continue
        search_from = real - 1  # the search then matches exactly there


def event_boundary(mm, pos: int, search_from: int, end: int) -> int | None:
    """The offset just after the `}` that closes the first top-level event ending at or
    after `search_from` and is followed by `, {` (an event boundary `_BOUNDARY` matches),
    reading mm[pos:...] as JSON structure: strings (with their escapes) and nesting.
    `pos` is a place between two events of the array (where chunks start). None when no
    such event follows (the array ends, or the bytes are not JSON)."""
    window = max(search_from - pos, 1 << 20)
    hi = min(end, search_from + window)
    while True:
        arr = np.frombuffer(mm, np.uint8, count=hi - pos, offset=pos)
        for close in _top_level_closes(arr, search_from - pos):
            if _BOUNDARY.match(mm, pos + close):
                return pos + close + 1
        if hi >= end:
            return None
        window *= 2
        hi = min(end, hi + window)


def _top_level_closes(arr: np.ndarray, start: int) -> np.ndarray:
    """Offsets (>= `start`) of the `}` bytes of `arr` that close a top-level object of an
    array body `arr` (arr[0] is outside any string and object), up to where the array
    closes or the structure breaks."""
    quotes = np.flatnonzero(arr == 0x22)
    if len(quotes):
        escaped = quotes[(quotes > 0) & (arr[np.maximum(quotes - 1, 0)] == 0x5C)]
        if len(escaped):  # a quote after backslashes: escaped when there is an odd number
            drop = [q for q in escaped.tolist() if _backslashes_before(arr, q) % 2 == 1]
            quotes = np.setdiff1d(quotes, np.asarray(drop, dtype=quotes.dtype))
    toggles = np.zeros(len(arr) + 1, np.int8)
    toggles[quotes + 1] = 1  # the quote itself is outside, the bytes after it inside
    in_string = (np.cumsum(toggles[:-1], dtype=np.int64) & 1).astype(bool)
    step = np.zeros(len(arr), np.int8)
    step[(arr == 0x7B) | (arr == 0x5B)] = 1  # { [
    step[(arr == 0x7D) | (arr == 0x5D)] = -1  # } ]
    step[in_string] = 0
    depth = np.cumsum(step, dtype=np.int64)  # after each byte
    below = np.flatnonzero(depth < 0)
    limit = int(below[0]) if len(below) else len(arr)  # the array's `]`, or damage
    closes = np.flatnonzero((arr[:limit] == 0x7D) & (depth[:limit] == 0) & ~in_string[:limit])
    return closes[closes >= start]


def _backslashes_before(arr: np.ndarray, at: int) -> int:
    n = 0
    while at - n - 1 >= 0 and arr[at - n - 1] == 0x5C:
        n += 1
    return n


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
    scanned = trace_scanned.scan(data)
    if scanned is not None:
        if repairs is not None:
            repairs.sequences += replaced
        return scanned, None
    try:
        evs = decode_json(_EVENTS.decode, data)
    except msgspec.DecodeError as exc:  # (a ValidationError too: damage, as a syntax error)
        return None, str(exc)
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


def read_range(mm, pos: int, end: int, b, chunk_bytes: int,
               repairs: "_Utf8Repairs", error: str | None = None) -> str | None:
    """Decode the events in mm[pos:end] chunk by chunk into `b`; the reason the range
    ended early, if it did (events before the damage are kept). `b` is a builder
    (`trace_builder._Builder`: anything with `add(events)`)."""
    _, err = read_until(mm, pos, end, end, b, chunk_bytes, repairs)
    if err:
        return err if error is None else f"{error}; {err}"
    return error


def read_until(mm, pos: int, end: int, stop: int, b, chunk_bytes: int,
               repairs: "_Utf8Repairs") -> tuple[int, str | None]:
    """`read_range` of mm[pos:end] that stops at the first chunk starting at or after
    `stop`: (where it stopped, the reason it ended early). The chunks are cut as when the
    whole range is read, so reading up to each piece's start in turn is that same read."""
    while pos < stop:
        evs, nxt, err = _next_chunk(mm, pos, end, chunk_bytes, repairs)
        if evs:
            b.add(evs)
        del evs
        if err:
            return pos, err
        _release(mm, pos, nxt)
        pos = nxt
        while pos < end and mm[pos:pos + 1] in (b",", b" ", b"\n", b"\r", b"\t"):
            pos += 1
    return pos, None
