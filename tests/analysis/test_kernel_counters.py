"""analysis/kernel_counters.py and the PMU columns of the readers, against values computed
here with the stdlib csv module from the generated kernel_details.csv (fixtures/torch_npu_pmu)
and from small hand-written files."""
from __future__ import annotations

import glob
import os

import pandas as pd
import pytest

from tb_plugin.analysis import kernel_counters as kc
from tb_plugin.readers import columns as C
from tests import pmu_truth as truth
from tests.advisor.planted import read_all

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "torch_npu_pmu")


@pytest.fixture(scope="module")
def pmu_run():
    (path,) = glob.glob(os.path.join(FIX, "*", "ASCEND_PROFILER_OUTPUT", "kernel_details.csv"))
    ((_, profile),) = read_all(FIX)
    return truth.read(path), profile


def test_na_cells_are_skipped_and_counted(pmu_run):
    rows, p = pmu_run
    k = p.table("kernels")
    header_of = {}
    for h in rows[0]:
        for c in C.PMU_COUNTERS.values():
            if h.lower() in {x.lower() for x in c.headers}:
                header_of[c.name] = h
    assert len(header_of) > 100  # every set is written
    want = {name: sum(1 for r in rows if truth.num(r[h]) is None)
            for name, h in header_of.items()}
    assert p.meta.pmu_na_cells == {n: v for n, v in want.items() if v}
    for name, h in header_of.items():
        vals = [truth.num(r[h]) for r in rows]
        got = k[name].tolist()
        assert [v is None for v in vals] == [g != g for g in got], name  # NaN where N/A
        assert [v for v in vals if v is not None] == [g for g in got if g == g], name


def test_weighted_means_of_every_ratio(pmu_run):
    rows, p = pmu_run
    t = kc.table(p).set_index("name")
    ratio_headers = [h for h in rows[0] if h.endswith(("_ratio", "_rate"))]
    assert len(ratio_headers) > 30
    n = 0
    for name, rs in truth.by_name(rows).items():
        if name not in t.index:  # no counters at all (AI CPU)
            assert all(truth.num(r[h]) is None for r in rs for h in ratio_headers)
            continue
        for h in ratio_headers:
            want = truth.weighted(rs, lambda r, h=h: truth.num(r[h]))
            got = t.loc[name, "pmu_" + h]
            if want is None:
                assert got != got, (name, h)
            else:
                assert got == pytest.approx(want, rel=1e-12), (name, h)
                n += 1
        assert t.loc[name, "bound"] == truth.bound(rs), name
    assert n > 250


def test_block_dim_and_core_counts(pmu_run):
    rows, p = pmu_run
    assert (p.meta.ai_core_num, p.meta.aiv_num) == (24, 48)  # PROF_*/device_0/info.json.0
    t = kc.table(p).set_index("name")
    cores = {"AI_CORE": 24, "MIX_AIC": 24, "AI_VECTOR_CORE": 48}
    for name, rs in truth.by_name(rows).items():
        if name not in t.index or rs[0]["Accelerator Core"] not in cores:
            continue
        c = cores[rs[0]["Accelerator Core"]]
        bad = sum(1 for r in rs if int(r["Block Num"]) % c)
        assert t.loc[name, "block_dim_mismatch_calls"] == bad, name
        assert t.loc[name, "core_num"] == c


def test_l2_hit_rate(pmu_run):
    rows, p = pmu_run
    t = kc.table(p).set_index("name")
    for name, rs in truth.by_name(rows).items():
        if name not in t.index:
            continue
        hits = misses = 0.0
        for r in rs:
            for h, v in r.items():
                x = truth.num(v)
                if x is None or not h.startswith(("aic_", "aiv_")):
                    continue
                if h.endswith("_cache_hit"):
                    hits += x
                elif h.endswith("_cache_miss_allocate"):
                    misses += x
        assert t.loc[name, "l2_hit_rate"] == pytest.approx(hits / (hits + misses), rel=1e-12)


def test_distribution_of_one_kernel(pmu_run):
    rows, p = pmu_run
    name = "aclnnMm_MatMulCommon_MatMulV2"
    calls = kc.call_rows(p, name)
    d = kc.distribution(calls).set_index("ratio")
    vals = sorted(truth.num(r["aic_mac_ratio"]) for r in rows if r["Name"] == name)
    row = d.loc["pmu_aic_mac_ratio"]
    assert row["calls"] == len(vals) and row["na_calls"] == 0
    assert row["min"] == vals[0] and row["max"] == vals[-1]
    assert row["p50"] == pytest.approx(pd.Series(vals).median())
    want = [0] * 10
    for v in vals:
        want[min(int(v * 10), 9)] += 1
    assert row["hist"] == want


