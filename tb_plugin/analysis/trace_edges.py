"""The timeline index's flow edges (`trace_edges`, analysis/trace_index.py): flow endpoints
bound to the slices that enclose them, consecutive endpoints of one flow id becoming an
edge src -> dst (`pair_flows`, then `edges`), from the flows as a frame or an Arrow table.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..int_sort import lexsort
from . import name_text
from ..lazy import pd


@dataclasses.dataclass
class FlowPairs:
    """Edges between rows of the slices table (`pair_flows`), before they are slice ids."""

    src: np.ndarray
    dst: np.ndarray
    name_codes: np.ndarray
    name_cats: pd.Index


def pair_flows(flows, track, start, end) -> FlowPairs:
    """Flow endpoints -> rows of the slices table; consecutive endpoints of one flow become
    edges src -> dst (`edges` makes them slice ids of the index).

    An endpoint binds to the deepest slice of its track that encloses its time (`s` prefers a
    slice starting exactly there). Rows of `track/start/end` are the slices table's
    (track, start, -dur) order. Needs no index: the trace index runs it in a thread beside
    its lanes (numpy and Arrow leave the GIL for most of it)."""
    none = FlowPairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                     pd.Index([], dtype=object))
    if len(flows) == 0 or len(track) == 0:
        return none
    f_track = flows["track_id"].to_numpy().astype(np.int64)
    f_ts = flows["ts_ns"].to_numpy().astype(np.int64)
    t64 = track.astype(np.int64)
    # Composite key (track, time) for a single binary search over the sorted table.
    tmin = int(min(start.min(), f_ts.min()))
    span = int(max(end.max(), f_ts.max())) - tmin + 1
    bound = np.full(len(f_ts), -1, np.int64)
    if span < (1 << 46) and t64.max() < (1 << 16) and f_track.max() < (1 << 16):
        shift = np.int64(1 << 46)
        keys = t64 * shift + (start - tmin)
        fkeys = f_track * shift + (f_ts - tmin)
        cand = np.searchsorted(keys, fkeys, side="right") - 1
        # Walk back a few slices (siblings that ended before ts) looking for an encloser.
        pending = np.arange(len(f_ts))
        c = cand.copy()
        for _ in range(48):
            if len(pending) == 0:
                break
            cc = c[pending]
            ok = cc >= 0
            cc0 = np.clip(cc, 0, None)
            ok &= t64[cc0] == f_track[pending]
            hit = ok & (start[cc0] <= f_ts[pending]) & (f_ts[pending] <= end[cc0])
            bound[pending[hit]] = cc0[hit]
            stop = ~ok | hit
            pending = pending[~stop]
            c[pending] -= 1
    # Memory-lean pairing key (flows reach millions of rows): codes, never string arrays.
    order_phase, fid_codes, cat_codes, n_cats, name_codes, name_cats = flow_codes(flows)
    key = fid_codes.astype(np.int64) * (n_cats + 1) + cat_codes.astype(np.int64)
    del fid_codes, cat_codes
    o = lexsort((order_phase, f_ts, key))
    k, b = key[o], bound[o]
    same = k[1:] == k[:-1]
    src, dst = b[:-1][same], b[1:][same]
    name_codes = name_codes[o][:-1][same]
    keep = (src >= 0) & (dst >= 0) & (src != dst)  # (rows differ exactly where ids do)
    return FlowPairs(src[keep], dst[keep], name_codes[keep], name_cats)


def edges(pairs: FlowPairs, inv) -> pd.DataFrame:
    """The edges of `pair_flows` between slice ids of the index (`inv`: row -> slice id),
    by source (stable), with each edge's rank by destination (`dst_order`)."""
    src, dst = inv[pairs.src], inv[pairs.dst]
    so = np.argsort(src, kind="stable")
    src, dst, name_codes = src[so], dst[so], pairs.name_codes[so]
    names = pd.Categorical.from_codes(np.maximum(name_codes, -1), categories=pairs.name_cats)
    return pd.DataFrame({"src": src.astype(np.int64), "dst": dst.astype(np.int64),
                         "name": names,
                         "dst_order": np.argsort(dst, kind="stable").astype(np.int64)})


