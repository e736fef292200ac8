"""memory.summary / allocations: curves, peaks, total component, downsampling, windows."""
import numpy as np
import pandas as pd
import pytest

from tb_plugin.analysis import memory
from tb_plugin.model import Profile

T0 = 1_700_000_000_000_000_000  # epoch ns


def _records(rows):
    return pd.DataFrame(rows, columns=["component", "device", "ts_ns", "allocated_mb",
                                       "reserved_mb"])


def _profile():
    p = Profile(meta={"device": "npu", "producer": "torch_npu"})
    rows = []
    for i, (a, r) in enumerate([(1.0, 2.0), (5.0, 6.0), (3.0, 8.0), (5.0, 7.0)]):
        rows.append(("PTA", "NPU:0", T0 + 3000 - i * 1000, a, r))   # reverse time order
        rows.append(("PTA+GE", "NPU:0", T0 + i * 1000, a + 10, r + 10))
        rows.append(("GE", "NPU:0", T0 + i * 1000, 0.5, 1.0))
    rows.append(("PTA", "NPU:1", T0 + 500, 4.0, np.nan))
    p.set("memory_records", _records(rows))
    p.set("module_memory", pd.DataFrame({
        "component": ["SLOG", "SLOG", "HCCL"], "device": ["NPU:0"] * 3,
        "ts_ns": [T0 - 10_000, T0, T0], "reserved_mb": [1.0, 3.0, 2.0]}))
    return p, rows


def test_curves_points_and_peaks():
    p, rows = _profile()
    out = memory.summary(p)
    curves = {(c["device"], c["component"]): c for c in out["curves"]}
    assert set(curves) == {("NPU:0", "PTA"), ("NPU:0", "PTA+GE"), ("NPU:0", "GE"),
                           ("NPU:1", "PTA")}
    for (dev, comp), c in curves.items():
        mine = sorted((r for r in rows if r[0] == comp and r[1] == dev), key=lambda r: r[2])
        expected_points = [[r[2] / 1000, r[3], None if np.isnan(r[4]) else r[4]] for r in mine]
        assert c["points"] == expected_points
        assert c["samples"] == len(mine)
        allocs = [r[3] for r in mine]
        assert c["peak_allocated_mb"] == max(allocs)
        first_peak = next(r for r in mine if r[3] == max(allocs))
        assert c["peak_ts_us"] == first_peak[2] / 1000
    assert curves[("NPU:1", "PTA")]["peak_reserved_mb"] is None
    assert out["start_us"] == T0 / 1000


def test_device_peak_uses_total_component():
    p, rows = _profile()
    out = memory.summary(p)
    dev = {d["device"]: d for d in out["devices"]}
    pta_ge = [r for r in rows if r[0] == "PTA+GE"]
    assert dev["NPU:0"]["component"] == "PTA+GE"
    assert dev["NPU:0"]["peak_allocated_mb"] == max(r[3] for r in pta_ge)
    assert dev["NPU:0"]["peak_reserved_mb"] == max(r[4] for r in pta_ge)
    assert dev["NPU:1"]["component"] == "PTA"
    assert dev["NPU:1"]["peak_allocated_mb"] == 4.0


@pytest.mark.parametrize("components,total", [
    (["PTA", "GE"], "PTA"),
    (["MindSpore", "GE", "MindSpore+GE"], "MindSpore+GE"),
    (["PyTorch"], "PyTorch"),
    (["WORKSPACE", "GE"], "GE"),  # fallback: highest reserved peak (GE below)
])
def test_total_component_choice(components, total):
    rows = [(c, "X:0", T0 + i, 1.0, 10.0 if c == "GE" else 5.0)
            for i, c in enumerate(components)]
    p = Profile()
    p.set("memory_records", _records(rows))
    assert memory.summary(p)["devices"][0]["component"] == total


def test_component_peaks_from_module_memory_and_records():
    p, rows = _profile()
    peaks = {(c["device"], c["component"], c["source"]): c["peak_reserved_mb"]
             for c in memory.summary(p)["component_peaks"]}
    assert peaks[("NPU:0", "SLOG", "module")] == 3.0
    assert peaks[("NPU:0", "HCCL", "module")] == 2.0
    assert peaks[("NPU:0", "PTA", "records")] == max(r[4] for r in rows if r[0] == "PTA")
    assert peaks[("NPU:1", "PTA", "records")] is None


