"""analysis.rank_summary and analysis.distributed: per-rank summaries, GPU-derived breakdown,
findings (analysis.distributed_findings, through the whole-run view), paging.

Expected values are written out by hand from small synthetic profiles.
"""
import json

import numpy as np
import pandas as pd
import pytest

from tb_plugin.advisor import thresholds
from tb_plugin.analysis import distributed as dist
from tb_plugin.analysis import rank_summary
from tb_plugin.model import Profile

CATS = ["computing", "communication_not_overlapped", "overlapped", "free"]


def npu_rank(rank, compute_ns, wait_ns, link_bw=None, links=()):
    p = Profile(meta={"producer": "torch_npu", "device": "npu", "rank": rank})
    p.set("steps", pd.DataFrame({
        "step": [1, 2], "total_ns": [10_000, 12_000],
        "bd_computing": [compute_ns, compute_ns], "bd_communication_not_overlapped": [3_000, 3_000],
        "bd_overlapped": [1_000, 1_000], "bd_free": [500, 500]}), keep_extra=True)
    p.set("communication_ops", pd.DataFrame({
        "step": pd.array([1, 2], dtype="Int64"),
        "name": ["hcom_allReduce__1_0_1", "hcom_allReduce__2_0_1"],
        "group": ["g0", "g0"], "kind": ["collective", "collective"],
        "start_ns": [0, 0], "elapse_ns": [4_000, 4_000], "transit_ns": [2_000, 2_000],
        "wait_ns": [wait_ns, wait_ns], "sync_ns": [wait_ns, wait_ns], "idle_ns": [0, 0],
        "transit_size_mb": [10.0, 10.0]}))
    rows = []
    for dst, size, t_ns, agg in links:
        rows.append({"step": 1, "op": "x", "src_rank": rank, "dst_rank": dst, "transport": "HCCS",
                     "transit_size_mb": size, "transit_ns": t_ns, "bandwidth_gbps": 0.0,
                     "aggregate": agg})
    if rows:
        p.set("communication_links", pd.DataFrame(rows), keep_extra=True)
    return p