def flow_codes(flows):
    """The flows' columns as codes: (phase order s < t < other, flow id keys
    (`flow_id_keys`), category codes in order of first appearance (pd.factorize's, -1 for
    none), the number of categories, name codes, name categories), from a frame or an Arrow
    table (`build` reads the flows without a pandas frame: 2.4M flow ids as Python strings
    were 0.8 s of a 1 GB trace's timeline stage)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(flows, pa.Table):
        phase = flows["phase"]
        order_phase = np.where((phase == "s").to_numpy(), 0,
                               np.where((phase == "t").to_numpy(), 1, 2)).astype(np.int8)
        fid_codes = flow_id_keys(pa.array(flows["flow_id"].array, type=pa.large_string(),
                                          from_pandas=True))
        cat_codes, cat_uni = pd.factorize(flows["cat"])
        fname = flows["name"]
        if not isinstance(fname.dtype, pd.CategoricalDtype):
            fname = fname.astype("category")
        return (order_phase, fid_codes, cat_codes, len(cat_uni),
                fname.cat.codes.to_numpy(), fname.cat.categories)

    def codes(col, first_seen: bool = False) -> tuple[np.ndarray, object]:
        indices, values = name_text.dictionary_parts(col, first_seen)
        return np.asarray(pc.fill_null(indices, -1).to_numpy(), np.int64), values

    phase = flows["phase"]
    text = pc.cast(phase, phase.type.value_type) if pa.types.is_dictionary(phase.type) \
        else phase
    order_phase = np.where(np.asarray(pc.fill_null(pc.equal(text, "s"), False)), 0,
                           np.where(np.asarray(pc.fill_null(pc.equal(text, "t"), False)),
                                    1, 2)).astype(np.int8)
    fid_codes = flow_id_keys(flows["flow_id"])
    cat_codes, cats = codes(flows["cat"], first_seen=True)
    name_codes, names = codes(flows["name"])
    return (order_phase, fid_codes, cat_codes, len(cats), name_codes,
            pd.Index(names.to_pylist(), dtype=object))


def flow_id_keys(ids) -> np.ndarray:
    """An int64 key per flow id (an Arrow text column), equal exactly where the ids are
    equal, -1 for none, in [0, distinct ids) otherwise.

    Kineto and torch_npu write flow ids as integers: where every id is an integer written
    one way only (no leading zeros, no "-0"), the keys are the ids' values ranked (a
    stable sort of ids that come nearly in order); other ids are dictionary-encoded (codes
    in order of first appearance). Hashing 2.4M ids as text took 0.7-0.9 s of a 1 GB
    trace's timeline stage; parsing them as integers ~0.05 s."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks() if ids.num_chunks != 1 else ids.chunk(0)
    if pa.types.is_dictionary(ids.type):
        ids = ids.cast(ids.type.value_type)
    if len(ids) == 0:
        return np.zeros(0, np.int64)
    values = _integer_ids(ids)
    if values is None:
        codes, _ = name_text.dictionary_parts(ids, first_seen=True)
        return np.asarray(pc.fill_null(codes, -1).to_numpy(), np.int64)
    valid = np.asarray(ids.is_valid())
    v = np.asarray(values.drop_null().to_numpy(), np.int64)  # the ids there are
    keys = np.full(len(ids), -1, np.int64)
    if len(v):
        order = np.argsort(v, kind="stable")
        ranked = v[order]
        rank = np.empty(len(v), np.int64)
        rank[order] = np.r_[0, np.cumsum(ranked[1:] != ranked[:-1])]
        keys[valid] = rank
    return keys


def _integer_ids(ids):
    """The ids as int64 when every one (nulls aside) is a decimal integer written the one
    way `str(int)` writes it, else None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = ids.cast(pa.large_string()) if not pa.types.is_large_string(ids.type) else ids
    try:
        values = pc.cast(text, pa.int64())  # refuses spaces, '+', fractions, words, ""
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    # "05" and "-0" parse too: the same value written two ways would be one id.
    long = pc.greater(pc.utf8_length(text), 1)
    if pc.any(pc.and_(pc.starts_with(text, "0"), long)).as_py() or \
            pc.any(pc.starts_with(text, "-0")).as_py():
        return None
    return values
