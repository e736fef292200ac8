"""Timeline queries over the trace index (`trace_index`): tracks, viewport, slice details,
search, counters.

Every query is a handful of binary searches over memory-mapped sorted columns; nothing scans
a whole table per request except search (one vectorized pass over the name codes, cached).
Times in answers are µs; viewport items are relative to the answer's `start_us` so they keep
ns precision in a JSON double.
"""
from __future__ import annotations

import os
import re
import threading
import time

import numpy as np
import regex as timed_re  # like `re`, but a match can be given a time limit and runs
                          # without the GIL, so one slow pattern cannot stall the server

from ..lazy import pd
from ..lru import LRU
from ..model import Profile
from ..natural_sort import natural_key
from . import trace_index as ti

LIVE_MAX = ti.LIVE_MAX  # a lane with at most this many slices in the window is merged live
MAX_ITEMS = 20000       # slices + blocks per viewport answer (about 0.6 MB of JSON)
RUN_PX = 24             # a merged block never spans more than this many pixels
US = 1000.0
SEARCHES_KEPT = 16      # result sets of recent searches, per index
INDEXES_KEPT = 8        # open timeline indexes (a few profiles' views in memory)

# Regular-expression search (over the distinct names, never per slice): the whole search
# may take this long; a pattern that backtracks exponentially, such as (a|a)*$ on a long
# name, is stopped and refused instead of holding a server thread.
REGEX_SECONDS = 1.0
# `regex` expands counted repeats when compiling, so a{4294967294} or (a{1000}){1000}
# would take gigabytes: a pattern may stand for at most this many atoms once expanded.
MAX_REGEX_SIZE = 100_000
_COUNT = re.compile(r"\{(\d+)(?:,(\d*))?\}")


class SearchTimeout(Exception):
    """A regular-expression search ran out of time (the message says why)."""


def compile_search(pattern: str):
    """`pattern` as a case-insensitive compiled expression (Python `re` syntax);
    ValueError naming the reason when it is not a valid one or too large."""
    size = _expanded_size(pattern)
    if size > MAX_REGEX_SIZE:
        raise ValueError(f"the pattern's counted repeats ({{n}}) expand to more than"
                         f" {MAX_REGEX_SIZE} items")
    try:
        return timed_re.compile(pattern, timed_re.IGNORECASE | timed_re.VERSION0)
    except (timed_re.error, OverflowError, RecursionError, MemoryError) as exc:
        raise ValueError(str(exc)) from None


def _expanded_size(pattern: str) -> int:
    """How many atoms `pattern` has with every counted repeat written out (an upper bound:
    alternatives are added up), stopping once past MAX_REGEX_SIZE."""
    stack = [[0, 0]]  # per open group: [size so far, size of its last atom]
    i, n = 0, len(pattern)
    while i < n and stack[0][0] <= MAX_REGEX_SIZE:
        c, top = pattern[i], stack[-1]
        atom, step = 1, 1
        if c == "\\":
            step = 2
        elif c == "[":  # a class is one atom; skip to its closing bracket
            j = i + 1
            j += pattern.startswith("^", j)
            j += pattern.startswith("]", j)
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            step = j + 1 - i
        elif c == "(":
            stack.append([0, 0])
            i += 1
            continue
        elif c == ")" and len(stack) > 1:
            atom = stack.pop()[0]
            top = stack[-1]
        elif c == "{" and (m := _COUNT.match(pattern, i)):
            count = max(int(m.group(1)), int(m.group(2) or 0))
            top[0] += top[1] * (count - 1)
            top[1] *= count
            i = m.end()
            continue
        top[0] += atom
        top[1] = atom
        i += step
    while len(stack) > 1:  # unbalanced: compiling reports it
        inner = stack.pop()[0]
        stack[-1][0] += inner
    return stack[0][0]


