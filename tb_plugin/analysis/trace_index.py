"""The timeline index: slices, flows and counters laid out for viewport queries.

Built once per profile at load time (from `derive.complete`, in the reader process) and
cached with the other tables as Arrow files, so TensorBoard's process only memory-maps them.
Pure functions of the model; the queries live in `analysis/trace.py`.

Tables (all sorted; "slice id" = row of `trace_slices`):
- trace_slices: track_id, depth, cls, start_ns, dur_ns, maxend_ns, name, cat, args_row,
  sorted by (track_id, depth, cls, start_ns). `cls` is the duration class:
  cls 0 = dur < 2^12 ns, cls c >= 1 = dur in [2^(10+2c), 2^(12+2c)). Within one
  (track, depth, cls) group `maxend_ns` is the running max of the slice ends, so the first
  slice that may overlap a time t is one binary search away even when slices overlap.
  `name` / `cat` are codes into trace_names / trace_cats.
- trace_groups: track_id, depth, cls, lo, hi: the row range of each (track, depth, cls).
- trace_lanes: lane (row), track_id, depth, slices.
- trace_lod: per lane and level L, one row per non-empty bucket of width 2^(12+2L) ns of the
  slices with cls <= L (all shorter than the bucket): gkey = lane*64+L, bucket (index from
  the origin), count, busy_ns (sum of durations), name (code of the longest slice),
  first_ns, last_ns (max end). Sorted by (gkey, bucket).
- trace_edges: src, dst (slice ids), name: flows bound to slices (consecutive endpoints of
  one flow id), sorted by src; `dst_order` is the permutation sorting them by dst.
- trace_counters: track_id, series, ts_ns, value sorted by (track_id, series, ts_ns).
- trace_names, trace_cats: the strings of the codes.
meta["trace_index"]: version, origin_ns, start_ns, end_ns, levels, steps [[n, start, end]].
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..model import Profile, table_path, write_table

VERSION = 1
BASE_SHIFT = 12          # level L buckets are 2^(BASE_SHIFT + 2L) ns wide
MAX_LEVELS = 24
NCLS = MAX_LEVELS + 1
TABLES = ("trace_slices", "trace_groups", "trace_lanes", "trace_lod", "trace_edges",
          "trace_counters", "trace_names", "trace_cats")


def duration_class(dur: np.ndarray) -> np.ndarray:
    d = np.maximum(np.asarray(dur, dtype=np.int64), 1)
    fl = np.floor(np.log2(d.astype(np.float64))).astype(np.int64)  # floor(log2 dur)
    return np.clip((fl - 10) // 2, 0, NCLS - 1).astype(np.int8)


def level_width(level: int) -> int:
    return 1 << (BASE_SHIFT + 2 * level)


def _codes(col) -> tuple[np.ndarray, list[str]]:
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = [str(c) for c in col.cat.categories]
        codes = col.cat.codes.to_numpy().astype(np.int32)
        if (codes < 0).any():
            cats.append("")
            codes = np.where(codes < 0, len(cats) - 1, codes).astype(np.int32)
        return codes, cats
    cat = pd.Categorical(col.astype("string").fillna(""))
    return cat.codes.astype(np.int32), [str(c) for c in cat.categories]


def _group_starts(*keys: np.ndarray) -> np.ndarray:
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, np.int64)
    brk = np.zeros(n, dtype=bool)
    brk[0] = True
    for k in keys:
        brk[1:] |= k[1:] != k[:-1]
    return np.flatnonzero(brk)


def _argmax_in_groups(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Index of the (first) largest value of each group [starts[i], starts[i+1])."""
    n = len(values)
    mx = np.maximum.reduceat(values, starts)
    counts = np.diff(np.r_[starts, n])
    is_max = values == np.repeat(mx, counts)
    rev = np.where(is_max, n - np.arange(n), 0)
    return n - np.maximum.reduceat(rev, starts)


