"""The timeline index (analysis/trace_index.py) against its definition, computed here
without it: the level-of-detail rows of every lane and level, the slice order, and that
the index is the same however its lanes are grouped."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tb_plugin.analysis import trace_edges
from tb_plugin.analysis import trace_index as ti


def _slices(n: int = 5000, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    names = [f"op_{i}" for i in range(40)]
    return pd.DataFrame({
        "track_id": rng.integers(0, 6, n).astype(np.int32),
        "depth": rng.integers(0, 4, n).astype(np.int16),
        "start_ns": (1_700_000_000_000_000_000 + rng.integers(0, 5_000_000_000, n)).astype(np.int64),
        # durations from ns to seconds: every duration class is used
        "dur_ns": np.exp(rng.uniform(0, np.log(3e9), n)).astype(np.int64),
        "name": pd.Categorical(rng.choice(names, n)),
        "cat": pd.Categorical(rng.choice(["cpu_op", "kernel", "python"], n)),
        "args_row": np.arange(n, dtype=np.int64),
    })


_NO_FLOWS = pd.DataFrame({"track_id": np.zeros(0, np.int32), "ts_ns": np.zeros(0, np.int64),
                          "phase": pd.Series([], dtype=object), "flow_id": pd.Series([], dtype=object),
                          "cat": pd.Series([], dtype=object), "name": pd.Series([], dtype=object)})
_NO_COUNTERS = pd.DataFrame({"track_id": np.zeros(0, np.int32), "series": pd.Series([], dtype=object),
                             "ts_ns": np.zeros(0, np.int64), "value": np.zeros(0)})


def _index(slices, monkeypatch, chunk: int):
    monkeypatch.setattr(ti, "CHUNK_SLICES", chunk)
    return ti.build_index(slices, _NO_FLOWS, _NO_COUNTERS)


@pytest.mark.parametrize("chunk", [1, 7, 400, 1000])
def test_the_index_is_the_same_however_its_lanes_are_grouped(monkeypatch, chunk):
    slices = _slices()
    base, base_meta = _index(slices, monkeypatch, 1 << 30)
    got, meta = _index(slices, monkeypatch, chunk)
    assert meta == base_meta
    assert set(got) == set(base)
    for name, table in base.items():
        pd.testing.assert_frame_equal(got[name], table, check_exact=True, obj=name)


def test_lod_rows_are_the_buckets_of_each_lane_and_level(monkeypatch):
    # Every level of every lane kept (the pruning of levels no viewport reads is tested in
    # test_trace_lod_pruning.py): these lanes are far below LIVE_MAX.
    monkeypatch.setattr(ti, "LIVE_MAX", 0)
    slices = _slices()
    tables, meta = _index(slices, monkeypatch, 300)  # several groups
    origin = meta["origin_ns"]
    lanes = tables["trace_lanes"]
    lane_of = {(int(t), int(d)): i for i, (t, d) in
               enumerate(zip(lanes["track_id"], lanes["depth"]))}
    assert list(lane_of) == sorted(lane_of)  # lanes in (track, depth) order
    # The definition: level L summarizes, per bucket of width 2^(12+2L) ns from the origin,
    # the slices of the lane whose duration class is at most L.
    dur = slices["dur_ns"].to_numpy()
    cls = np.clip((np.floor(np.log2(np.maximum(dur, 1))).astype(np.int64) - 10) // 2, 0, None)
    expected = []
    for level in range(meta["levels"]):
        sel = slices[cls <= level]
        bucket = (sel["start_ns"].to_numpy() - origin) >> (12 + 2 * level)
        df = pd.DataFrame({"lane": [lane_of[(int(t), int(d))] for t, d in
                                    zip(sel["track_id"], sel["depth"])],
                           "bucket": bucket, "dur": sel["dur_ns"].to_numpy(),
                           "first": sel["start_ns"].to_numpy(),
                           "end": (sel["start_ns"] + sel["dur_ns"]).to_numpy()})
        g = df.groupby(["lane", "bucket"], sort=True).agg(
            count=("dur", "size"), busy_ns=("dur", "sum"), first_ns=("first", "min"),
            last_ns=("end", "max")).reset_index()
        g["gkey"] = g["lane"] * 64 + level
        expected.append(g)
    exp = pd.concat(expected).sort_values(["gkey", "bucket"]).reset_index(drop=True)
    lod = tables["trace_lod"]
    assert len(lod) == len(exp)
    for col in ("gkey", "bucket", "count", "busy_ns", "first_ns", "last_ns"):
        np.testing.assert_array_equal(lod[col].to_numpy(), exp[col].to_numpy(), err_msg=col)


def test_slices_are_ordered_by_lane_class_and_start_with_a_running_max_end(monkeypatch):
    slices = _slices()
    tables, _ = _index(slices, monkeypatch, 250)
    s = tables["trace_slices"]
    key = list(zip(s["track_id"], s["depth"], s["cls"], s["start_ns"]))
    assert key == sorted(key)
    assert sorted(s["args_row"].tolist()) == list(range(len(slices)))  # each slice once
    for _, grp in s.groupby(["track_id", "depth", "cls"], sort=False):
        ends = (grp["start_ns"] + grp["dur_ns"]).to_numpy()
        np.testing.assert_array_equal(grp["maxend_ns"].to_numpy(), np.maximum.accumulate(ends))


def test_the_stored_index_of_an_entry_is_the_index_of_its_frames(tmp_path):
    """`build` reads the slices as Arrow columns from the entry (no pandas frame); the
    tables it stores are those `build_index` makes from the frames."""
    import os

    from tb_plugin import discovery
    from tb_plugin.cache import ProfileCache, entry_key
    from tb_plugin.loading import build_entry, build_trace
    from tests.tb_server import FIXTURES

    runs, _ = discovery.discover(os.path.join(FIXTURES, "advisor_planted"))
    span = sorted((s for r in runs.values() for s in r.spans()), key=lambda s: s.root)[0]
    key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
    cache = ProfileCache(str(tmp_path / "cache"))
    build_entry(span, cache.root, key)
    build_trace(span, cache.root, key)
    prof = cache.load(key)
    assert prof.rows["slices"] > 1000 and prof.rows["flows"] > 100
    # The step windows from the ProfilerStep rows of the Arrow table, as from the frame.
    from tb_plugin.step_windows import profiler_step_windows, step_windows

    assert not prof.has("step_windows")  # (so they come from the slices)
    windows = step_windows(prof)  # (the slices are not loaded yet: the Arrow path)
    assert "slices" not in prof.tables and len(windows)
    pd.testing.assert_frame_equal(windows, profiler_step_windows(prof.table("slices")))
    tables, meta = ti.build_index(prof.table("slices"), prof.table("flows"),
                                  prof.table("counters"), prof.meta.trace_index["steps"])
    assert meta == prof.meta.trace_index
    assert len(tables["trace_edges"]) > 100  # flows bound (the Arrow path of flow_codes)
    for name, table in tables.items():
        stored = prof.table(name)
        pd.testing.assert_frame_equal(stored, table, check_exact=True, check_dtype=False,
                                      obj=name)


def test_flow_codes_are_the_same_from_arrow_as_from_the_frame():
    import pyarrow as pa

    rng = np.random.default_rng(2)
    n = 3000
    ids = [None if i % 97 == 0 else (str(i // 2) if i % 3 else f"id{i // 2}") for i in range(n)]
    flows = pd.DataFrame({
        "track_id": rng.integers(0, 5, n).astype(np.int32),
        "ts_ns": rng.integers(0, 10**9, n).astype(np.int64),
        "phase": pd.Categorical(rng.choice(["s", "f", "t", None], n)),
        "flow_id": pd.array(ids, dtype="string"),
        "cat": pd.Categorical(rng.choice(["async", "fwdbwd", None], n),
                              categories=["fwdbwd", "async", "unused"]),
        "name": pd.Categorical(rng.choice(["a", "b", None, "c"], n),
                               categories=["c", "b", "a", "never"]),
    })
    want = trace_edges.flow_codes(flows)
    got = trace_edges.flow_codes(pa.Table.from_pandas(flows, preserve_index=False))
    for w, g in zip(want[:3], got[:3]):
        np.testing.assert_array_equal(g, w)
    assert got[3] == want[3]
    np.testing.assert_array_equal(got[4], want[4])
    assert list(got[5]) == list(want[5])


@pytest.mark.parametrize("ids", [
    ["7", "3", "7", None, "12", "3", "-4", "0", "-4", None],  # integers: their values
    ["7", "07", "7", "3", "-0", "0"],  # one value written two ways: two ids
    ["a", "7", "a", None, "7.0", "7"],  # words and fractions: encoded as text
    [" 7", "+7", "7"],
])
def test_flow_id_keys_are_equal_exactly_where_the_ids_are(ids):
    import pyarrow as pa

    keys = trace_edges.flow_id_keys(pa.array(ids, pa.large_string()))
    assert keys.dtype == np.int64 and len(keys) == len(ids)
    for i, a in enumerate(ids):
        assert (keys[i] == -1) == (a is None)
        for j, b in enumerate(ids):
            if a is not None and b is not None:
                assert (keys[i] == keys[j]) == (a == b), (a, b)
    present = sorted({int(k) for k in keys if k >= 0})
    assert present == list(range(len({a for a in ids if a is not None})))  # dense
    # chunked and dictionary columns give the same keys
    chunked = pa.chunked_array([pa.array(ids[:2], pa.string()), pa.array(ids[2:], pa.string())])
    np.testing.assert_array_equal(trace_edges.flow_id_keys(chunked), keys)
    np.testing.assert_array_equal(
        trace_edges.flow_id_keys(pa.array(ids, pa.string()).dictionary_encode()), keys)
