"""Distributed and compare views in a real chromium against `tensorboard --logdir fixtures`.

The planted straggler (rank 2) and slow link (1 -> 2) of torch_npu_dist4 come from the
generator's ground truth; table contents are checked against the API's JSON.
"""
from __future__ import annotations

import json

import pytest

from fixtures import generate as g

from .conftest import ROWS_JS, hash_state, poll, screenshot

pytestmark = pytest.mark.browser

DIST_RUN = "torch_npu_dist4"
GPU_RUN = "kineto_gpu"







@pytest.fixture(scope="module")
def truth():
    return g.build_job(g.FIXTURES["torch_npu_dist4"])


def test_distributed_nav_and_findings(page, server, truth):
    assert "distributed" in server.api("run", run=DIST_RUN)["views"]
    page.goto(server.page_url(run=DIST_RUN))
    page.get_by_test_id("nav-distributed").click()
    page.get_by_test_id("view-distributed").wait_for()
    straggler = page.get_by_test_id("finding-straggler").first
    straggler.wait_for()
    assert straggler.get_attribute("data-rank") == str(truth.straggler_rank)
    assert f"Rank {truth.straggler_rank}" in straggler.inner_text()
    link = page.get_by_test_id("finding-slow_link").first
    src, dst = truth.slow_link
    assert link.get_attribute("data-link") == f"{src}-{dst}"
    # Charts: per-rank breakdown, heatmap, matrix; figures from the API.
    for tid in ("chart-rank-breakdown", "chart-rank-heatmap", "chart-comm-matrix"):
        page.get_by_test_id(tid).wait_for()
    assert page.get_by_test_id("fig-ranks").get_attribute("data-value") == "4"
    # Communication table equals the API's rows; names are text.
    api_rows = server.api("distributed/comm_ops", run=DIST_RUN)["rows"]
    rows = poll(lambda: page.evaluate(ROWS_JS, "table-comm-ops"))
    assert [r["name"] for r in rows] == [r["name"] for r in api_rows]
    # Per-rank grouping lists every rank.
    page.get_by_test_id("comm-group-rank").click()
    assert poll(lambda: len(page.evaluate(ROWS_JS, "table-comm-ops")) == 4)
    # Links table: slowest first, the planted link.
    lrows = poll(lambda: page.evaluate(ROWS_JS, "table-links"))
    assert lrows[0]["link"] == f"{src}-{dst}"
    screenshot(page, "distributed_dist4")
    # Jump into the straggler's overview.
    page.get_by_test_id(f"open-rank-{truth.straggler_rank}").click()
    page.get_by_test_id("view-overview").wait_for()
    st = hash_state(page)
    assert st["worker"] == f"rank{truth.straggler_rank}" and st["view"] == "overview"


def test_distributed_not_offered_for_single_worker(page, server):
    assert "distributed" not in server.api("run", run="torch_npu_level1")["views"]
    page.goto(server.page_url(run="torch_npu_level1"))
    page.get_by_test_id("nav-overview").wait_for()
    assert page.get_by_test_id("nav-distributed").count() == 0


def test_compare_from_left_panel(page, server):
    # Base: a torch_npu rank; experiment: the GPU kineto profile (different producers).
    base = server.profile(DIST_RUN, 0)
    exp = server.profile(GPU_RUN, 0)
    page.goto(server.page_url(run=base["run"], worker=base["worker"], view="overview"))
    page.get_by_test_id("view-overview").wait_for()
    page.get_by_test_id("set-base").click()
    page.get_by_test_id("view-compare").wait_for()
    # Pick the experiment in the left panel, then set it.
    page.get_by_test_id("run-select").select_option(GPU_RUN)
    page.get_by_test_id("worker-select").wait_for()
    poll(lambda: page.get_by_test_id("worker-select").input_value() == exp["worker"])
    page.get_by_test_id("set-exp").click()
    page.get_by_test_id("compare-summary").wait_for()
    st = hash_state(page)
    assert json.loads(st["cmp.base"]) == [base["run"], base["worker"], base["span"]]
    assert json.loads(st["cmp.exp"])[:2] == [exp["run"], exp["worker"]]
    params = {"base_run": base["run"], "base_worker": base["worker"], "base_span": base["span"],
              "exp_run": exp["run"], "exp_worker": exp["worker"],
              "exp_span": json.loads(st["cmp.exp"])[2]}
    steps = server.api("compare/steps", **params)
    delta = float(page.get_by_test_id("cmp-step-delta").get_attribute("data-value"))
    assert delta == pytest.approx(steps["rows"][0]["delta_us"])
    ops = server.api("compare/operators", limit=20, **params)["rows"]
    # (the table is virtualized: rows are rendered as its height is known, so poll for all)
    want = [r["name"] for r in ops]
    assert poll(lambda: [r["name"] for r in page.evaluate(ROWS_JS,
                                                          "table-compare-operators")[:20]]
                == want)
    kern = server.api("compare/kernels", limit=5, **params)
    summary = page.get_by_test_id("table-compare-kernels-summary")
    poll(lambda: "only in" in summary.inner_text())
    assert f"{kern['summary']['only_base']} only in base" in summary.inner_text()
    # Regressions first: the order follows delta_us descending.
    page.get_by_test_id(f"cmp.op.name-order-regressions").click()
    reg = server.api("compare/operators", limit=5, sort="-delta_us", **params)["rows"]
    assert poll(lambda: [r["name"] for r in page.evaluate(ROWS_JS, "table-compare-operators")[:5]]
                == [r["name"] for r in reg])
    screenshot(page, "compare_npu_vs_gpu")
    # Jump into the experiment.
    page.get_by_test_id("open-exp").click()
    page.get_by_test_id("view-overview").wait_for()
    assert hash_state(page)["run"] == GPU_RUN