def test_downsampling_bounds_points_and_keeps_peaks():
    rng = np.random.default_rng(7)
    n = 100_003
    alloc = rng.random(n) * 100
    res = alloc + rng.random(n) * 50
    alloc[12_345] = 1000.0  # a narrow spike
    res[77_777] = 5000.0
    alloc[500] = -1.0       # a dip
    ts = T0 + np.arange(n) * 997
    p = Profile()
    p.set("memory_records", pd.DataFrame({"component": "PyTorch", "device": "GPU:0",
                                          "ts_ns": ts, "allocated_mb": alloc,
                                          "reserved_mb": res}))
    for max_points in (8, 100, 2000):
        c = memory.summary(p, max_points=max_points)["curves"][0]
        pts = c["points"]
        assert len(pts) <= max_points
        xs = [pt[0] for pt in pts]
        assert xs == sorted(xs)
        assert pts[0] == [ts[0] / 1000, alloc[0], res[0]]
        assert pts[-1] == [ts[-1] / 1000, alloc[-1], res[-1]]
        assert [ts[12_345] / 1000, 1000.0, res[12_345]] in pts
        assert [ts[77_777] / 1000, alloc[77_777], 5000.0] in pts
        assert max(pt[1] for pt in pts) == 1000.0 == c["peak_allocated_mb"]
        assert max(pt[2] for pt in pts) == 5000.0 == c["peak_reserved_mb"]
        assert c["peak_ts_us"] == ts[12_345] / 1000
        assert c["samples"] == n
    pts = memory.summary(p, max_points=2000)["curves"][0]["points"]
    assert len(pts) > 1000  # the budget is actually used
    assert [ts[500] / 1000, -1.0, res[500]] in pts
    with pytest.raises(ValueError):
        memory.summary(p, max_points=3)


def test_empty_profile():
    out = memory.summary(Profile())
    assert out == {"devices": [], "curves": [], "component_peaks": [], "start_us": None}
    assert list(memory.allocations(Profile()).columns) == memory.ALLOCATION_COLUMNS


ALLOCS = [
    # name, alloc_ns, release_ns (-1 = not released), duration_ns (-1 = missing)
    ("a", 1_000, 2_000, 1_000),
    ("b", 2_000, 3_000, -1),
    ("c", 3_000, -1, -1),
    ("d", 5_000, 6_000, 1_000),
    ("e", 500, 750, 250),
]
# Offsets are multiples of 250 ns: absolute epoch µs as float64 (~1.7e15) are exact to 0.25 µs,
# and the window is compared on those same floats the API returns.


def _alloc_profile():
    p = Profile()
    p.set("memory_allocations", pd.DataFrame({
        "name": [r[0] for r in ALLOCS], "device": "NPU:0", "size_kb": [1.5] * len(ALLOCS),
        "alloc_ns": [T0 + r[1] for r in ALLOCS],
        "release_ns": [T0 + r[2] if r[2] >= 0 else -1 for r in ALLOCS],
        "duration_ns": [r[3] for r in ALLOCS]}))
    return p


def test_start_from_records_then_allocations_then_module_memory(tmp_path):
    """`start_us` is the first memory record's time; without records the first allocation's,
    then the first module sample's. From an entry on disk, the allocations' frame is made
    only when no record has a time."""
    from tb_plugin.cache import open_profile, write_profile

    both, _ = _profile()  # records (first at T0) and module memory (first at T0 - 10 us)
    both.set("memory_allocations", _alloc_profile().table("memory_allocations"))
    (tmp_path / "all").mkdir()
    write_profile(str(tmp_path / "all"), both)
    entry = open_profile(str(tmp_path / "all"))
    assert memory.summary(entry)["start_us"] == T0 / 1000
    assert "memory_allocations" not in entry.tables  # not loaded: records gave the start

    no_records = _alloc_profile()
    no_records.set("module_memory", both.table("module_memory"))
    (tmp_path / "allocs").mkdir()
    write_profile(str(tmp_path / "allocs"), no_records)
    first_alloc = min(r[1] for r in ALLOCS)
    assert memory.summary(open_profile(str(tmp_path / "allocs")))["start_us"] == \
        (T0 + first_alloc) / 1000

    module_only = Profile()
    module_only.set("module_memory", both.table("module_memory"))
    assert memory.summary(module_only)["start_us"] == (T0 - 10_000) / 1000


def _window(start, end):
    """Names live in [start, end] (µs offsets from T0), computed independently."""
    names = []
    for name, a, r, _ in sorted(ALLOCS, key=lambda x: x[1]):
        if end is not None and a / 1000 > end:
            continue
        if start is not None and r >= 0 and r / 1000 < start:
            continue
        names.append(name)
    return names


@pytest.mark.parametrize("start,end", [
    (None, None), (2.0, 2.0), (2.0, 3.0), (3.0, None), (None, 1.0), (0.75, 0.75),
    (6.25, None), (None, 0.25), (4.0, 4.5), (0.5, 0.5), (6.0, 6.0),
])
def test_allocation_window_edges_inclusive(start, end):
    p = _alloc_profile()
    s = None if start is None else T0 / 1000 + start
    e = None if end is None else T0 / 1000 + end
    df = memory.allocations(p, s, e)
    assert list(df.columns) == memory.ALLOCATION_COLUMNS
    assert list(df["name"]) == _window(start, end)


def test_allocation_values():
    df = memory.allocations(_alloc_profile()).set_index("name")
    assert df.loc["a", "alloc_us"] == (T0 + 1000) / 1000
    assert df.loc["a", "duration_us"] == 1.0
    assert df.loc["b", "duration_us"] == 1.0        # derived from release - alloc
    assert np.isnan(df.loc["c", "release_us"]) and np.isnan(df.loc["c", "duration_us"])
    assert df.loc["c", "size_kb"] == 1.5