def build_index(slices: pd.DataFrame, flows: pd.DataFrame, counters: pd.DataFrame,
                step_windows: list | None = None) -> tuple[dict[str, pd.DataFrame], dict]:
    """The index tables and meta for a profile's slices/flows/counters (see module doc)."""
    n = len(slices)
    track = slices["track_id"].to_numpy().astype(np.int32)
    start = slices["start_ns"].to_numpy().astype(np.int64)
    dur = np.maximum(slices["dur_ns"].to_numpy().astype(np.int64), 0)
    depth = slices["depth"].to_numpy().astype(np.int16)
    name, names = _codes(slices["name"])
    cat, cats = _codes(slices["cat"])
    args_row = slices["args_row"].to_numpy().astype(np.int64)
    end = start + dur
    cls = duration_class(dur)

    times = [start, end] if n else []
    if len(counters):
        times.append(counters["ts_ns"].to_numpy().astype(np.int64))
    if any(len(t) for t in times):
        t_lo = int(min(t.min() for t in times if len(t)))
        t_hi = int(max(t.max() for t in times if len(t)))
    else:
        t_lo = t_hi = 0
    origin = t_lo

    # Lane order: (track, depth, start) -- stable on the table's (track, start, -dur) order.
    lane_order = np.lexsort((start, depth, track)) if n else np.zeros(0, np.int64)
    l_track, l_depth = track[lane_order], depth[lane_order]
    lane_starts = _group_starts(l_track, l_depth)
    lanes = pd.DataFrame({
        "track_id": l_track[lane_starts] if n else np.zeros(0, np.int32),
        "depth": l_depth[lane_starts] if n else np.zeros(0, np.int16),
        "slices": np.diff(np.r_[lane_starts, n]).astype(np.int64),
    })
    lane_of = np.repeat(np.arange(len(lane_starts), dtype=np.int64),
                        np.diff(np.r_[lane_starts, n])) if n else np.zeros(0, np.int64)

    # LOD summaries per level, from the lane-ordered arrays (buckets stay sorted: no sort).
    l_start = start[lane_order]
    l_dur = dur[lane_order]
    l_end = l_start + l_dur
    l_cls = cls[lane_order]
    l_name = name[lane_order]
    parts = []
    span = max(t_hi - origin, 1)
    levels = 0
    for level in range(MAX_LEVELS):
        if level_width(level) > 4 * span and level > 0:
            break
        levels = level + 1
        m = l_cls <= level
        if not m.any():
            continue
        idx = np.flatnonzero(m)
        lane = lane_of[idx]
        bucket = (l_start[idx] - origin) >> (BASE_SHIFT + 2 * level)
        g = _group_starts(lane, bucket)
        d = l_dur[idx]
        longest = _argmax_in_groups(d, g)
        parts.append(pd.DataFrame({
            "gkey": lane[g] * 64 + level,
            "bucket": bucket[g],
            "count": np.diff(np.r_[g, len(idx)]).astype(np.int64),
            "busy_ns": np.add.reduceat(d, g),
            "name": l_name[idx][longest],
            "first_ns": l_start[idx][g],
            "last_ns": np.maximum.reduceat(l_end[idx], g),
        }))
    del l_start, l_dur, l_end, l_cls, l_name
    if parts:
        lod = pd.concat(parts, ignore_index=True)
        order = np.lexsort((lod["bucket"].to_numpy(), lod["gkey"].to_numpy()))
        lod = lod.take(order).reset_index(drop=True)
    else:
        lod = pd.DataFrame({c: np.zeros(0, np.int64) for c in
                            ("gkey", "bucket", "count", "busy_ns", "first_ns", "last_ns")})
        lod["name"] = np.zeros(0, np.int32)

    # The main index: (track, depth, cls, start).
    order = np.lexsort((start, cls, depth, track)) if n else np.zeros(0, np.int64)
    s_track, s_depth, s_cls = track[order], depth[order], cls[order]
    s_start, s_end = start[order], end[order]
    gs = _group_starts(s_track, s_depth, s_cls)
    counts = np.diff(np.r_[gs, n])
    maxend = s_end.copy()
    if n:
        # Running max of ends within each group: offset each group above the previous one.
        gid = np.repeat(np.arange(len(gs)), counts)
        rel = s_end - origin
        big = int(rel.max()) + 1 if len(rel) else 1
        if big * (len(gs) + 1) < (1 << 62):
            acc = np.maximum.accumulate(rel + gid.astype(np.int64) * big)
            maxend = acc - gid.astype(np.int64) * big + origin
        else:
            for a, c in zip(gs, counts):
                maxend[a:a + c] = np.maximum.accumulate(s_end[a:a + c])
    index = pd.DataFrame({
        "track_id": s_track, "depth": s_depth, "cls": s_cls, "start_ns": s_start,
        "dur_ns": dur[order], "maxend_ns": maxend, "name": name[order], "cat": cat[order],
        "args_row": args_row[order],
    })
    groups = pd.DataFrame({
        "track_id": s_track[gs] if n else np.zeros(0, np.int32),
        "depth": s_depth[gs] if n else np.zeros(0, np.int16),
        "cls": s_cls[gs] if n else np.zeros(0, np.int8),
        "lo": gs.astype(np.int64), "hi": (gs + counts).astype(np.int64),
    })
    # slice id of each row of the input table (for flow binding)
    inv = np.empty(n, np.int64)
    inv[order] = np.arange(n)

    edges = _bind_flows(flows, track, start, end, depth, inv)
    ctr = _counters(counters)
    meta = {"version": VERSION, "origin_ns": origin, "start_ns": t_lo, "end_ns": t_hi,
            "levels": levels, "steps": [[int(s), int(a), int(b)] for s, a, b in (step_windows or [])]}
    tables = {
        "trace_slices": index, "trace_groups": groups, "trace_lanes": lanes, "trace_lod": lod,
        "trace_edges": edges, "trace_counters": ctr,
        "trace_names": pd.DataFrame({"name": pd.array(names, dtype="string")}),
        "trace_cats": pd.DataFrame({"name": pd.array(cats, dtype="string")}),
    }
    return tables, meta


