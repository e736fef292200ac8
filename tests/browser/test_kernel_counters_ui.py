"""Kernel view with AI Core PMU counters (fixtures/torch_npu_pmu) in a real Chromium: the
counters column group shows the API's numbers, the pipe chart draws, the bound filter and the
counters toggle work. Expected values come from the kernel_details.csv (stdlib csv) and the
API."""
from __future__ import annotations

import glob
import os

from tests import pmu_truth as truth
from tests.tb_server import FIXTURES

from .conftest import hash_state, poll, screenshot

RUN = "torch_npu_pmu"
CE = "aclnnCrossEntropyLoss_CrossEntropyLoss_CrossEntropyLoss"
ADD = "aclnnAdd_AddAiCore_Add"
CELLS_JS = """(tid) => {
  const rows = [...document.querySelectorAll(`[data-testid="${tid}"] .tr[data-index]`)];
  rows.sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index));
  return rows.map((r) => Object.fromEntries(
    [...r.querySelectorAll('.td')].map((c) => [c.dataset.key, c.textContent])));
}"""


def _rows():
    (path,) = glob.glob(os.path.join(FIXTURES, RUN, "*", "ASCEND_PROFILER_OUTPUT",
                                     "kernel_details.csv"))
    return truth.by_name(truth.read(path))


def cells(page):
    return page.evaluate(CELLS_JS, "table-kernels")


def headers(page):
    return page.evaluate("""() => [...document.querySelectorAll(
        '[data-testid="table-kernels"] .th')].map((h) => h.dataset.key)""")


def test_counters_in_the_kernel_view(page, server):
    prof = server.profile(RUN)
    by_name = _rows()
    page.goto(server.page_url(**prof, view="kernels"))
    page.locator('[data-testid="view-kernels"]').wait_for()
    poll(lambda: "bound" in headers(page))
    assert {"bound", "mac_ratio", "vec_ratio", "mte2_ratio", "block_dim"} <= set(headers(page))
    shown = poll(lambda: {r.get("name"): r for r in cells(page) if r.get("name")})
    # the first rows (virtualized table) show the CSV's weighted means as percentages
    checked = 0
    for name, row in shown.items():
        rs = by_name[name]
        mte2 = truth.weighted(rs, lambda r: truth.pipe(r, "mte2"))
        if mte2 is None:
            continue
        assert row["mte2_ratio"] == f"{mte2 * 100:.1f}%", name
        checked += 1
    assert checked >= 5
    # the pipe chart of the top kernels draws, one bar per kernel with counters
    chart = page.locator('[data-testid="chart-kernels-pipes"]')
    chart.wait_for()
    assert poll(lambda: chart.locator("canvas").count() >= 1)
    # Add: Block Num 64 on 48 vector cores
    page.fill('[data-testid="table-kernels"] input[type="search"]', "AddAiCore")
    add = poll(lambda: [r for r in cells(page) if r.get("name") == ADD])
    assert add and add[0]["block_dim"] == "64 / 48 (2 waves, 33% idle)"
    screenshot(page, "kernels_counters")


def test_bound_filter_and_counters_toggle(page, server):
    prof = server.profile(RUN)
    by_name = _rows()
    page.goto(server.page_url(**prof, view="kernels"))
    page.locator('[data-testid="kernels-bound"]').wait_for()
    page.select_option('[data-testid="kernels-bound"]', "none")
    want = sorted(n for n, rs in by_name.items() if truth.bound(rs) == "none")
    assert want == [CE]
    got = poll(lambda: (lambda names: names if names == want else None)(
        sorted(r["name"] for r in cells(page) if r.get("name"))))
    assert got == want
    assert cells(page)[0]["bound"] == "No pipe over 80%"
    assert hash_state(page)["kernels.bound"] == "none"
    page.select_option('[data-testid="kernels-bound"]', "memory")
    memory = sorted(n for n, rs in by_name.items() if truth.bound(rs) == "memory")
    assert poll(lambda: sorted(r["name"] for r in cells(page) if r.get("name")) == memory)
    # the toggle hides the counter columns and keeps the plain ones
    page.locator('[data-testid="kernels-counters-toggle"]').uncheck()
    assert poll(lambda: "bound" not in headers(page))
    assert {"calls", "total_us"} <= set(headers(page))
    assert hash_state(page)["kernels.pmu"] == "off"
