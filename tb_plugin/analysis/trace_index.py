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
  first_ns, last_ns (max end). Sorted by (gkey, bucket). Only the levels a viewport can
  read for that lane (`_lod_first_levels`: a viewport merges a lane live, without LOD,
  while its window holds at most LIVE_MAX of the lane's slices); the rest were 60% of
  the rows of a 1 GB trace (level 1 of 4 us buckets had ~1.4 slices per bucket).
- trace_edges: src, dst (slice ids), name: flows bound to slices (consecutive endpoints of
  one flow id), sorted by src; `dst_order` is the permutation sorting them by dst.
- trace_counters: track_id, series, ts_ns, value sorted by (track_id, series, ts_ns).
- trace_names, trace_cats: the strings of the codes.
meta.trace_index: version, origin_ns, start_ns, end_ns, levels, steps [[n, start, end]].
"""
from __future__ import annotations

import concurrent.futures as cf

import numpy as np

from ..int_sort import lexsort
from ..lazy import pd
from ..model import Profile
from ..table_files import table_path, write_columns
from . import name_text, trace_edges

VERSION = 1
BASE_SHIFT = 12          # level L buckets are 2^(BASE_SHIFT + 2L) ns wide
MAX_LEVELS = 24
NCLS = MAX_LEVELS + 1
# The viewport queries' parameters (analysis/trace.py, http/api_trace.py), here because the
# index keeps only the LOD rows such queries can read (`_lod_first_levels`).
LIVE_MAX = 20000        # a lane with at most this many slices in the window is merged live
MAX_WIDTH_PX = 8000     # the widest viewport asked for, in pixels
TABLES = ("trace_slices", "trace_groups", "trace_lanes", "trace_lod", "trace_edges",
          "trace_counters", "trace_names", "trace_cats")


def duration_class(dur: np.ndarray) -> np.ndarray:
    d = np.maximum(np.asarray(dur, dtype=np.int64), 1)
    fl = np.floor(np.log2(d.astype(np.float64))).astype(np.int64)  # floor(log2 dur)
    return np.clip((fl - 10) // 2, 0, NCLS - 1).astype(np.int8)


def level_width(level: int) -> int:
    return 1 << (BASE_SHIFT + 2 * level)


def _codes(col) -> tuple[np.ndarray, object]:
    """(int32 codes, names as an Arrow string array) of a name column; a missing name is ""
    (one more name). The names are never visited one by one in Python (a trace has
    hundreds of thousands)."""
    import pyarrow as pa

    if isinstance(col, (pa.ChunkedArray, pa.Array)):  # read without pandas (`build`)
        return _arrow_codes(col)
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = name_text.text(col.cat.categories)
        codes = col.cat.codes.to_numpy().astype(np.int32, copy=False)
        if (codes < 0).any():
            cats = pa.concat_arrays([cats, pa.array([""], type=cats.type)])
            codes = np.where(codes < 0, len(cats) - 1, codes).astype(np.int32)
        return codes, cats
    cat = pd.Categorical(col.astype("string").fillna(""))
    return cat.codes.astype(np.int32), name_text.text(cat.categories)


def _arrow_codes(col) -> tuple[np.ndarray, object]:
    """`_codes` of an Arrow column (a missing name is "": one more name)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    indices, cats = name_text.dictionary_parts(col)
    if indices.null_count:
        cats = pa.concat_arrays([cats, pa.array([""], type=cats.type)])
        indices = pc.fill_null(indices, len(cats) - 1)
    return indices.to_numpy().astype(np.int32, copy=False), cats


def _string_column(names) -> pd.api.extensions.ExtensionArray:
    """The names (Arrow) as the `name` column of trace_names / trace_cats: pandas' string
    dtype, wrapping the Arrow array without a copy."""
    import pyarrow as pa

    return pd.array(names.cast(pa.large_string()), dtype="string")


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
    at_max = np.flatnonzero(values == np.repeat(mx, counts))
    # every group holds its maximum: its first one is the first at or after its start
    return at_max[np.searchsorted(at_max, starts)]


def _stable_order(key: np.ndarray) -> np.ndarray:
    """`np.argsort(key, kind="stable")` of non-negative integer keys; keys that fit in 16
    bits are sorted as such (numpy's radix sort), the same permutation faster."""
    if len(key) and int(key.max()) < (1 << 16) and int(key.min()) >= 0:
        key = key.astype(np.uint16)
    return np.argsort(key, kind="stable")


# Lanes are indexed in groups of about this many slices: small enough that a group's
# temporaries stay in cache (1.44 -> 1.11 s for the 1.1M slices of a 300 MB trace, against
# groups of 1M; the tables are the same whatever the size).
CHUNK_SLICES = 1 << 17


def _np(col, dtype) -> np.ndarray:
    """A column as a numpy array of `dtype`, without a copy when it already is one."""
    return np.asarray(col.to_numpy() if hasattr(col, "to_numpy") else col).astype(dtype, copy=False)


def build_index(slices: pd.DataFrame, flows: pd.DataFrame, counters: pd.DataFrame,
                step_windows: list | None = None,
                prune_lod: bool = True) -> tuple[dict[str, pd.DataFrame], dict]:
    """The index tables and meta for a profile's slices/flows/counters (see module doc)."""
    tables: dict[str, pd.DataFrame] = {}
    meta = build_columns(slices, flows, counters, step_windows,
                         emit=lambda name, cols: tables.__setitem__(name, pd.DataFrame(cols)),
                         prune_lod=prune_lod)
    return tables, meta


def build_columns(slices, flows, counters, step_windows=None, emit=None,
                  release=None, prune_lod: bool = True) -> dict:
    """`build_index` as columns: each table is handed to `emit(name, {column: array})` as
    soon as it is complete (to be written and dropped), and made lane group by lane group,
    so the temporaries stay small whatever the trace size. `slices` / `flows` may be
    functions returning the table, so that only this function holds them; `release()`
    (optional) is called once the input columns are extracted (the caller drops its copy).
    `prune_lod=False` keeps the LOD rows of every level of every lane (for tests: the
    viewports must not change). Returns the index meta."""
    if callable(slices):
        slices = slices()
    n = len(slices)
    track = _np(slices["track_id"], np.int32)
    start = _np(slices["start_ns"], np.int64)
    dur = np.maximum(_np(slices["dur_ns"], np.int64), 0)
    depth = _np(slices["depth"], np.int16)
    name, names = _codes(slices["name"])
    cat, cats = _codes(slices["cat"])
    args_row = _np(slices["args_row"], np.int64)
    del slices
    if release is not None:
        release()

    c_ts = _np(counters["ts_ns"], np.int64) if len(counters) else np.zeros(0, np.int64)
    if n or len(c_ts):
        lo = [int(start.min())] if n else []
        hi = [int((start + dur).max())] if n else []
        if len(c_ts):
            lo.append(int(c_ts.min()))
            hi.append(int(c_ts.max()))
        t_lo, t_hi = min(lo), max(hi)
    else:
        t_lo = t_hi = 0
    origin = t_lo
    span = max(t_hi - origin, 1)
    levels = 1
    while levels < MAX_LEVELS and not level_width(levels) > 4 * span:
        levels += 1

    # The flows are paired to slice rows in a thread while the lanes are indexed here:
    # both are numpy and Arrow work that leaves the GIL (a 1 GB trace: 1.4 s of ~3 s).
    pairing = _start_pairing(flows, track, start, dur)
    del flows

    # Lanes = (track, depth), slices of a lane by start (stable on the table's order).
    lane_order = lexsort((start, depth, track)) if n else np.zeros(0, np.int64)
    lane_starts = _group_starts(track[lane_order], depth[lane_order])
    lane_bounds = np.r_[lane_starts, n].astype(np.int64)
    n_lanes = len(lane_starts)
    emit("trace_lanes", {
        "track_id": track[lane_order[lane_starts]] if n else np.zeros(0, np.int32),
        "depth": depth[lane_order[lane_starts]] if n else np.zeros(0, np.int16),
        "slices": np.diff(lane_bounds).astype(np.int64),
    })

    # The main index, filled group by group: (track, depth, cls, start).
    out = {
        "track_id": np.empty(n, np.int32), "depth": np.empty(n, np.int16),
        "cls": np.empty(n, np.int8), "start_ns": np.empty(n, np.int64),
        "dur_ns": np.empty(n, np.int64), "maxend_ns": np.empty(n, np.int64),
        "name": np.empty(n, np.int32), "cat": np.empty(n, np.int32),
        "args_row": np.empty(n, np.int64),
    }
    inv = np.empty(n, np.int64)  # slice id of each row of the input table
    groups: dict[str, list] = {k: [] for k in ("track_id", "depth", "cls", "lo", "hi")}
    lod_parts: dict[str, list] = {k: [] for k in LOD_COLUMNS}
    la = 0
    while la < n_lanes:
        # A group of whole lanes of about CHUNK_SLICES slices (one lane may be bigger).
        lb = int(np.searchsorted(lane_bounds, lane_bounds[la] + CHUNK_SLICES, side="right")) - 1
        lb = min(max(lb, la + 1), n_lanes)
        a, b = int(lane_bounds[la]), int(lane_bounds[lb])
        _index_chunk(lane_order[a:b], a, np.repeat(np.arange(la, lb, dtype=np.int64),
                                                   np.diff(lane_bounds[la:lb + 1])),
                     track, depth, start, dur, name, cat, args_row, origin, levels,
                     out, inv, groups, lod_parts, LIVE_MAX if prune_lod else 0)
        la = lb
    del lane_order, name, cat, args_row, depth
    emit("trace_slices", out)
    del out
    emit("trace_groups", {"track_id": np.asarray(groups["track_id"], np.int32),
                          "depth": np.asarray(groups["depth"], np.int16),
                          "cls": np.asarray(groups["cls"], np.int8),
                          "lo": np.asarray(groups["lo"], np.int64),
                          "hi": np.asarray(groups["hi"], np.int64)})
    lod = {}
    for k, dt in LOD_COLUMNS.items():
        parts = lod_parts.pop(k)
        lod[k] = np.concatenate(parts).astype(dt, copy=False) if parts else np.zeros(0, dt)
        del parts
    emit("trace_lod", lod)
    del lod
    emit("trace_names", {"name": _string_column(names)})
    emit("trace_cats", {"name": _string_column(cats)})
    del names, cats

    edges = trace_edges.edges(pairing.result(), inv)
    del pairing, inv, track, start, dur
    if release is not None:
        release()
    emit("trace_edges", {c: edges[c] for c in edges.columns})
    del edges
    ctr = _counters(counters)
    emit("trace_counters", {c: ctr[c] for c in ctr.columns})
    return {"version": VERSION, "origin_ns": origin, "start_ns": t_lo, "end_ns": t_hi,
            "levels": levels, "steps": [[int(s), int(a), int(b)] for s, a, b in (step_windows or [])]}


def _start_pairing(flows, track, start, dur) -> "cf.Future":
    """`trace_edges.pair_flows` of the flows (a table, or a function returning it) in a
    thread of its own; its future."""
    def pair():
        table = flows() if callable(flows) else flows
        return trace_edges.pair_flows(table, track, start, start + dur)

    pool = cf.ThreadPoolExecutor(1, thread_name_prefix="npu-profiler-flows")
    try:
        return pool.submit(pair)
    finally:
        pool.shutdown(wait=False)  # the thread ends with its one task


LOD_COLUMNS = {"gkey": np.int64, "bucket": np.int64, "count": np.int64, "busy_ns": np.int64,
               "name": np.int32, "first_ns": np.int64, "last_ns": np.int64}


def _lod_first_levels(lane_of, c_start, c_dur, levels: int, live_max: int) -> np.ndarray:
    """Per lane of a chunk (rows lane by lane, by start within a lane): the first LOD level
    a viewport can read for it (`levels`: none). A viewport reads level L of a lane only
    when its window holds more than `live_max` of the lane's rows, and level L only for a
    pixel width below 2^(14+2L) ns, i.e. for a window shorter than MAX_WIDTH_PX times that
    (the top level for any window: the width is clamped there). The rows it counts all
    start after t0 - D (D: the lane's longest slice), so a window of length W holds more
    than `live_max` of them only if some `live_max + 1` consecutive starts lie within
    W + D: with w_min the shortest such stretch, level L < top is read only if
    MAX_WIDTH_PX * 2^(14+2L) + D >= w_min."""
    g = _group_starts(lane_of)
    m = len(lane_of)
    count = np.diff(np.r_[g, m])
    gap = np.full(m, np.inf)
    if m > live_max:
        same = lane_of[live_max:] == lane_of[:m - live_max]
        gap[:m - live_max] = np.where(same, (c_start[live_max:] - c_start[:m - live_max])
                                      .astype(np.float64), np.inf)
    w_min = np.minimum.reduceat(gap, g)
    longest = np.maximum.reduceat(c_dur, g).astype(np.float64)
    first = np.zeros(len(g), np.int64)
    for level in range(levels - 1):  # levels it cannot be read at: the lowest ones
        window = float(MAX_WIDTH_PX) * float(1 << (14 + 2 * level))
        first += (window + longest) < w_min * (1 - 1e-9) - 1
    return np.where((first >= levels - 1) & (count <= live_max), levels, first)


def _index_chunk(idx, base, lane_of, track, depth, start, dur, name, cat, args_row,
                 origin, levels, out, inv, groups, lod_parts, live_max: int = 0) -> None:
    """Index one group of whole lanes: rows [base, base + len(idx)) of the main index, its
    (track, depth, cls) groups, and its LOD rows (appended in (gkey, bucket) order) of the
    levels a viewport can read (`_lod_first_levels`; every level with live_max 0)."""
    m = len(idx)
    if m == 0:
        return
    c_start = start[idx]
    c_dur = dur[idx]
    c_end = c_start + c_dur
    c_cls = duration_class(c_dur)
    c_name = name[idx]
    lane0 = int(lane_of[0])
    first_level = _lod_first_levels(lane_of, c_start, c_dur, levels, live_max)

    # LOD summaries per level, from the lane-ordered rows (buckets stay sorted per level).
    # Once a level holds every row, each further level merges the previous level's buckets
    # four by four (its buckets are 4x wider): sums, maxima, the first longest slice of the
    # merged buckets, the same numbers as from the rows, at the cost of the buckets.
    parts = []
    merged = None   # the previous level's buckets when that level held every row
    for level in range(int(first_level.min()), levels):
        if merged is None:
            sel = np.flatnonzero(c_cls <= level)
            if len(sel) == 0:
                continue
            every = len(sel) == m
            lane = lane_of if every else lane_of[sel]
            s_start = c_start if every else c_start[sel]
            bucket = (s_start - origin) >> (BASE_SHIFT + 2 * level)
            g = _group_starts(lane, bucket)
            d = c_dur if every else c_dur[sel]
            longest = _argmax_in_groups(d, g)
            cur = {"lane": lane[g], "bucket": bucket[g],
                   "count": np.diff(np.r_[g, len(sel)]).astype(np.int64),
                   "busy_ns": np.add.reduceat(d, g), "max_dur": np.maximum.reduceat(d, g),
                   "name": (c_name if every else c_name[sel])[longest],
                   "first_ns": s_start[g],
                   "last_ns": np.maximum.reduceat(c_end if every else c_end[sel], g)}
            del sel, lane, s_start, bucket, g, d, longest
            if every:
                merged = cur
        else:
            bucket = merged["bucket"] >> 2
            g = _group_starts(merged["lane"], bucket)
            longest = _argmax_in_groups(merged["max_dur"], g)
            cur = {"lane": merged["lane"][g], "bucket": bucket[g],
                   "count": np.add.reduceat(merged["count"], g),
                   "busy_ns": np.add.reduceat(merged["busy_ns"], g),
                   "max_dur": np.maximum.reduceat(merged["max_dur"], g),
                   "name": merged["name"][longest], "first_ns": merged["first_ns"][g],
                   "last_ns": np.maximum.reduceat(merged["last_ns"], g)}
            merged = cur
            del bucket, g, longest
        part = {"gkey": cur["lane"] * 64 + level, "bucket": cur["bucket"],
                "count": cur["count"], "busy_ns": cur["busy_ns"], "name": cur["name"],
                "first_ns": cur["first_ns"], "last_ns": cur["last_ns"]}
        kept = first_level[cur["lane"] - lane0] <= level
        if not kept.all():  # (`cur` stays whole: the next level may merge it)
            part = {k: v[kept] for k, v in part.items()}
        if len(part["gkey"]):
            parts.append(part)
        del cur, part
    del merged
    if parts:
        # (gkey, bucket) order = by lane, then level, then bucket: each level's part is in
        # (lane, bucket) order and the parts are in level order, so a stable sort of their
        # concatenation by lane alone gives it.
        lane = np.concatenate([p["gkey"] for p in parts]) // 64
        o = _stable_order(lane - lane[0])
        for k in LOD_COLUMNS:
            lod_parts[k].append(np.concatenate([p.pop(k) for p in parts])[o])
        del lane, o, parts

    # Main index rows: by (lane, cls), start order kept (stable).
    o = _stable_order((lane_of - lane_of[0]) * 32 + c_cls)
    rows = idx[o]
    s_lane, s_cls = lane_of[o], c_cls[o]
    s_end = c_end[o]
    sl = slice(base, base + m)
    out["track_id"][sl] = track[rows]
    out["depth"][sl] = depth[rows]
    out["cls"][sl] = s_cls
    out["start_ns"][sl] = c_start[o]
    out["dur_ns"][sl] = c_dur[o]
    out["name"][sl] = c_name[o]
    out["cat"][sl] = cat[rows]
    out["args_row"][sl] = args_row[rows]
    inv[rows] = np.arange(base, base + m, dtype=np.int64)
    gs = _group_starts(s_lane, s_cls)
    ge = np.r_[gs[1:], m]
    maxend = out["maxend_ns"][sl]
    for g0, g1 in zip(gs.tolist(), ge.tolist()):  # <= NCLS groups per lane
        np.maximum.accumulate(s_end[g0:g1], out=maxend[g0:g1])
    groups["track_id"].extend(out["track_id"][sl][gs].tolist())
    groups["depth"].extend(out["depth"][sl][gs].tolist())
    groups["cls"].extend(s_cls[gs].tolist())
    groups["lo"].extend((gs + base).tolist())
    groups["hi"].extend((ge + base).tolist())


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
    # The slice table is dropped as soon as its columns are extracted, the flows once bound,
    # and each index table is written as soon as it is complete: the reader never holds the
    # input tables and the whole index at once.
    def emit(name: str, cols: dict) -> None:
        profile.rows[name] = len(next(iter(cols.values()))) if cols else 0
        if profile.directory:
            write_columns(table_path(profile.directory, name), cols)
            profile.tables.pop(name, None)
        else:
            profile.tables[name] = pd.DataFrame(cols)

    # The slices and flows as Arrow columns (their pandas frames cost ~1.8 s of a 1 GB
    # trace's 6 s here).
    meta = build_columns(lambda: profile.arrow_table("slices"),
                         lambda: profile.arrow_table("flows"),
                         profile.table("counters"), steps, emit=emit,
                         release=lambda: profile.release("slices", "flows"))
    profile.meta.trace_index = meta
    profile.release("slices", "flows", "counters")


def has_index(profile: Profile) -> bool:
    m = profile.meta.trace_index
    return isinstance(m, dict) and m.get("version") == VERSION and \
        all(t in profile.rows for t in TABLES)