def _bind_flows(flows: pd.DataFrame, track, start, end, depth, inv) -> pd.DataFrame:
    """Flow endpoints -> slices; consecutive endpoints of one flow become edges src -> dst.

    An endpoint binds to the deepest slice of its track that encloses its time (`s` prefers a
    slice starting exactly there). Rows of `track/start/...` are the slices table's
    (track, start, -dur) order; `inv` maps them to slice ids of the index.
    """
    empty = pd.DataFrame({"src": np.zeros(0, np.int64), "dst": np.zeros(0, np.int64),
                          "name": pd.Categorical([]), "dst_order": np.zeros(0, np.int64)})
    if len(flows) == 0 or len(track) == 0:
        return empty
    f_track = flows["track_id"].to_numpy().astype(np.int64)
    f_ts = flows["ts_ns"].to_numpy().astype(np.int64)
    t64 = track.astype(np.int64)
    # Composite key (track, time) for a single binary search over the sorted table.
    tmin = int(min(start.min(), f_ts.min()))
    span = int(max(end.max(), f_ts.max())) - tmin + 1
    bound = np.full(len(flows), -1, np.int64)
    if span < (1 << 46) and t64.max() < (1 << 16) and f_track.max() < (1 << 16):
        shift = np.int64(1 << 46)
        keys = t64 * shift + (start - tmin)
        fkeys = f_track * shift + (f_ts - tmin)
        cand = np.searchsorted(keys, fkeys, side="right") - 1
        # Walk back a few slices (siblings that ended before ts) looking for an encloser.
        pending = np.arange(len(flows))
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
    bound = np.where(bound >= 0, inv[np.clip(bound, 0, None)], -1)
    # Memory-lean pairing key (flows reach millions of rows): codes, never string arrays.
    phase = flows["phase"]
    order_phase = np.where((phase == "s").to_numpy(), 0,
                           np.where((phase == "t").to_numpy(), 1, 2)).astype(np.int8)
    fid_codes, _ = pd.factorize(flows["flow_id"])
    cat_codes, cat_uni = pd.factorize(flows["cat"])
    key = fid_codes.astype(np.int64) * (len(cat_uni) + 1) + cat_codes.astype(np.int64)
    del fid_codes, cat_codes
    o = np.lexsort((order_phase, f_ts, key))
    k, b = key[o], bound[o]
    same = k[1:] == k[:-1]
    src, dst = b[:-1][same], b[1:][same]
    fname = flows["name"]
    if not isinstance(fname.dtype, pd.CategoricalDtype):
        fname = fname.astype("category")
    name_codes = fname.cat.codes.to_numpy()[o][:-1][same]
    keep = (src >= 0) & (dst >= 0) & (src != dst)
    src, dst, name_codes = src[keep], dst[keep], name_codes[keep]
    so = np.argsort(src, kind="stable")
    src, dst, name_codes = src[so], dst[so], name_codes[so]
    names = pd.Categorical.from_codes(np.maximum(name_codes, -1), categories=fname.cat.categories)
    return pd.DataFrame({"src": src, "dst": dst, "name": names,
                         "dst_order": np.argsort(dst, kind="stable").astype(np.int64)})


def _counters(counters: pd.DataFrame) -> pd.DataFrame:
    if len(counters) == 0:
        return pd.DataFrame({"track_id": np.zeros(0, np.int32), "series": pd.Categorical([]),
                             "ts_ns": np.zeros(0, np.int64), "value": np.zeros(0)})
    c = counters[["track_id", "series", "ts_ns", "value"]].copy()
    c["series"] = c["series"].astype(str).astype("category")
    o = np.lexsort((c["ts_ns"].to_numpy(), c["series"].cat.codes.to_numpy(),
                    c["track_id"].to_numpy()))
    return c.take(o).reset_index(drop=True)


def build(profile: Profile, step_windows=None) -> None:
    """Build the index of `profile` and store it with its tables (one call from derive)."""
    steps = []
    if step_windows is not None and len(step_windows):
        steps = list(zip(step_windows["step"].tolist(), step_windows["start_ns"].tolist(),
                         step_windows["end_ns"].tolist()))
    tables, meta = build_index(profile.table("slices"), profile.table("flows"),
                               profile.table("counters"), steps)
    store(profile, tables, meta)


def store(profile: Profile, tables: dict[str, pd.DataFrame], meta: dict) -> None:
    for name, df in tables.items():
        profile.rows[name] = len(df)
        if profile.directory:
            write_table(table_path(profile.directory, name), df)
            profile.tables.pop(name, None)
        else:
            profile.tables[name] = df
    profile.meta["trace_index"] = meta
    profile.release("slices", "flows", "counters")


def has_index(profile: Profile) -> bool:
    m = profile.meta.get("trace_index")
    return isinstance(m, dict) and m.get("version") == VERSION and \
        all(t in profile.rows for t in TABLES)
