"""The timeline index keeps only the LOD rows a viewport can read (trace_index.
`_lod_first_levels`): every viewport answer is the same as with every level of every lane
kept, over windows from a microsecond to the whole trace, widths up to MAX_WIDTH_PX, on
lanes that are sparse, dense everywhere, dense in one burst, or hold very long slices."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tb_plugin.analysis import trace_index as ti
from tb_plugin.analysis.trace import TraceIndex
from tb_plugin.model import Profile, ProfileMeta
from tb_plugin.schema import empty_table

T0 = 1_700_000_000_000_000_000
SPAN = 20_000_000_000  # 20 s


def _slices(seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []

    def lane(track, depth, starts, durs):
        parts.append(pd.DataFrame({"track_id": np.full(len(starts), track, np.int32),
                                   "depth": np.full(len(starts), depth, np.int16),
                                   "start_ns": (T0 + starts).astype(np.int64),
                                   "dur_ns": durs.astype(np.int64)}))

    # Dense everywhere: 60,000 short slices over 20 s (3 per ms).
    n = 60_000
    lane(0, 0, np.sort(rng.integers(0, SPAN, n)), rng.integers(100, 20_000, n))
    # Sparse but for one burst of 25,000 slices within 40 ms.
    burst = 5_000_000_000 + np.sort(rng.integers(0, 40_000_000, 25_000))
    lane(1, 0, np.r_[np.sort(rng.integers(0, SPAN, 3_000)), burst],
         rng.integers(50, 3_000, 28_000))
    # Dense, with a few slices of seconds (the window bound's D).
    lane(2, 1, np.sort(rng.integers(0, SPAN, 30_000)),
         np.where(rng.random(30_000) < 0.001, 4_000_000_000, rng.integers(1_000, 200_000, 30_000)))
    # Sparse: never read from the LOD.
    lane(3, 0, np.sort(rng.integers(0, SPAN, 500)), rng.integers(1_000, 50_000_000, 500))
    s = pd.concat(parts, ignore_index=True)
    n = len(s)
    s["depth"] = s["depth"].astype(np.int16)
    s["name"] = pd.Categorical([f"op{i % 23}" for i in range(n)])
    s["cat"] = pd.Categorical(["cpu_op"] * n)
    s["args_row"] = np.arange(n, dtype=np.int64)
    return s


_NO_FLOWS = pd.DataFrame({"track_id": np.zeros(0, np.int32), "ts_ns": np.zeros(0, np.int64),
                          "phase": pd.Series([], dtype=object), "flow_id": pd.Series([], dtype=object),
                          "cat": pd.Series([], dtype=object), "name": pd.Series([], dtype=object)})
_NO_COUNTERS = pd.DataFrame({"track_id": np.zeros(0, np.int32), "series": pd.Series([], dtype=object),
                             "ts_ns": np.zeros(0, np.int64), "value": np.zeros(0)})


def _index(slices, prune: bool):
    tables, meta = ti.build_index(slices, _NO_FLOWS, _NO_COUNTERS, prune_lod=prune)
    tables["tracks"] = empty_table("tracks")
    prof = Profile(tables=tables, meta=ProfileMeta(trace_index=meta), directory=None)
    return TraceIndex(prof), tables


@pytest.fixture(scope="module")
def indexes():
    slices = _slices()
    full, full_tables = _index(slices, False)
    pruned, pruned_tables = _index(slices, True)
    return full, pruned, full_tables, pruned_tables


def test_levels_no_viewport_reads_are_left_out(indexes):
    _, _, full, pruned = indexes
    lanes = full["trace_lanes"]
    lane_of = {(int(t), int(d)): i for i, (t, d) in enumerate(zip(lanes["track_id"],
                                                                 lanes["depth"]))}
    levels_full = full["trace_lod"]["gkey"].to_numpy()
    levels_kept = pruned["trace_lod"]["gkey"].to_numpy()
    assert len(levels_kept) < 0.5 * len(levels_full)  # most rows go
    kept = {(int(g) // 64, int(g) % 64) for g in np.unique(levels_kept)}
    # The sparse lane keeps none; the burst lane keeps its fine levels (a 40 ms window
    # holds 25,000 of its slices); the uniformly dense lane only coarse ones.
    assert not any(lane == lane_of[(3, 0)] for lane, _ in kept)
    assert (lane_of[(1, 0)], 0) in kept
    dense = sorted(level for lane, level in kept if lane == lane_of[(0, 0)])
    assert dense and dense[0] >= 1
    # What is kept is exactly the full index's rows of those (lane, level) pairs.
    f = full["trace_lod"]
    mask = np.isin(f["gkey"].to_numpy(), np.unique(levels_kept))
    pd.testing.assert_frame_equal(f[mask].reset_index(drop=True), pruned["trace_lod"],
                                  check_exact=True)


def test_every_viewport_is_the_same_as_with_every_level(indexes):
    full, pruned, _, _ = indexes
    rng = np.random.default_rng(11)
    windows = [(T0, T0 + SPAN)]
    for length in (1_000, 100_000, 2_000_000, 40_000_000, 300_000_000, 3_000_000_000,
                   12_000_000_000):
        for _ in range(6):
            a = T0 + int(rng.integers(-length // 2, SPAN))
            windows.append((a, a + length))
    windows.append((T0 + 5_000_000_000, T0 + 5_040_000_000))  # the burst
    levels_read = []
    lod_blocks = pruned._lod_blocks

    def counted(lane, level, *args):
        levels_read.append((lane, level))
        return lod_blocks(lane, level, *args)

    pruned._lod_blocks = counted
    used_lod = 0
    for t0, t1 in windows:
        for width in (100, 1600, ti.MAX_WIDTH_PX):
            want = full.viewport(t0, t1, width)
            assert pruned.viewport(t0, t1, width) == want, (t0 - T0, t1 - t0, width)
            used_lod += sum(len(ln["blocks"]) for ln in want["lanes"])
    assert used_lod  # blocks were drawn (live merges and LOD levels alike)
    # The LOD was read, at several levels, the burst lane's fine ones among them.
    assert len({level for _, level in levels_read}) >= 3, sorted(set(levels_read))
    assert min(level for _, level in levels_read) <= 1
