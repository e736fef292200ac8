"""/kernels PMU fields and /kernels/pmu through a real tensorboard on fixtures/torch_npu_pmu.
Expected numbers come from kernel_details.csv read with the stdlib csv module here."""
from __future__ import annotations

import csv
import glob
import io
import os
import shutil
import statistics
import urllib.request

import pytest

from tests import pmu_truth as truth
from tests.tb_server import FIXTURES, TensorBoard

pytestmark = pytest.mark.e2e
RUN = "torch_npu_pmu"
CE = "aclnnCrossEntropyLoss_CrossEntropyLoss_CrossEntropyLoss"
ADD = "aclnnAdd_AddAiCore_Add"
FAG = "aclnnFlashAttentionScoreGrad_FlashAttentionScoreGrad_FlashAttentionScoreGrad"


def same(got, want):
    """Equal as numbers, or both absent."""
    return got is None if want is None else got == pytest.approx(want, rel=1e-9)


@pytest.fixture(scope="module")
def tb(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("logdir")
    shutil.copytree(os.path.join(FIXTURES, RUN), logdir / RUN)
    with TensorBoard(str(logdir)).loaded() as server:
        yield server


@pytest.fixture(scope="module")
def rows():
    (path,) = glob.glob(os.path.join(FIXTURES, RUN, "*", "ASCEND_PROFILER_OUTPUT",
                                     "kernel_details.csv"))
    return truth.read(path)


def test_kernel_rows_carry_weighted_means_and_bound(tb, rows):
    data = tb.get("kernels", run=RUN, limit=1000)
    got = {r["name"]: r for r in data["rows"]}
    assert data["counters"]["ai_core_num"] == 24 and data["counters"]["aiv_num"] == 48
    pmu_headers = [h for h in rows[0] if h.startswith(("aic", "aiv")) or h.startswith("cube_")]
    assert data["counters"]["na_cells"] == sum(
        1 for r in rows for h in pmu_headers if truth.num(r[h]) is None)
    checked = 0
    for name, rs in truth.by_name(rows).items():
        measured = [r for r in rs if truth.num(r["aic_mac_ratio"]) is not None
                    or truth.num(r["aiv_vec_ratio"]) is not None]
        if not measured:  # AI CPU: no counters
            assert got[name].get("bound") is None and got[name]["pmu"] == {}
            continue
        row = got[name]
        assert row["pmu_calls"] == len(measured)
        for p in truth.PIPES:
            want = truth.weighted(rs, lambda r, p=p: truth.pipe(r, p))
            assert same(row["pmu"].get(f"{p}_ratio"), want), (name, p)
        for h in ("aiv_vec_ratio", "aic_mte2_ratio", "aiv_vec_bank_cflt_ratio"):
            want = truth.weighted(rs, lambda r, h=h: truth.num(r[h]))
            assert same(row["pmu"].get("pmu_" + h), want), (name, h)
        assert row["bound"] == truth.bound(rs), name
        checked += 1
    assert checked >= 10
    assert got[CE]["bound"] == "none"
    # FlashAttentionScoreGrad: its long calls are N/A, left out of the weights
    fag = truth.by_name(rows)[FAG]
    na = [r for r in fag if truth.num(r["aic_mac_ratio"]) is None]
    assert na and len(na) < len(fag) and got[FAG]["pmu_calls"] == len(fag) - len(na)
    # Add: Block Num 64 on 48 vector cores -> 2 waves, a third of the slots idle
    add = got[ADD]
    assert (add["block_dim"], add["core_num"], add["waves"]) == (64, 48, 2)
    assert add["tail_waste"] == pytest.approx(1 - 64 / 96)
    assert add["block_dim_mismatch_calls"] == len(truth.by_name(rows)[ADD])


def test_bound_filter(tb, rows):
    want = {n for n, rs in truth.by_name(rows).items() if truth.bound(rs) == "none"}
    data = tb.get("kernels", run=RUN, bound="none")
    assert {r["name"] for r in data["rows"]} == want == {CE}
    assert data["total_rows"] == 1
    memory = {n for n, rs in truth.by_name(rows).items() if truth.bound(rs) == "memory"}
    assert {r["name"] for r in tb.get("kernels", run=RUN, bound="memory")["rows"]} == memory
    status, body = tb.status("kernels", run=RUN, bound="fast")
    assert status == 400 and "bound" in body["error"]


def test_sort_by_a_ratio_and_csv_export(tb, rows):
    data = tb.get("kernels", run=RUN, sort="-mte2_ratio", limit=3)
    vals = [r["pmu"]["mte2_ratio"] for r in data["rows"]]
    assert vals == sorted(vals, reverse=True)
    with urllib.request.urlopen(f"{tb.api}/kernels?run={RUN}&format=csv", timeout=60) as resp:
        table = list(csv.DictReader(io.StringIO(resp.read().decode("utf-8"))))
    row = next(r for r in table if r["name"] == CE)
    assert row["bound"] == "none"
    rs = truth.by_name(rows)[CE]
    assert float(row["vec_ratio"]) == pytest.approx(
        truth.weighted(rs, lambda r: truth.pipe(r, "vec")), rel=1e-9)
    assert "pmu_aiv_mte3_ratio" in row


def test_per_call_distribution(tb, rows):
    data = tb.get("kernels/pmu", run=RUN, name=FAG)
    fag = truth.by_name(rows)[FAG]
    measured = [r for r in fag if truth.num(r["aic_mac_ratio"]) is not None]
    assert data["calls"] == len(fag) and data["counted_calls"] == len(measured)
    assert [r["dur_us"] for r in data["rows"]] == sorted((truth.dur(r) for r in fag),
                                                         reverse=True)
    mac = next(r for r in data["ratios"] if r["ratio"] == "pmu_aic_mac_ratio")
    vals = [truth.num(r["aic_mac_ratio"]) for r in measured]
    assert mac["calls"] == len(vals) and mac["na_calls"] == len(fag) - len(vals)
    assert mac["p50"] == pytest.approx(statistics.median(vals))
    assert mac["min"] == min(vals) and mac["max"] == max(vals)
    assert sum(mac["hist"]) == len(vals)
    assert mac["hist"][min(int(vals[0] * 10), 9)] >= 1
    capped = tb.get("kernels/pmu", run=RUN, name=FAG, max_rows=1)
    assert len(capped["rows"]) == 1 and capped["rows_total"] == len(fag)
    assert tb.status("kernels/pmu", run=RUN, name="no_such_kernel")[0] == 404
    assert tb.status("kernels/pmu", run=RUN)[0] == 400
    assert tb.status("kernels/pmu", run=RUN, name=FAG, max_rows=-1)[0] == 400


def test_profiles_without_counters_keep_the_plain_rows(tmp_path):
    logdir = tmp_path / "logdir"
    shutil.copytree(os.path.join(FIXTURES, "torch_npu_legacy_2023"), logdir / "legacy")
    server = TensorBoard(str(logdir)).start()
    try:
        server.wait_loaded(300)
        run = server.get("runs")["runs"][0]["name"]
        worker = server.get("run", run=run)["workers"][0]
        span = worker["spans"][0]["name"] if isinstance(worker["spans"][0], dict) \
            else worker["spans"][0]
        data = server.get("kernels", run=run, worker=worker["name"], span=span)
        assert data["rows"] and "counters" not in data and "pmu" not in data["rows"][0]
        assert server.get("kernels", run=run, worker=worker["name"], span=span,
                          bound="none")["rows"] == []
    finally:
        server.stop()
