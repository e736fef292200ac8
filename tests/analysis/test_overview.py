"""overview.steps / summary: per-step breakdown in µs and the key figures."""
import json

import numpy as np
import pandas as pd
import pytest

from tb_plugin.analysis import overview
from tb_plugin.model import Profile

CATS = ["computing", "communication_not_overlapped", "overlapped", "free"]
# step, total_ns, computing, comm_not_overlapped, overlapped, free (ns)
STEPS = [
    (3, 9_000, 6_000, 1_000, 500, 2_000),
    (1, 10_000, 7_000, 2_000, 1_000, 1_000),
    (2, 12_500, 8_000, 3_000, 0, 1_500),
]


def _profile(steps=STEPS, with_meta=True):
    p = Profile(meta={"device": "npu", "producer": "torch_npu", "rank": np.int64(0)})
    if with_meta:
        p.meta["step_categories"] = CATS
    p.set("steps", pd.DataFrame({
        "step": [s[0] for s in steps], "total_ns": [s[1] for s in steps],
        **{f"bd_{c}": [s[2 + i] for s in steps] for i, c in enumerate(CATS)},
    }), keep_extra=True)
    return p


def test_steps_sorted_with_breakdown_in_us():
    out = overview.steps(_profile())
    assert out["categories"] == CATS
    ordered = sorted(STEPS)
    assert [s["step"] for s in out["steps"]] == [s[0] for s in ordered]
    for got, exp in zip(out["steps"], ordered):
        assert got["total_us"] == exp[1] / 1000
        assert got["breakdown"] == {c: exp[2 + i] / 1000 for i, c in enumerate(CATS)}
        assert type(got["step"]) is int
    json.dumps(out, allow_nan=False)


def test_categories_from_columns_and_missing_values():
    p = _profile(with_meta=False)
    steps = p.tables["steps"]
    steps["bd_free"] = steps["bd_free"].astype("float64")
    steps.loc[0, "bd_free"] = np.nan
    out = overview.steps(p)
    assert out["categories"] == CATS
    first = next(s for s in out["steps"] if s["step"] == STEPS[0][0])
    assert first["breakdown"]["free"] == 0.0
    # A category named in meta without a column counts 0.
    p.meta["step_categories"] = CATS + ["bubble"]
    assert all(s["breakdown"]["bubble"] == 0.0 for s in overview.steps(p)["steps"])


def test_summary_key_figures():
    p = _profile()
    p.set("kernels", pd.DataFrame({"name": ["a", "b"], "dur_ns": [1500, 2500]}))
    out = overview.summary(p)
    n = len(STEPS)
    avg = sum(s[1] for s in STEPS) / n / 1000
    assert out["step_count"] == n
    assert out["avg_step_us"] == pytest.approx(avg)
    assert out["min_step_us"] == min(s[1] for s in STEPS) / 1000
    assert out["max_step_us"] == max(s[1] for s in STEPS) / 1000
    for i, c in enumerate(CATS):
        exp = sum(s[2 + i] for s in STEPS) / n / 1000
        assert out["avg_breakdown_us"][c] == pytest.approx(exp)
        assert out["avg_breakdown_pct"][c] == pytest.approx(exp / avg * 100)
    assert out["device"] == "npu" and out["producer"] == "torch_npu"
    assert out["rank"] == 0 and type(out["rank"]) is int
    assert out["kernel_count"] == 2 and out["kernel_total_us"] == 4.0
    json.dumps(out, allow_nan=False)


def test_empty_profile():
    assert overview.steps(Profile()) == {"categories": [], "steps": []}
    out = overview.summary(Profile())
    assert out["step_count"] == 0 and out["avg_step_us"] is None
    assert out["avg_breakdown_us"] == {}
    json.dumps(out, allow_nan=False)


def test_summary_labels_each_category():
    out = overview.summary(_profile())
    assert out["category_labels"] == {
        "computing": "Computing", "communication_not_overlapped": "Communication (not overlapped)",
        "overlapped": "Overlapped", "free": "Free"}
    p = _profile()
    p.meta["step_categories"] = ["cpu_exec", "my_part"]
    assert overview.summary(p)["category_labels"] == {"cpu_exec": "CPU Exec",
                                                      "my_part": "My part"}
