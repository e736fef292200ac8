"""Raw JSON values of a chunk's events -> arrays, and the texts they show as.

What it holds: the helpers the builder (`trace_builder`), the tables (`trace_tables`) and the
args side file (`trace_args`) share for values that stay raw JSON until a whole column of
them is converted: raw texts as one Arrow array over one buffer (`_raw_array`); extracted
args decoded once per distinct text, integer ids parsed by Arrow (`_raw_values`,
`_json_ints`); raw `ts` / `dur` to exact ns (`_raw_us_to_ns`); flow ids as text, from values
(`_flow_ids`) or from scanned texts (`_scanned_flow_ids`); the text of a key or name
(`_key`, `_text`); items of a list at rows (`_pick`).

Why it is separate: these are conversions of values, per column, with no builder state; the
builder is the per-chunk bookkeeping (interning, parts, the kinds of events).
"""
from __future__ import annotations

from operator import itemgetter
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import trace_scanned as sc
from .trace_scanned import ScannedChunk
from .us_text import us_spans_to_ns, us_text_to_ns

_ANY = msgspec.json.Decoder()


def _key(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _text(v) -> str:
    return v if isinstance(v, str) else _key(v)


def _raw_array(raws: list, type_: pa.DataType, lens: np.ndarray | None = None) -> pa.Array:
    """Raw JSON values of one chunk as one Arrow string/binary array over one joined buffer
    (no Python object per value); an absent value (empty Raw) is a null. A chunk is a few
    MB, so 32-bit offsets hold it. `lens`: the values' lengths, when known."""
    if lens is None:
        lens = np.fromiter(map(len, raws), np.int64, len(raws))
    return sc.arrow_texts(lens, b"".join(raws), type_)


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


def _scanned_flow_ids(ch: ScannedChunk, r: np.ndarray) -> pa.Array:
    """`_flow_ids` of scanned flow events. Where every id is a JSON integer or a string
    without escapes (torch_npu mixes the two), its text is `_flow_ids`' text: the digits of
    the integer (JSON writes no leading zero or plus), the string without its quotes; Arrow
    makes the column from the raw texts. Anything else goes through `_flow_ids`."""
    ids = ch.texts(sc.ID, r, pa.string())
    if ids.null_count == 0 and pc.all(pc.match_substring_regex(ids, _PLAIN_ID)).as_py():
        return pc.utf8_trim(ids, '"')
    return _flow_ids(ch.row_values(sc.ID, r).tolist(), ch.row_values(sc.ID2, r).tolist())


_PLAIN_ID = r'^(?:-?[1-9][0-9]*|0|"[^"\\]*")$'  # not -0: that is the integer 0


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
