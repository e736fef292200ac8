"""kernels.table / top: group-by math, step filter, GPU memcpy/memset exclusion."""
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from tb_plugin.analysis import kernels
from tb_plugin.model import Profile

ROWS = [
    # name, type, core_type, dur_ns, wait_ns, step
    ("MatMul_1", "MatMul", "AI_CORE", 1500, 100, 1),
    ("MatMul_1", "MatMul", "AI_CORE", 2500, 0, 1),
    ("MatMul_1", "MatMul", "AI_CORE", 1000, 50, 2),
    ("Add_1", "Add", "AI_VECTOR_CORE", 300, 7, 1),
    ("Add_2", "Add", "AI_VECTOR_CORE", 700, 3, 2),
    ("hcom_allReduce_1", "hcom_allReduce_", "COMMUNICATION", 9000, 1000, 2),
    ("Cast", "Cast", "AI_CPU", 1, 0, None),
]


def _npu_profile(rows=ROWS):
    p = Profile(meta={"device": "npu", "producer": "torch_npu"})
    p.set("kernels", pd.DataFrame({
        "name": [r[0] for r in rows],
        "type": [r[1] for r in rows],
        "core_type": [r[2] for r in rows],
        "dur_ns": [r[3] for r in rows],
        "wait_ns": [r[4] for r in rows],
        "step": pd.array([r[5] for r in rows], dtype="Int64"),
    }))
    return p


def _expected(rows, key_index):
    groups = defaultdict(list)
    for r in rows:
        groups[r[key_index]].append(r)
    out = {}
    for key, rs in groups.items():
        durs = [r[3] for r in rs]
        waits = [r[4] for r in rs]
        out[key] = {
            "calls": len(rs),
            "total_us": sum(durs) / 1000,
            "avg_us": sum(durs) / len(durs) / 1000,
            "min_us": min(durs) / 1000,
            "max_us": max(durs) / 1000,
            "wait_us": sum(waits) / 1000,
            "avg_wait_us": sum(waits) / len(waits) / 1000,
        }
    return out


def _as_dict(df, key):
    return {r[key]: {c: r[c] for c in kernels.COLUMNS_AFTER_KEY}
            for r in df.to_dict("records")}


@pytest.mark.parametrize("group_by,idx", [("name", 0), ("type", 1), ("core", 2)])
def test_group_by_math(group_by, idx):
    df = kernels.table(_npu_profile(), group_by)
    assert list(df.columns) == [group_by] + kernels.COLUMNS_AFTER_KEY
    assert list(df.columns) == kernels.columns(group_by)
    got = _as_dict(df, group_by)
    exp = _expected(ROWS, idx)
    assert got.keys() == exp.keys()
    for key in exp:
        for col, v in exp[key].items():
            assert got[key][col] == pytest.approx(v), (key, col)
    totals = list(df["total_us"])
    assert totals == sorted(totals, reverse=True)


def test_npu_keeps_communication_rows():
    df = kernels.table(_npu_profile(), "core")
    assert "COMMUNICATION" in set(df["core"])
    assert int(df["calls"].sum()) == len(ROWS)


def test_step_filter():
    df = kernels.table(_npu_profile(), "name", step=2)
    rows2 = [r for r in ROWS if r[5] == 2]
    exp = _expected(rows2, 0)
    got = _as_dict(df, "name")
    assert got.keys() == exp.keys()
    for key in exp:
        assert got[key]["calls"] == exp[key]["calls"]
        assert got[key]["total_us"] == pytest.approx(exp[key]["total_us"])
    assert len(kernels.table(_npu_profile(), "name", step=99)) == 0


def test_gpu_excludes_memcpy_memset_keeps_nccl():
    rows = [
        ("volta_sgemm", "kernel", "kernel", 1000, 0, 1),
        ("ncclKernel_AllReduce_RING_LL_Sum_float", "kernel", "kernel", 5000, 0, 1),
        ("Memcpy HtoD (Pageable -> Device)", "memcpy", "memcpy", 700, 0, 1),
        ("Memset (Device)", "memset", "memset", 20, 0, 1),
    ]
    p = _npu_profile(rows)
    p.meta.update({"device": "gpu", "producer": "kineto"})
    df = kernels.table(p, "name")
    assert set(df["name"]) == {"volta_sgemm", "ncclKernel_AllReduce_RING_LL_Sum_float"}
    assert set(kernels.table(p, "core")["core"]) == {"kernel"}
    # The same rows on an NPU profile are all kept.
    p.meta.update({"device": "npu", "producer": "torch_npu"})
    assert len(kernels.table(p, "name")) == 4


def test_invalid_group_and_empty_profile():
    with pytest.raises(ValueError):
        kernels.table(_npu_profile(), "shape")
    df = kernels.table(Profile(), "type")
    assert list(df.columns) == ["type"] + kernels.COLUMNS_AFTER_KEY and len(df) == 0


def test_missing_key_values_group_as_empty_string():
    p = Profile()
    p.set("kernels", pd.DataFrame({"name": ["a", None, ""], "dur_ns": [1000, 2000, 3000]}))
    got = _as_dict(kernels.table(p, "name"), "name")
    assert got[""]["calls"] == 2 and got[""]["total_us"] == pytest.approx(5.0)


def test_top_with_other_row():
    p = _npu_profile()
    exp = _expected(ROWS, 0)
    ranked = sorted(exp.items(), key=lambda kv: -kv[1]["total_us"])
    df = kernels.top(p, "name", 2)
    assert list(df["name"]) == [ranked[0][0], ranked[1][0], "Other"]
    rest = ranked[2:]
    assert df["total_us"].iloc[2] == pytest.approx(sum(v["total_us"] for _, v in rest))
    assert df["calls"].iloc[2] == sum(v["calls"] for _, v in rest)
    assert "Other" not in set(kernels.top(p, "name", 10)["name"])


def test_one_million_rows_do_not_blow_up():
    # Scale sanity only (speed belongs to benchmarks): 1M rows, 10k names.
    n = 1_000_000
    rng = np.random.default_rng(1)
    names = np.array([f"k{i}" for i in range(10_000)])
    idx = rng.integers(0, len(names), n)
    dur = rng.integers(1, 10_000, n)
    p = Profile(meta={"device": "npu"})
    p.set("kernels", pd.DataFrame({
        "name": pd.Categorical(names[idx]), "dur_ns": dur,
        "core_type": pd.Categorical(np.where(idx % 2, "AI_CORE", "AI_CPU")),
    }))
    df = kernels.table(p, "name")
    assert int(df["calls"].sum()) == n
    assert df["total_us"].sum() == pytest.approx(dur.sum() / 1000)
    k0 = df[df["name"] == "k0"].iloc[0]
    assert k0["max_us"] == dur[idx == 0].max() / 1000