class TraceIndex:
    """numpy views of one profile's index tables (memory-mapped) plus small Python maps."""

    def __init__(self, profile: Profile):
        if ti.has_index(profile):
            tables = {t: profile.table(t) for t in ti.TABLES}
            meta = profile.meta.trace_index
        else:  # a cache entry from before the index existed: build it here, in memory
            from ..step_windows import step_windows
            w = step_windows(profile)
            steps = list(zip(w["step"].tolist(), w["start_ns"].tolist(), w["end_ns"].tolist()))
            tables, meta = ti.build_index(profile.table("slices"), profile.table("flows"),
                                          profile.table("counters"), steps)
        self.profile = profile
        self.meta = meta
        self.origin = int(meta["origin_ns"])
        self.levels = int(meta["levels"])
        s = tables["trace_slices"]
        self.track = s["track_id"].to_numpy()
        self.depth = s["depth"].to_numpy()
        self.start = s["start_ns"].to_numpy()
        self.dur = s["dur_ns"].to_numpy()
        self.maxend = s["maxend_ns"].to_numpy()
        self.name = s["name"].to_numpy()
        self.cat = s["cat"].to_numpy()
        self.args_row = s["args_row"].to_numpy()
        self.names = [str(x) for x in tables["trace_names"]["name"].tolist()]
        self.cats = [str(x) for x in tables["trace_cats"]["name"].tolist()]
        g = tables["trace_groups"]
        # (track, depth) -> [(cls, lo, hi, first_start, last_maxend)]
        self.groups: dict[tuple[int, int], list] = {}
        for t, d, c, lo, hi in zip(g["track_id"].tolist(), g["depth"].tolist(),
                                   g["cls"].tolist(), g["lo"].tolist(), g["hi"].tolist()):
            self.groups.setdefault((t, d), []).append(
                (c, lo, hi, int(self.start[lo]), int(self.maxend[hi - 1])))
        lanes = tables["trace_lanes"]
        self.lane_id = {(t, d): i for i, (t, d) in enumerate(
            zip(lanes["track_id"].tolist(), lanes["depth"].tolist()))}
        self.track_lanes: dict[int, list[int]] = {}
        self.track_slices: dict[int, int] = {}
        for (t, d), n in zip(self.lane_id, lanes["slices"].tolist()):
            self.track_lanes.setdefault(t, []).append(d)
            self.track_slices[t] = self.track_slices.get(t, 0) + n
        lod = tables["trace_lod"]
        self.lod_gkey = lod["gkey"].to_numpy()
        self.lod_bucket = lod["bucket"].to_numpy()
        self.lod_count = lod["count"].to_numpy()
        self.lod_busy = lod["busy_ns"].to_numpy()
        self.lod_name = lod["name"].to_numpy()
        self.lod_first = lod["first_ns"].to_numpy()
        self.lod_last = lod["last_ns"].to_numpy()
        e = tables["trace_edges"]
        self.e_src = e["src"].to_numpy()
        self.e_dst = e["dst"].to_numpy()
        en = e["name"]
        if isinstance(en.dtype, pd.CategoricalDtype):
            self.e_name_codes = en.cat.codes.to_numpy()
            # (tolist: iterating an Arrow-backed Index is one Python call per item)
            self.e_name_cats = [str(x) for x in en.cat.categories.tolist()]
        else:
            cat_ = pd.Categorical(en.astype(str))
            self.e_name_codes, self.e_name_cats = cat_.codes, [str(x) for x in cat_.categories]
        self.e_dst_order = e["dst_order"].to_numpy()
        c = tables["trace_counters"]
        self.c_ts = c["ts_ns"].to_numpy()
        self.c_val = c["value"].to_numpy().astype(np.float64)
        self.c_groups = []  # (track, series, lo, hi)
        if len(c):
            tr = c["track_id"].to_numpy()
            se = c["series"].cat.codes.to_numpy()
            cats = [str(x) for x in c["series"].cat.categories]
            gs = ti._group_starts(tr, se)
            ends = np.r_[gs[1:], len(c)]
            for a, b in zip(gs.tolist(), ends.tolist()):
                self.c_groups.append((int(tr[a]), cats[se[a]], a, b))
        self.tracks_df = profile.table("tracks")
        self._search_cache: LRU = LRU(SEARCHES_KEPT)

    # ---- tracks -------------------------------------------------------------------------
    def tracks(self) -> dict:
        t = self.tracks_df
        counter_tracks = {g[0] for g in self.c_groups}
        rows = []
        for r in t.itertuples(index=False):
            tid = int(r.track_id)
            n = self.track_slices.get(tid, 0)
            series = [g[1] for g in self.c_groups if g[0] == tid]
            if n == 0 and tid not in counter_tracks:
                continue
            depths = self.track_lanes.get(tid, [])
            rows.append({
                "id": tid, "process": str(r.process or "") or f"pid {r.pid}",
                "thread": str(r.thread or "") or (f"tid {r.tid}" if str(r.tid or "") else ""),
                "pid": str(r.pid or ""), "tid": str(r.tid or ""),
                "kind": "counter" if n == 0 else str(r.kind or "other"),
                "max_depth": (max(depths) if depths else -1), "slices": n,
                "counters": series,
                "_ps": int(r.process_sort), "_ts": int(r.thread_sort),
            })
        # Natural order: the producer's process sort index, then process name; threads by their
        # sort index, then a numeric-aware name order.
        proc_rank: dict[str, tuple] = {}
        for r in rows:
            k = (r["_ps"], natural_key(r["process"]), r["pid"])
            if r["pid"] not in proc_rank or k < proc_rank[r["pid"]]:
                proc_rank[r["pid"]] = k
        rows.sort(key=lambda r: (proc_rank[r["pid"]], r["kind"] == "counter", r["_ts"],
                                 natural_key(r["thread"]), r["id"]))
        for i, r in enumerate(rows):
            r["sort"] = i
            del r["_ps"], r["_ts"]
        m = self.meta
        return {"start_us": m["start_ns"] / US, "end_us": m["end_ns"] / US,
                "origin_us": self.origin / US, "tracks": rows,
                "steps": [{"step": s, "start_us": a / US, "end_us": b / US}
                          for s, a, b in m.get("steps", [])]}

    # ---- viewport -----------------------------------------------------------------------
    def _ranges(self, key, t0: int, t1: int, min_cls: int = 0):
        out = []
        for c, lo, hi, first, last in self.groups.get(key, ()):
            if c < min_cls or first >= t1 or last <= t0:
                continue
            a = lo + int(np.searchsorted(self.maxend[lo:hi], t0, side="right"))
            b = lo + int(np.searchsorted(self.start[lo:hi], t1, side="left"))
            if b > a:
                out.append((c, a, b))
        return out

    def _gather(self, ranges, t0: int) -> np.ndarray:
        if not ranges:
            return np.zeros(0, np.int64)
        idx = np.concatenate([np.arange(a, b) for _, a, b in ranges])
        return idx[self.start[idx] + self.dur[idx] >= t0]

    def viewport(self, t0: int, t1: int, width_px: int, track_ids=None) -> dict:
        px = max((t1 - t0) / width_px, 1e-3)
        keys = sorted(self.groups)
        if track_ids is not None:
            wanted = set(track_ids)
            keys = [k for k in keys if k[0] in wanted]
        for _ in range(8):
            lanes, n_items = self._viewport(keys, t0, t1, px, width_px)
            if n_items <= MAX_ITEMS:
                break
            px *= 2
        codes = sorted({c for ln in lanes for c in ln.pop("_codes")})
        local = {c: i for i, c in enumerate(codes)}
        for ln in lanes:
            for s in ln["slices"]:
                s[3] = local[s[3]]
            for b in ln["blocks"]:
                b[4] = local[b[4]]
        return {"start_us": t0 / US, "end_us": t1 / US, "px_us": px / US,
                "names": [self.names[c] for c in codes], "lanes": lanes}

    def _viewport(self, keys, t0, t1, px, width_px):
        lanes = []
        total = 0
        for key in keys:
            ranges = self._ranges(key, t0, t1)
            if not ranges:
                continue
            n = sum(b - a for _, a, b in ranges)
            lane = self.lane_id[key]
            if n <= LIVE_MAX or px < ti.level_width(0):
                idx = self._gather(ranges, t0)
                big = self.dur[idx] >= px
                real = idx[big]
                small = idx[~big]
                if len(small):
                    o = np.argsort(self.start[small], kind="stable")
                    small = small[o]
                    bs = self.start[small]
                    blocks = self._blocks(bs, bs + self.dur[small], np.ones(len(small), np.int64),
                                          self.dur[small], self.name[small], t0, px)
                else:
                    blocks = []
            else:
                level = int(min(self.levels - 1, np.floor((np.log2(px) - ti.BASE_SHIFT) / 2)))
                level = max(level, 0)
                real = self._gather(self._ranges(key, t0, t1, min_cls=level + 1), t0)
                blocks = self._lod_blocks(lane, level, t0, t1, px)
            if len(real) > 4 * width_px:  # overlapping device tasks: keep the longest
                keep = np.argsort(-self.dur[real], kind="stable")[:4 * width_px]
                real = real[np.sort(keep)]
            s_rel = (self.start[real] - t0) / US
            items = [[int(i), round(float(s), 3), round(float(d), 3), int(c)] for i, s, d, c in
                     zip(real.tolist(), s_rel.tolist(), (self.dur[real] / US).tolist(),
                         self.name[real].tolist())]
            if not items and not blocks:
                continue
            codes = {it[3] for it in items} | {b[4] for b in blocks}
            lanes.append({"track": int(key[0]), "depth": int(key[1]), "slices": items,
                          "blocks": blocks, "_codes": codes})
            total += len(items) + len(blocks)
        return lanes, total

    def _lod_blocks(self, lane, level, t0, t1, px):
        gk = lane * 64 + level
        lo = int(np.searchsorted(self.lod_gkey, gk, side="left"))
        hi = int(np.searchsorted(self.lod_gkey, gk, side="right"))
        if hi <= lo:
            return []
        shift = ti.BASE_SHIFT + 2 * level
        b0 = (t0 - self.origin) >> shift
        b1 = (t1 - self.origin) >> shift
        a = lo + int(np.searchsorted(self.lod_bucket[lo:hi], b0 - 1, side="left"))
        b = lo + int(np.searchsorted(self.lod_bucket[lo:hi], b1, side="right"))
        if b <= a:
            return []
        sl = slice(a, b)
        first, last = self.lod_first[sl], self.lod_last[sl]
        keep = (last >= t0) & (first < t1)
        return self._blocks(first[keep], last[keep], self.lod_count[sl][keep],
                            self.lod_busy[sl][keep], self.lod_name[sl][keep], t0, px)

    @staticmethod
    def _blocks(bs, be, count, busy, name, t0, px) -> list:
        """Merge items (sorted by start) into blocks: a new block starts at a gap of >= 1 px
        or every RUN_PX pixels. -> [[rel_start_us, dur_us, count, busy_us, name_code]]"""
        n = len(bs)
        if n == 0:
            return []
        run_end = np.maximum.accumulate(be)
        gap = np.zeros(n, dtype=bool)
        gap[0] = True
        gap[1:] = bs[1:] - run_end[:-1] >= px
        cell = np.floor((bs - t0) / (px * RUN_PX)).astype(np.int64)
        gap[1:] |= cell[1:] != cell[:-1]
        g = np.flatnonzero(gap)
        st = bs[g]
        en = np.maximum.reduceat(be, g)
        cnt = np.add.reduceat(count, g)
        bz = np.add.reduceat(busy, g)
        top = ti._argmax_in_groups(busy, g)
        nm = name[top]
        rel = (st - t0) / US
        d = np.maximum(en - st, 0) / US
        return [[round(r, 3), round(x, 3), int(c), round(b, 3), int(k)] for r, x, c, b, k in
                zip(rel.tolist(), d.tolist(), cnt.tolist(), (bz / US).tolist(), nm.tolist())]

    # ---- one slice ------------------------------------------------------------------------
    def _slice_brief(self, i: int) -> dict:
        return {"id": int(i), "name": self.names[self.name[i]], "track": int(self.track[i]),
                "depth": int(self.depth[i]), "start_us": int(self.start[i]) / US,
                "dur_us": int(self.dur[i]) / US}

    def slice(self, i: int, args_reader) -> dict:
        out = self._slice_brief(i)
        out["category"] = self.cats[self.cat[i]]
        out["end_us"] = (int(self.start[i]) + int(self.dur[i])) / US
        row = int(self.args_row[i])
        args = args_reader(row) if row >= 0 else {}
        out["args"] = args
        out["call_stack"] = _first(args, ("Call stack", "Call Stack", "call stack", "callstack"))
        out["input_shapes"] = _first(args, ("Input Dims", "Input Shapes", "Input shapes",
                                            "input_shapes", "Input Dims "))
        # Enclosing slices on the same track (outermost first).
        t, d, s, e = int(self.track[i]), int(self.depth[i]), int(self.start[i]), \
            int(self.start[i] + self.dur[i])
        parents = []
        for dd in range(d):
            best = None
            for c, lo, hi, first, last in self.groups.get((t, dd), ()):
                if first > s or last < e:
                    continue
                j = lo + int(np.searchsorted(self.start[lo:hi], s, side="right")) - 1
                if j >= lo and self.start[j] + self.dur[j] >= e:
                    best = j if best is None or self.dur[j] < self.dur[best] else best
            if best is not None:
                parents.append(self._slice_brief(best))
        out["parents"] = parents
        out["flows"] = self.links(i)
        return out

    def links(self, i: int, hops: int = 2, limit: int = 50, nested: bool = True) -> list[dict]:
        """Slices linked to `i` through flows: out-going then in-coming, following each
        direction up to `hops` steps (host op -> launch -> kernel)."""
        out = []
        seen = {i}
        for direction in ("out", "in"):
            frontier = [i]
            for hop in range(1, hops + 1):
                nxt = []
                for j in frontier:
                    if direction == "out":
                        a = int(np.searchsorted(self.e_src, j, side="left"))
                        b = int(np.searchsorted(self.e_src, j, side="right"))
                        pairs = [(int(self.e_dst[k]), k) for k in range(a, min(b, a + limit))]
                    else:
                        a, b = self._dst_range(j)
                        pairs = [(int(self.e_src[self.e_dst_order[k]]), int(self.e_dst_order[k]))
                                 for k in range(a, min(b, a + limit))]
                    for other, k in pairs:
                        if other in seen or len(out) >= limit:
                            continue
                        seen.add(other)
                        d = self._slice_brief(other)
                        d.update({"flow": self.e_name_cats[self.e_name_codes[k]], "direction": direction, "hop": hop,
                                  "from": int(j)})
                        out.append(d)
                        nxt.append(other)
                frontier = nxt
        if not out and nested:  # a slice without flows of its own: those of the slices nested in it
            t, d = int(self.track[i]), int(self.depth[i])
            s, e = int(self.start[i]), int(self.start[i] + self.dur[i])
            kids: list[int] = []
            for dd in range(d + 1, d + 6):
                for _, a, b in self._ranges((t, dd), s, e + 1):
                    kids.extend(j for j in range(a, min(b, a + 64))
                                if self.start[j] >= s and self.start[j] + self.dur[j] <= e)
                if len(kids) > 64:
                    break
            for j in kids[:64]:
                for link in self.links(j, hops, limit, nested=False) if j != i else []:
                    if link["id"] not in seen and len(out) < limit:
                        seen.add(link["id"])
                        link["via"] = int(j)
                        out.append(link)
        return out

    def _dst_range(self, j: int) -> tuple[int, int]:
        order = self.e_dst_order
        lo, hi = 0, len(order)
        # binary search over dst in dst order (no sorted copy kept)
        a, b = lo, hi
        while a < b:
            m = (a + b) // 2
            if self.e_dst[order[m]] < j:
                a = m + 1
            else:
                b = m
        first = a
        a, b = first, hi
        while a < b:
            m = (a + b) // 2
            if self.e_dst[order[m]] <= j:
                a = m + 1
            else:
                b = m
        return first, a

    # ---- search -------------------------------------------------------------------------
    def search(self, q: str | None, regex: bool, cat: str | None, min_dur: int | None,
               max_dur: int | None, track: int | None) -> np.ndarray:
        key = (q, regex, cat, min_dur, max_dur, track)
        cached = self._search_cache.get(key)
        if isinstance(cached, SearchTimeout):  # asked again: refuse at once
            raise cached
        if cached is not None:
            return cached
        mask = None
        if q:
            if regex:
                try:
                    codes = self._regex_codes(q)
                except SearchTimeout as exc:
                    self._search_cache.put(key, exc)
                    raise
            else:
                ql = q.lower()
                codes = [i for i, nm in enumerate(self.names) if ql in nm.lower()]
            mask = np.isin(self.name, np.asarray(codes, dtype=self.name.dtype))
        if cat:
            cl = cat.lower()
            codes = [i for i, c in enumerate(self.cats) if cl in c.lower()]
            m = np.isin(self.cat, np.asarray(codes, dtype=self.cat.dtype))
            mask = m if mask is None else mask & m
        if min_dur is not None:
            m = self.dur >= min_dur
            mask = m if mask is None else mask & m
        if max_dur is not None:
            m = self.dur <= max_dur
            mask = m if mask is None else mask & m
        if track is not None:
            a = int(np.searchsorted(self.track, track, side="left"))
            b = int(np.searchsorted(self.track, track, side="right"))
            m = np.zeros(len(self.track), dtype=bool)
            m[a:b] = True
            mask = m if mask is None else mask & m
        hits = np.flatnonzero(mask) if mask is not None else np.arange(len(self.track))
        hits = hits[np.argsort(self.start[hits], kind="stable")]
        self._search_cache.put(key, hits)
        return hits

    def _regex_codes(self, q: str) -> list[int]:
        """Codes of the names `q` matches, within REGEX_SECONDS for all names together."""
        rx = compile_search(q)
        deadline = time.monotonic() + REGEX_SECONDS
        codes = []
        for i, nm in enumerate(self.names):
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                if rx.search(nm, timeout=left, concurrent=True):
                    codes.append(i)
            except TimeoutError:
                raise SearchTimeout(
                    f"the regular expression took more than {REGEX_SECONDS:g} s over"
                    f" {len(self.names)} distinct names; simplify it (nested repeats such as"
                    f" (a+)+ or (a|a)* backtrack exponentially)") from None
        return codes

    # ---- counters -----------------------------------------------------------------------
    def counters(self, t0: int, t1: int, width_px: int, track_ids=None) -> dict:
        px = max((t1 - t0) / width_px, 1e-3)
        out = []
        for tr, series, lo, hi in self.c_groups:
            if track_ids is not None and tr not in track_ids:
                continue
            ts = self.c_ts[lo:hi]
            a = max(int(np.searchsorted(ts, t0, side="left")) - 1, 0)
            b = min(int(np.searchsorted(ts, t1, side="right")) + 1, hi - lo)
            t, v = ts[a:b], self.c_val[lo:hi][a:b]
            if len(t) > 2 * width_px:
                cell = np.floor((t - t0) / px).astype(np.int64)
                g = ti._group_starts(cell)
                ends = np.r_[g[1:], len(t)] - 1
                imax = ti._argmax_in_groups(v, g)
                imin = ti._argmax_in_groups(-v, g)
                keep = np.unique(np.concatenate([g, ends, imax, imin]))
                t, v = t[keep], v[keep]
            vals = self.c_val[lo:hi]
            pts = [[round(x, 3), None if np.isnan(y) else float(y)]
                   for x, y in zip(((t - t0) / US).tolist(), v.tolist())]
            out.append({"track": tr, "series": series, "points": pts,
                        "max": float(np.nanmax(vals)) if len(vals) else None,
                        "min": float(np.nanmin(vals)) if len(vals) else None})
        return {"start_us": t0 / US, "end_us": t1 / US, "series": out}

    # ---- measure: what ran inside a range, summed by name ------------------------------
    def summarize(self, t0: int, t1: int, track_ids=None, limit: int = 50) -> dict:
        idx_parts = []
        for key in self.groups:
            if track_ids is not None and key[0] not in track_ids:
                continue
            idx_parts.append(self._gather(self._ranges(key, t0, t1), t0))
        idx = np.concatenate(idx_parts) if idx_parts else np.zeros(0, np.int64)
        s = np.maximum(self.start[idx], t0)
        e = np.minimum(self.start[idx] + self.dur[idx], t1)
        inside = np.maximum(e - s, 0)
        if len(idx) == 0:
            return {"start_us": t0 / US, "end_us": t1 / US, "slices": 0, "names": 0, "rows": []}
        df = pd.DataFrame({"name": self.name[idx], "t": inside, "n": 1})
        g = df.groupby("name").agg(count=("n", "sum"), total=("t", "sum"))
        g = g.sort_values("total", ascending=False)
        rows = [{"name": self.names[int(k)], "count": int(r["count"]),
                 "total_us": int(r["total"]) / US} for k, r in g.head(limit).iterrows()]
        return {"start_us": t0 / US, "end_us": t1 / US, "slices": int(len(idx)),
                "names": int(len(g)), "rows": rows}