@pytest.mark.parametrize("ratios, want", [
    ({"mac": 0.9, "mte2": 0.5}, "cube"),
    ({"vec": 0.85, "mte2": 0.3}, "vector"),
    ({"mte2": 0.81, "mte1": 0.9}, "memory"),
    ({"mte3": 0.9}, "mte3"),
    ({"scalar": 0.95}, "scalar"),
    ({"mac": 0.9, "vec": 0.9}, "mixed"),
    ({"mac": 0.8, "vec": 0.79, "mte2": 0.8}, "none"),  # above, not at, the threshold
    ({"mac": float("nan")}, None),
    ({"fixpipe": 0.99}, None),                          # not one of the six bound pipes
])
def test_classify(ratios, want):
    assert kc.classify(ratios) == want


def _span(tmp_path, header, rows):
    out = tmp_path / "run" / "h_1_20240601000000000_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    text = ",".join(header) + "\r\n" + "".join(",".join(r) + "\r\n" for r in rows)
    (out / "kernel_details.csv").write_text(text, encoding="utf-8")
    ((_, profile),) = read_all(str(tmp_path))
    return profile


def test_header_variants(tmp_path):
    header = ["Name", "Accelerator Core", "Start Time(us)", "Duration(us)", "Block Num",
              "aicore_time", "aic_mac_ratio(%)", "AIC_MTE2_RATIO", "aiv_vec_time",
              "aiv_vec_ratio", "aic_GM_to_L1_datas(KB)", "aiv_ub_read_bw(GB/s)"]
    rows = [["k", "MIX_AIC", "1717200000000000.000\t", "10", "24", "9.5", "85", "0.5", "3",
             "0.3", "123.5", "400"],
            ["k", "MIX_AIC", "1717200000000100.000\t", "30", "24", "N/A", "N/A", "0.7", "N/A",
             "N/A", "N/A", "N/A"]]
    p = _span(tmp_path, header, rows)
    k = p.table("kernels")
    assert k["pmu_aic_time"].tolist()[0] == 9.5
    assert k["pmu_aic_mac_ratio"].tolist()[0] == pytest.approx(0.85)  # percent -> 0..1
    assert k["pmu_aic_mte2_ratio"].tolist() == [0.5, 0.7]               # any case
    assert k["pmu_aiv_vec_time"].tolist()[0] == 3.0
    assert k["pmu_aic_gm_to_l1_datas"].tolist()[0] == 123.5
    assert k["pmu_aiv_ub_read_bw"].tolist()[0] == 400.0
    assert p.meta.pmu_na_cells == {"pmu_aic_time": 1, "pmu_aic_mac_ratio": 1,
                                   "pmu_aiv_vec_time": 1, "pmu_aiv_vec_ratio": 1,
                                   "pmu_aic_gm_to_l1_datas": 1, "pmu_aiv_ub_read_bw": 1}
    t = kc.table(p).set_index("name")
    # mte2: both calls, weights 10 and 30; mac: only the first call has a number
    assert t.loc["k", "pmu_aic_mte2_ratio"] == pytest.approx((0.5 * 10 + 0.7 * 30) / 40)
    assert t.loc["k", "mac_ratio"] == pytest.approx(0.85)
    assert t.loc["k", "bound"] == "cube"
    assert t.loc["k", "pmu_calls"] == 2
    # no info.json: the Block Num check has no core count
    assert pd.isna(t.loc["k", "core_num"]) and t.loc["k", "block_dim_mismatch_calls"] == 0


def test_ascend910_unprefixed_headers():
    df = pd.DataFrame({"mac_ratio": ["0.9", "N/A"], "total_cycles": ["100", "200"],
                       "aiv_vec_ratio(%)": ["50", "70"]})
    cols, na, used = C.read_pmu(df)
    assert cols["pmu_aic_mac_ratio"][0] == 0.9 and na == {"pmu_aic_mac_ratio": 1}
    assert cols["pmu_aic_total_cycles"].tolist() == [100.0, 200.0]
    assert cols["pmu_aiv_vec_ratio"].tolist() == pytest.approx([0.5, 0.7])
    assert used == {"mac_ratio", "total_cycles", "aiv_vec_ratio(%)"}


