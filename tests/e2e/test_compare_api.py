"""End to end: /compare/* through a real `tensorboard` process, on the two real kineto spans
of worker0 (fixtures/real/kineto_resnet50_w0) and on NPU vs GPU.

Expected values are computed here from the raw trace files with the standard library.
"""
from __future__ import annotations

import collections
import gzip
import json
import os
import urllib.error
import urllib.parse

import pytest

from tb_plugin.discovery import FOLLOW_EXTERNAL_SYMLINKS_ENV
from tests.tb_server import FIXTURES, REAL_DATA, TensorBoard

pytestmark = pytest.mark.e2e
FOLLOW_LINKS = {FOLLOW_EXTERNAL_SYMLINKS_ENV: "1"}
RESNET = os.path.join(REAL_DATA, "kineto_resnet50_w0")
SPANS = ("1623143089861", "1623143566756")


@pytest.fixture(scope="module")
def tb(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("logdir")
    # Runs linked in from outside the logdir, as a user who opted in to following them.
    os.symlink(RESNET, logdir / "resnet")
    os.symlink(os.path.join(FIXTURES, "torch_npu_dist4"), logdir / "dist4")
    with TensorBoard(str(logdir), extra_env=FOLLOW_LINKS).loaded() as server:
        yield server



def pair(**extra):
    return {"base_run": "resnet", "base_worker": "worker0", "base_span": SPANS[0],
            "exp_run": "resnet", "exp_worker": "worker0", "exp_span": SPANS[1], **extra}


def trace_events(span):
    with gzip.open(os.path.join(RESNET, f"worker0.{span}.pt.trace.json.gz"), "rt") as fh:
        doc = json.load(fh)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def kernel_stats(span):
    calls, total = collections.Counter(), collections.Counter()
    for e in trace_events(span):
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel":
            calls[e["name"]] += 1
            total[e["name"]] += e["dur"]
    return calls, total


def step_times(span):
    out = {}
    for e in trace_events(span):
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"):
            out[int(e["name"].split("#")[1])] = e["dur"]
    return out


def test_compare_kernels_of_two_real_spans(tb):
    bc, bt = kernel_stats(SPANS[0])
    ec, et = kernel_stats(SPANS[1])
    res = tb.get("compare/kernels", **pair(limit=10000))
    names = set(bc) | set(ec)
    assert res["total_rows"] == len(names)
    assert res["summary"]["only_base"] == len(set(bc) - set(ec))
    assert res["summary"]["only_exp"] == len(set(ec) - set(bc))
    for row in res["rows"]:
        n = row["name"]
        assert row["base_calls"] == (bc[n] or None)
        assert row["exp_calls"] == (ec[n] or None)
        if n in bc and n in ec:
            assert row["base_us"] == pytest.approx(bt[n])
            assert row["exp_us"] == pytest.approx(et[n])
            assert row["delta_us"] == pytest.approx(et[n] - bt[n])
            if bt[n]:
                assert row["delta_pct"] == pytest.approx((et[n] - bt[n]) / bt[n] * 100)
    impacts = [abs(r["delta_us"]) for r in res["rows"]]
    assert impacts == sorted(impacts, reverse=True)


def test_compare_steps_of_two_real_spans(tb):
    res = tb.get("compare/steps", **pair())
    b, e = step_times(SPANS[0]), step_times(SPANS[1])
    assert res["base"]["step_count"] == len(b) and res["exp"]["step_count"] == len(e)
    row = res["rows"][0]
    assert row["category"] == "step_time"
    # Step time is the producer's (ProfilerStep span, possibly clipped to device work), so
    # compare with the file's ProfilerStep durations loosely and the delta exactly.
    assert row["base_us"] == pytest.approx(sum(b.values()) / len(b), rel=0.05)
    assert row["exp_us"] == pytest.approx(sum(e.values()) / len(e), rel=0.05)
    assert row["delta_us"] == pytest.approx(row["exp_us"] - row["base_us"])
    cats = [c["category"] for c in res["common"]]
    assert cats == ["computing", "communication_not_overlapped", "overlapped", "free"]


def test_compare_operators_regressions_and_filters(tb):
    res = tb.get("compare/operators", **pair(sort="-delta_us", limit=5))
    deltas = [r["delta_us"] for r in res["rows"]]
    assert deltas == sorted(deltas, reverse=True)
    assert res["time_basis"] == {"base": "device_self", "exp": "device_self"}
    one = tb.get("compare/operators", **pair(group_by="name_shape", limit=1))
    assert "input_shapes" in one["rows"][0]
    both = tb.get("compare/operators", **pair(presence="both"))
    assert both["total_rows"] == both["summary"]["both"]


def test_compare_npu_vs_gpu(tb):
    res = tb.get("compare/kernels", base_run="dist4", base_worker="rank0", exp_run="resnet",
            exp_worker="worker0", exp_span=SPANS[0], limit=10000)
    # No kernel name is shared between an Ascend NPU and a CUDA GPU profile.
    assert res["summary"]["both"] == 0
    assert res["summary"]["only_base"] > 0 and res["summary"]["only_exp"] > 0
    steps = tb.get("compare/steps", base_run="dist4", base_worker="rank0", exp_run="resnet",
              exp_worker="worker0", exp_span=SPANS[0])
    assert steps["base"]["device"] == "npu" and steps["exp"]["device"] == "gpu"


def test_compare_parameter_errors(tb):
    def code(**params):
        try:
            tb.get("compare/kernels", **params)
            return 200
        except urllib.error.HTTPError as e:
            return e.code

    assert code(base_run="resnet") == 400  # exp_run missing
    assert code(**pair(exp_span="nope")) == 404
    assert code(**pair(base_worker="nope")) == 404
    assert code(**pair(group_by="bogus")) == 400
    assert code(**pair(presence="bogus")) == 400
    assert code(**pair(sort="bogus")) == 400
