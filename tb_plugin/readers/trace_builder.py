"""Decoded trace events -> column parts, chunk by chunk (`_Builder`).

What it holds: `_Builder`, which takes each chunk's events, as a `ScannedChunk` (field spans
from the compiled scanner, `trace_scanned`) or as `_Event` structs (from `trace_chunks`, the
general path), and appends that chunk's columns: events grouped by phase kind
(`_phase_kinds`); (pid, tid) pairs, names and categories interned to dense codes shared by
all chunks (`_Interner`; scanned texts by their raw text, `_scanned_codes`); each part
closed by `_finish_part`. The value conversions it uses (raw times to ns, raw args, flow
ids) are in `trace_values`.

Why it is separate: this is the per-chunk hot path, and it neither reads the file's bytes
(`trace_chunks` does) nor makes the final tables (`trace_tables` does, once all chunks are
in). A builder's state is plain arrays and lists, so `trace_ranges` fills builders in other
processes and merges them into the caller's.
"""
from __future__ import annotations

from itertools import repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa

from . import trace_scanned as sc
from .json_numbers import decode_json
from .trace_chunks import _EVENTS
from .trace_scanned import ScannedChunk
from .trace_values import (_ANY, _flow_ids, _key, _pick, _raw_us_to_ns, _raw_values_kind,
                           _scanned_flow_ids, _text)
from .us_text import us_spans_to_ns

if TYPE_CHECKING:
    from .trace_chunks import _Event


class _Interner:
    """Values -> dense int codes, shared by all chunks (cheap columns, one category list)."""

    def __init__(self):
        self.table: dict = {}
        self.values: list = []
        # Raw JSON text -> code, for scanned chunks (`_scanned_codes`): a name seen in an
        # earlier chunk is neither decoded nor looked up by value again.
        self.by_text: dict = {}

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

    def finalize(self, normalize, text_is_itself: bool = False) -> tuple[list, np.ndarray]:
        """(unique normalized values, remap from code to index in them). `text_is_itself`:
        `normalize` leaves a str as it is, so values that are all str (distinct, as
        interned) are already the answer: no call per value (a 1 GB trace's 408K names:
        ~0.5 s)."""
        if text_is_itself and all(type(v) is str for v in self.values):
            return list(self.values), np.arange(len(self.values), dtype=np.int32)
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


