"""One chunk of trace events as the byte spans of their fields (`ScannedChunk`).

What it holds: the chunk's bytes and, per event, where the value of each field the builder
uses lies in them (found by the C scanner `_native.scan`); the raw texts of a field as one
Arrow array over a gathered buffer (`texts`); a field's values decoded once per distinct
text (`values`); the events of a few rows as JSON again (`objects`), for the general path's
structs.

Why: taking fields out of a Python struct per event is what made decoding cost about a
microsecond per event. From the spans, the columns are made per field, in numpy and Arrow,
and only each distinct name, category, pid or phase is decoded by msgspec: as msgspec would
decode it inside the event, so the builder's results do not depend on which path a chunk
took (`scan` returns None for whatever it does not take on, and trace_chunks then decodes
the chunk into `_Event` structs).

Without the compiled scanner (an install with no C compiler, or NPU_PROFILER_NATIVE=0; see
`native`), `AVAILABLE` is false and every chunk takes the general path.
"""
from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from .json_numbers import decode_json
from .native import helpers as _native

# The compiled scanner, or None (not built, or switched off: see `native`).
AVAILABLE = _native is not None
FIELDS, _gather, _scan = (_native.FIELDS, _native.gather, _native.scan) if AVAILABLE \
    else ((), None, None)

# Field positions in a scanned event (the C scanner's FIELD_NAMES, then the object itself).
PH, NAME, CAT, PID, TID, TS, DUR, ID, ID2, S, ARGS, OBJECT = range(12)
_DEFAULTS = {PH: "", NAME: "", CAT: None, PID: None, TID: None, ID: None, ID2: None, S: None}

_ANY = msgspec.json.Decoder()


class ScannedChunk:
    """Events of one chunk: `data` (the chunk's bytes) and, per field, where each event's
    value starts and ends in it (`starts[field]`, `ends[field]`; 0, 0 where the event has no
    such key)."""

    __slots__ = ("data", "buf", "starts", "ends", "_ph")

    def __init__(self, data: bytes, spans: np.ndarray):
        """`spans[event, field] = (start, end)`, as the scanner writes them; kept per field
        (one contiguous array each), as every use takes one field of many events."""
        self.data = data
        self.buf = np.frombuffer(data, np.uint8)
        by_field = np.ascontiguousarray(spans.transpose(2, 1, 0))
        self.starts, self.ends = by_field[0], by_field[1]
        self._ph: tuple | None = None

    def __len__(self) -> int:
        return self.starts.shape[1]

    def bounds(self, field: int, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        if rows is None:
            return self.starts[field], self.ends[field]
        return self.starts[field][rows], self.ends[field][rows]

    def lens(self, field: int, rows: np.ndarray | None = None) -> np.ndarray:
        starts, ends = self.bounds(field, rows)
        return ends - starts

    def texts(self, field: int, rows: np.ndarray | None = None,
              type_: pa.DataType = pa.binary()) -> pa.Array:
        """The raw JSON texts of `field` (at `rows`) as one Arrow array; null where absent."""
        starts, ends = self.bounds(field, rows)
        return arrow_texts(ends - starts, _gather(self.data, starts, ends), type_)

    def distinct_texts(self, field: int, rows: np.ndarray | None = None) -> tuple[list, np.ndarray]:
        """(distinct raw texts in order of first appearance, None for absent; index of
        each row's text in them)."""
        encoded = self.texts(field, rows).dictionary_encode(null_encoding="encode")
        return encoded.dictionary.to_pylist(), encoded.indices.to_numpy(zero_copy_only=False)

    def values(self, field: int, rows: np.ndarray | None = None) -> tuple[list, np.ndarray]:
        """(distinct values in order of first appearance, index of each row's value in
        them): each distinct text decoded once, the field's default where it is absent (as
        a struct of the general path holds it)."""
        texts, index = self.distinct_texts(field, rows)
        return self.decode(field, texts), index

    @staticmethod
    def decode(field: int, texts: list) -> list:
        """Raw texts of `field` (None: absent) -> values, as a general path struct holds."""
        default = _DEFAULTS[field]
        try:
            return [default if t is None else _ANY.decode(t) for t in texts]
        except msgspec.DecodeError:  # (e.g. a number beyond float's range: as the general path)
            return [default if t is None else decode_json(_ANY.decode, t) for t in texts]

    def ph(self) -> tuple[list, np.ndarray]:
        """`values(PH)`, kept: every part of the builder asks for it."""
        if self._ph is None:
            self._ph = self.values(PH)
        return self._ph

    def row_values(self, field: int, rows: np.ndarray | None = None) -> np.ndarray:
        """The field's value of each row, as an object array."""
        distinct, index = self.values(field, rows)
        return as_object_lut(distinct)[index]

    def objects(self, rows: np.ndarray) -> bytes:
        """The events at `rows` as a JSON array (for the few rows the builder decodes one by
        one, as the general path's structs: metadata, begin/end, counters)."""
        starts, ends = self.bounds(OBJECT, rows)
        data = self.data
        return b"[" + b",".join([data[a:b] for a, b in zip(starts.tolist(), ends.tolist())]) + b"]"


def scan(data: bytes) -> ScannedChunk | None:
    """`data` ("[ {event}, ... ]") as a ScannedChunk, or None when the general path has to
    decode it (no scanner; JSON the scanner leaves to msgspec; a phase that is not text,
    which msgspec rejects as an event structure)."""
    if _scan is None:
        return None
    raw = _scan(data)
    if raw is None:
        return None
    chunk = ScannedChunk(data, np.frombuffer(raw, np.int64).reshape(-1, len(FIELDS) + 1, 2))
    try:
        distinct, _ = chunk.ph()
    except (msgspec.DecodeError, RecursionError, ValueError):
        return None
    if not all(type(v) is str for v in distinct):
        return None
    return chunk


def as_object_lut(values: list[Any]) -> np.ndarray:
    """A list as a 1-d object array (no nesting of list values)."""
    lut = np.empty(len(values), object)
    lut[:] = values
    return lut


def arrow_texts(lens: np.ndarray, data: bytes, type_: pa.DataType) -> pa.Array:
    """Texts laid end to end in `data`, of lengths `lens`, as one Arrow string/binary array
    over that buffer (no Python object per text); a text of length 0 is a null (an absent
    value). 32-bit offsets: a chunk's texts."""
    n = len(lens)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    validity = None if lens.all() else pa.py_buffer(np.packbits(lens > 0, bitorder="little"))
    return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(offsets.astype(np.int32)),
                                            pa.py_buffer(data)])