def _first(d: dict, keys) -> str:
    if not isinstance(d, dict):
        return ""
    for k in keys:
        v = d.get(k)
        if v not in (None, ""):
            return v if isinstance(v, str) else str(v)
    return ""


_indexes: LRU = LRU(INDEXES_KEPT)
_lock = threading.Lock()
_building: dict = {}


def index_for(profile: Profile, key: str) -> TraceIndex:
    """The (cached) index of a profile; a few profiles' views are kept in memory."""
    with _lock:
        idx = _indexes.get(key)
        if idx is not None and idx.profile is profile:
            return idx
        ev = _building.get(key)
        if ev is None:
            ev = _building[key] = threading.Event()
            owner = True
        else:
            owner = False
    if not owner:
        ev.wait(600)
        with _lock:
            idx = _indexes.get(key)
        if idx is not None:
            return idx
    try:
        idx = TraceIndex(profile)
        _indexes.put(key, idx)
        return idx
    finally:
        if owner:
            with _lock:
                _building.pop(key, None)
            ev.set()


def args_reader(profile: Profile):
    """row -> args dict, from the args side file (or the in-memory table in tests)."""
    from ..readers.trace_args import read_args
    path = None
    if profile.directory and profile.meta.args_file:
        path = profile.local_file(os.path.join(profile.directory, profile.meta.args_file))
        if not os.path.isfile(path):
            path = None
    table = profile.meta.args_table

    def read(row: int) -> dict:
        if path is None and table is None:
            return {}
        try:
            return read_args(path, table if path is None else None, [row])[0]
        except (OSError, IndexError, ValueError):
            return {}
    return read
