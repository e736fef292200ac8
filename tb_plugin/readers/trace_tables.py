"""A builder's column parts -> `TraceTables`, once every chunk of every file is in.

What it holds: `_build_tables`: the parts joined one column at a time (`_concat`), interned
codes mapped to their final values, B/E events paired into slices (`_add_be_slices`),
slices sorted and given their nesting depth (`assign_depth`, also used by the SQLite
readers), the counter table, and the track table with process / thread names and sort
order from the metadata events (`_tracks`).

Why it is separate: it runs once per read, after decoding (`trace_builder` runs per chunk),
and is where the tables' final shapes are made, so `TraceTables` is defined here too
(`trace_json`, the public entry point, hands it on).
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa

from ..int_sort import lexsort
from .trace_builder import _flow_phase_column
from .trace_values import _ANY, _key, _text
from .us_text import us_text_to_ns

if TYPE_CHECKING:
    from .trace_builder import _Builder


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


def _build_tables(b: "_Builder", metadata, args_path, args_table, errors) -> TraceTables:
    track_keys, track_remap = b.tracks.finalize(lambda k: (_key(k[0]), _key(k[1])))
    names, name_remap = b.names.finalize(_text, text_is_itself=True)
    cats, cat_remap = b.cats.finalize(lambda v: "" if v is None else _text(v),
                                      text_is_itself=True)

    # One dtype per column for the three tables: pandas checks that the categories are
    # distinct when a dtype is made (a hash of every name: 0.3 s on a 1 GB trace), once.
    name_dtype = pd.CategoricalDtype(names) if names else None
    cat_dtype = pd.CategoricalDtype(cats) if cats else None

    def finish(parts, cols):
        df = _concat(parts, cols)
        if len(df) == 0:
            return pd.DataFrame({c: [] for c in cols})
        df["track_id"] = track_remap[df["track_id"].to_numpy()]
        df["name"] = pd.Categorical.from_codes(name_remap[df["name"].to_numpy()], dtype=name_dtype) \
            if names else pd.Categorical([""] * len(df))
        df["cat"] = pd.Categorical.from_codes(cat_remap[df["cat"].to_numpy()], dtype=cat_dtype) \
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
    order = lexsort((-slices["dur_ns"].to_numpy(), slices["start_ns"].to_numpy(),
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
        # (the ends come nearly sorted: timsort, "stable", is ~5x numpy's default here)
        closed = np.searchsorted(np.sort(e_, kind="stable"), s_, side="right") - (e_ == s_)
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