def test_msprof_op_summary_counters_and_core_counts(tmp_path):
    from fixtures import generate as g
    cfg = g.Config(producer="msprof", level="Level1", steps=2, first_step=1, layers=1,
                   task_queue=False, seed=515, host="pmu-msprof", base_pid=7788, model_id=1,
                   with_stack=False, pmu="full", ai_core_num=20, aiv_num=40,
                   block_dim_mismatch="mm")
    g.write_run(cfg, str(tmp_path / "run"))
    slices = sorted(glob.glob(str(tmp_path / "run" / "PROF_*" / "mindstudio_profiler_output"
                                  / "op_summary_slice_*.csv")))
    rows = [r for path in slices for r in truth.read(path)]
    for r in rows:  # op_summary names the columns differently from kernel_details
        r["Name"], r["Duration(us)"] = r["Op Name"], r["Task Duration(us)"]
    ((_, p),) = read_all(str(tmp_path))
    assert (p.meta.ai_core_num, p.meta.aiv_num) == (20, 40)  # device_0/info.json.0
    t = kc.table(p).set_index("name")
    mm = "aclnnMm_MatMulCommon_MatMulV2"
    rs = truth.by_name(rows)[mm]
    assert t.loc[mm, "pmu_aic_mac_ratio"] == pytest.approx(
        truth.weighted(rs, lambda r: truth.num(r["aic_mac_ratio"])), rel=1e-12)
    assert t.loc[mm, "core_num"] == 20
    assert t.loc[mm, "block_dim_mismatch_calls"] == sum(1 for r in rs if int(r["Block Num"]) % 20)
    # the planted key "mm" misfits; "mm_s" (same kernel name) keeps a full wave
    assert 0 < t.loc[mm, "block_dim_mismatch_calls"] < len(rs)


@pytest.mark.parametrize("group_by", ["name", "type", "core"])
def test_counters_joined_by_group_code_equal_the_join_by_label_text(pmu_run, group_by):
    """`table_with_counters` joins each kernel group's counters by its group code; joining
    `table`'s counter rows to the kernel table by label text (as the view did before)
    gives the same frame, groups without counters (communication, AI CPU) included."""
    from tb_plugin.analysis import kernels as kv

    _, prof = pmu_run
    got = kc.table_with_counters(prof, group_by)
    want = _joined_by_text(kv.table(prof, group_by), kc.table(prof, group_by), group_by)
    pd.testing.assert_frame_equal(got, want)
    assert got["pmu_calls"].notna().any() and got["pmu_calls"].isna().any()  # (both kinds)
    by_label = kc.table(prof, group_by).set_index(group_by)["pmu_calls"]
    for label, calls in zip(got[group_by], got["pmu_calls"]):
        assert (calls if pd.notna(calls) else 0) == by_label.get(label, 0)


def _joined_by_text(t: pd.DataFrame, counters: pd.DataFrame, group_by: str) -> pd.DataFrame:
    """The reference: `t` plus the counter columns of the `counters` row whose label reads
    as each row's (the first such row), or empty cells; counts as nullable integers."""
    import numpy as np

    counters = counters.drop(columns=[c for c in counters.columns
                                      if c in t.columns and c != group_by])
    keys = pd.Index(counters[group_by].astype("string"))
    first = np.flatnonzero(~keys.duplicated())
    labels = t[group_by].astype("string")
    hit = keys[first].get_indexer(labels)
    at = np.where(hit >= 0, first[np.maximum(hit, 0)], -1)
    missing = at < 0
    safe = np.where(missing, 0, at)
    cols = {c: t[c].array for c in t.columns}
    cols[group_by] = labels.array
    for c in counters.columns:
        if c == group_by:
            continue
        values = counters[c].array
        if isinstance(values, pd.arrays.NumpyExtensionArray) and values.dtype.kind == "f":
            cols[c] = np.where(missing, np.nan, values.to_numpy()[safe])
        elif isinstance(values, pd.arrays.NumpyExtensionArray) and c in kc._COUNT_COLUMNS:
            cols[c] = pd.arrays.IntegerArray(values.to_numpy().astype(np.int64)[safe],
                                             missing.copy())
        else:
            cols[c] = pd.api.extensions.take(values, at, allow_fill=True)
    return pd.DataFrame(cols)