def test_op_type():
    assert rank_summary.op_type("hcom_allReduce__123_0_1") == "allReduce"
    assert rank_summary.op_type("hcom_broadcast_") == "broadcast"
    assert rank_summary.op_type("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "AllReduce"
    assert rank_summary.op_type("ncclKernel_AllGather_RING_LL_Sum_int8_t") == "AllGather"


def test_rank_summary_npu_uses_step_trace_breakdown_and_groups_ops():
    s = rank_summary.rank_summary(npu_rank(3, 6_000, 700,
                                           links=[(4, 20.0, 2_000_000, False), (4, 99.0, 1, True),
                                                  (3, 5.0, 1000, True)]))
    json.dumps(s, allow_nan=False)
    assert s["rank"] == 3
    assert s["steps"][0] == {"step": 1, "total_us": 10.0, "breakdown": {
        "computing": 6.0, "communication_not_overlapped": 3.0, "overlapped": 1.0, "free": 0.5}}
    assert s["comm_ops"] == [{"name": "allReduce", "group": "g0", "calls": 2, "total_us": 8.0,
                              "transit_us": 4.0, "wait_us": 1.4, "sync_us": 1.4, "idle_us": 0.0,
                              "size_mb": 20.0}]
    # Aggregate ("-total") entries win over samples; self links are dropped.
    assert s["links"] == [{"src": 3, "dst": 4, "transport": "HCCS", "size_mb": 99.0,
                           "time_us": 0.001, "entries": 1}]


def test_rank_summary_groups_ops_by_type_and_group_in_sorted_order():
    """Several op types and groups, given out of order: one row per (type, group) sorted by
    type then group; times summed exactly; sizes summed over finite values only, None for a
    group with none."""
    p = Profile(meta={"producer": "torch_npu", "device": "npu", "rank": 0})
    p.set("communication_ops", pd.DataFrame({
        "step": pd.array([1] * 6, dtype="Int64"),
        "name": ["hcom_broadcast__9_0_1", "hcom_allReduce__1_0_1", "hcom_allReduce__2_0_1",
                 "hcom_allReduce__3_0_1", "hcom_broadcast__8_0_1", "hcom_allGather__4_0_1"],
        "group": ["g1", "g1", "g0", "g1", "g1", ""],
        "kind": ["collective"] * 6, "start_ns": [0] * 6,
        "elapse_ns": [1_000, 2_000, 4_000, 8_000, 16_000, 32_000],
        "transit_ns": [1, 2, 3, 4, 5, 6], "wait_ns": [0] * 6, "sync_ns": [0] * 6,
        "idle_ns": [0] * 6,
        "transit_size_mb": [np.nan, 1.5, 0.25, np.inf, np.nan, 2.0]}))
    ops = rank_summary.rank_summary(p)["comm_ops"]
    assert [(o["name"], o["group"], o["calls"]) for o in ops] == [
        ("allGather", "", 1), ("allReduce", "g0", 1), ("allReduce", "g1", 2),
        ("broadcast", "g1", 2)]
    assert [o["total_us"] for o in ops] == [32.0, 4.0, 10.0, 17.0]
    assert [o["transit_us"] for o in ops] == [0.006, 0.003, 0.006, 0.006]
    assert [o["size_mb"] for o in ops] == [2.0, 0.25, 1.5, None]


def test_gpu_breakdown_from_kernels():
    p = Profile(meta={"producer": "kineto", "device": "gpu", "rank": 0})
    p.set("steps", pd.DataFrame({"step": [5], "start_ns": [0], "end_ns": [100], "total_ns": [100]}))
    # compute [0,40) + [30,50) -> union 50; nccl [45,70) -> 25, overlap with compute [45,50) = 5.
    p.set("kernels", pd.DataFrame({
        "name": ["gemm", "relu", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "Memcpy HtoD"],
        "core_type": ["kernel", "kernel", "kernel", "gpu_memcpy"],
        "start_ns": [0, 30, 45, 80], "dur_ns": [40, 20, 25, 10],
        "step": pd.array([5, 5, 5, 5], dtype="Int64")}))
    s = rank_summary.rank_summary(p)
    assert [x["step"] for x in s["steps"]] == [5] and s["steps"][0]["total_us"] == 0.1
    assert s["steps"][0]["breakdown"]["free"] == pytest.approx(0.03)
    assert s["steps"][0]["breakdown"]["computing"] == pytest.approx(0.05)
    assert s["steps"][0]["breakdown"]["overlapped"] == pytest.approx(0.005)
    assert s["steps"][0]["breakdown"]["communication_not_overlapped"] == pytest.approx(0.02)
    assert s["comm_source"] == "kernels"
    assert s["comm_ops"][0]["name"] == "AllReduce" and s["comm_ops"][0]["calls"] == 1
    assert s["comm_ops"][0]["wait_us"] is None


def _summaries(profiles):
    out = []
    for i, p in enumerate(profiles):
        s = rank_summary.rank_summary(p)
        out.append({**s, "worker": f"rank{i}"})
    return out


def test_straggler_and_slow_link_findings():
    # Rank 2 computes 30% longer; the others wait for it. Link 1->2 is 4x slower.
    profiles = []
    for r in range(4):
        slow = r == 2
        profiles.append(npu_rank(r, 7_800 if slow else 6_000, 10 if slow else 1_500,
                                 links=[((r + 1) % 4, 10.0, 4_000_000 if r == 1 else 1_000_000, True)]))
    view = dist.run_view(_summaries(profiles), thresholds.load())
    json.dumps(view, allow_nan=False)
    strag = [f for f in view["findings"] if f["kind"] == "straggler"]
    assert [f["rank"] for f in strag] == [2]
    ev = strag[0]["evidence"]
    assert ev["value_us"] == pytest.approx(7.8) and ev["median_us"] == pytest.approx(6.0)
    assert ev["excess_pct"] == pytest.approx(30.0)
    assert ev["others_median_wait_us"] == pytest.approx(1.5)  # 2 ops x 1.5 us / 2 steps
    assert ev["rank_wait_us"] == pytest.approx(0.01)
    links = [f for f in view["findings"] if f["kind"] == "slow_link"]
    assert [f["link"] for f in links] == ["1-2"]
    assert links[0]["evidence"]["bandwidth_gbps"] == pytest.approx(2.5)
    assert links[0]["evidence"]["median_bandwidth_gbps"] == pytest.approx(10.0)
    assert view["matrix"]["links"][0]["link"] == "1-2"
    assert view["comm_ops"][0]["ranks"] == 4 and view["comm_ops"][0]["calls"] == 8


def test_no_findings_when_ranks_are_even():
    view = dist.run_view(_summaries([npu_rank(r, 6_000, 100) for r in range(4)]), thresholds.load())
    assert view["findings"] == []


def test_large_runs_are_paged_and_bucketed():
    summaries = []
    for r in range(200):
        summaries.append({"rank": r, "worker": f"rank{r}", "comm_ops": [], "links": [],
                          "steps": [{"step": 1, "total_us": 100.0 + (50 if r == 77 else 0),
                                     "breakdown": {c: 1.0 for c in CATS}}]})
    view = dist.run_view(summaries, thresholds.load())
    assert len(view["heatmap"]["rows"]) <= dist.HEATMAP_MAX_ROWS
    assert view["heatmap"]["ranks_per_row"] == 4
    # Bucket holding rank 77 keeps the max.
    assert max(v[0] for v in view["heatmap"]["values"]) == 150.0
    assert view["slowest"][0]["rank"] == 77
    assert sum(view["distribution"]["histogram"]["counts"]) == 200
    page, total = dist.page_ranks(summaries, "-avg_total_us", 0, 5)
    assert total == 200 and page[0]["rank"] == 77 and len(page) == 5
    page, _ = dist.page_ranks(summaries, "rank", 190, 64)
    assert [p["rank"] for p in page] == list(range(190, 200))
    with pytest.raises(ValueError):
        dist.page_ranks(summaries, "bogus")


def test_summary_store_writes_once(tmp_path):
    calls = []

    def load():
        calls.append(1)
        return npu_rank(0, 6_000, 100)

    store = rank_summary.SummaryStore()
    a = store.get(str(tmp_path), "abcd" * 8, load)
    # fresh memory: from disk
    b = rank_summary.SummaryStore(8).get(str(tmp_path), "abcd" * 8, load)
    assert a == b and len(calls) == 1