class _Builder:
    def __init__(self, sink, extract_args, extract_for):
        self.sink = sink  # where each event's args go (trace_args._ArgsSink)
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
        codes = self._int_track_codes(np.array(pids), np.array(tids))
        return codes if codes is not None else self.tracks.codes(list(zip(pids, tids)))

    def _int_track_codes(self, p: np.ndarray, t: np.ndarray) -> np.ndarray | None:
        """`_track_codes` of pids / tids that numpy made int64 arrays (else None)."""
        if p.dtype == np.int64 and t.dtype == np.int64 and p.ndim == t.ndim == 1 and len(p) \
                and p.min() >= 0 and t.min() >= 0 and p.max() < 2 ** 31 and t.max() < 2 ** 31:
            inverse, uniq = pd.factorize((p << 32) | t)
            codes = self.tracks.codes([(k >> 32, k & 0xFFFFFFFF) for k in uniq.tolist()])
            return codes[inverse]
        return None

    def _extract(self, phs: np.ndarray | None, raws_at, lens: np.ndarray, part: dict,
                 ph: str | None) -> None:
        """The extracted args columns of a part: `phs` the events' phases (an object array;
        None when they share `ph`), `raws_at(rows)` their raw args at `rows` (bytes),
        `lens` the raw args' lengths."""
        names = list(self.extract_args)
        n = len(lens)
        want = lens > 0
        if self.extract_for is not None:
            # The filter is a function of (ph, cat): asked once per distinct pair of the
            # chunk (categories by their interned code).
            ph_codes, phs = (0, [ph]) if ph is not None else pd.factorize(phs)
            width = len(self.cats.values)
            pairs, inverse = np.unique(ph_codes * width + part["cat"], return_inverse=True)
            verdict = np.array([bool(self.extract_for(phs[k // width],
                                                      _cat_text(self.cats.values[k % width])))
                                for k in pairs.tolist()], bool)
            want &= verdict[inverse.reshape(-1)]
        cols = [np.full(n, None, object) for _ in names]
        rows = np.flatnonzero(want)
        if len(rows):
            chosen = raws_at(rows)
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

    def add(self, evs: list[_Event] | ScannedChunk) -> None:
        if isinstance(evs, ScannedChunk):
            return self._add_scanned(evs)
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

        self._one_by_one(group(_META), group(_BEGIN_END), group(_COUNTER))
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

    def _one_by_one(self, meta: list[_Event], begin_end: list[_Event],
                    counters: list[_Event]) -> None:
        """The kinds of events taken one by one (few in any trace)."""
        for e in meta:
            self.meta_events.append((e.name, _key(e.pid), _key(e.tid), e.args))
        for e in begin_end:
            self.be_events.append((e.ph, self.track(e.pid, e.tid), bytes(e.ts), e.name,
                                   e.cat, bytes(e.args) if e.args else b""))
        if counters:
            self._counters(counters)

    def _args(self, evs: list[_Event], part: dict, ph: str | None = None) -> None:
        """The args side file rows, and the extracted args columns (`ph`: the phase of every
        event of `evs`, when they share one)."""
        raws = [e.args for e in evs]
        lens = np.fromiter(map(len, raws), np.int64, len(raws))
        part["args_row"] = self.sink.add_raw(raws, lens)
        if self.extract_args:
            phs = None if ph is not None else np.array([e.ph for e in evs], object)
            self._extract(phs, lambda rows: _pick(raws, rows), lens, part, ph)

    # The same parts from a scanned chunk (trace_scanned): per field, not per event. Each
    # step gives what its counterpart above gives for the same events.

    def _add_scanned(self, ch: ScannedChunk) -> None:
        n = len(ch)
        self.count += n
        if not n:
            return
        ph_values, ph_index = ch.ph()
        kinds = _phase_kinds(ph_values)[ph_index]
        present = np.unique(kinds).tolist()

        def rows(kind) -> np.ndarray | None:
            return np.flatnonzero(kinds == kind) if kind in present else None

        self._one_by_one(*[decode_json(_EVENTS.decode, ch.objects(r))
                           if (r := rows(k)) is not None else []
                           for k in (_META, _BEGIN_END, _COUNTER)])
        r = rows(_SLICE)
        if r is not None:
            part = self._common_scanned(ch, r)
            part["dur_ns"] = np.maximum(us_spans_to_ns(ch.buf, *ch.bounds(sc.DUR, r)), 0)
            self._args_scanned(ch, r, part, "X")
            self.x_parts.append(_finish_part(part))
        r = rows(_INSTANT)
        if r is not None:
            part = self._common_scanned(ch, r)
            scopes, index = ch.values(sc.S, r)
            part["scope"] = sc.as_object_lut(
                [v if isinstance(v, str) else "" for v in scopes])[index].tolist()
            self._args_scanned(ch, r, part)
            self.i_parts.append(_finish_part(part, has_dur=False))
        r = rows(_FLOW)
        if r is not None:
            part = self._common_scanned(ch, r)
            part["flow_id"] = _scanned_flow_ids(ch, r)
            phase_of = np.array([_FLOW_PHASES.index(p) if p in _FLOW_PHASES else 0
                                 for p in ph_values], np.int8)
            part["phase"] = phase_of[ph_index[r]]
            self.flow_parts.append(_finish_part(part, has_dur=False))

    def _common_scanned(self, ch: ScannedChunk, r: np.ndarray) -> dict:
        return {
            "track_id": self._scanned_track_codes(ch, r),
            "ts": us_spans_to_ns(ch.buf, *ch.bounds(sc.TS, r)),
            "name": _scanned_codes(self.names, ch, sc.NAME, r),
            "cat": _scanned_codes(self.cats, ch, sc.CAT, r),
        }

    def _scanned_track_codes(self, ch: ScannedChunk, r: np.ndarray) -> np.ndarray:
        pids, p_index = ch.values(sc.PID, r)
        tids, t_index = ch.values(sc.TID, r)
        try:  # numpy infers one dtype from the distinct values as from all of them
            p, t = np.array(pids), np.array(tids)
        except ValueError:  # ragged (a list as a pid)
            p = t = None
        if p is not None and p.ndim == t.ndim == 1:
            codes = self._int_track_codes(p[p_index], t[t_index])
            if codes is not None:
                return codes
        return self.tracks.codes(list(zip(sc.as_object_lut(pids)[p_index].tolist(),
                                          sc.as_object_lut(tids)[t_index].tolist())))

    def _args_scanned(self, ch: ScannedChunk, r: np.ndarray, part: dict,
                      ph: str | None = None) -> None:
        texts = ch.texts(sc.ARGS, r, pa.string())
        part["args_row"] = self.sink.add_array(texts)
        if self.extract_args:
            raws = texts.view(pa.binary())
            ph_values, ph_index = ch.ph()
            phs = None if ph is not None else sc.as_object_lut(ph_values)[ph_index[r]]
            self._extract(phs, lambda rows: raws.take(rows).to_pylist(), ch.lens(sc.ARGS, r),
                          part, ph)

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


def _scanned_codes(interner: _Interner, ch: ScannedChunk, field: int,
                   r: np.ndarray) -> np.ndarray:
    """`interner.codes` of a scanned field's values at `r`: each distinct text not seen in
    an earlier chunk decoded and interned, in order of first appearance, as the row by row
    lookup would."""
    texts, index = ch.distinct_texts(field, r)
    by_text = interner.by_text
    codes = np.fromiter(map(by_text.get, texts, repeat(-1)), np.int32, len(texts))
    new = np.flatnonzero(codes == -1).tolist()
    if new:
        new_texts = [texts[i] for i in new]
        got = interner.codes(ch.decode(field, new_texts))
        codes[new] = got
        by_text.update(zip(new_texts, got.tolist()))
    return codes[index]


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
