"""The overview shows graph-mode step phases and the kernels view op types, in a real
chromium against a real `tensorboard --logdir fixtures` (session server of conftest).

Expected values come from the HTTP API's JSON (the backend's numbers are tested against the
files and MindInsight's expected values in tests/analysis and tests/e2e)."""
from __future__ import annotations

import pytest

from .conftest import ROWS_JS, poll, screenshot

pytestmark = pytest.mark.browser

LEGACY = "real/mindspore_legacy_run1"
TORCH = "torch_npu_level1"


def _cells(page):
    return page.evaluate("""() => [...document.querySelectorAll(
      '[data-testid="table-phases"] tbody tr')].map((tr) => ({phase: tr.dataset.phase,
      cells: [...tr.querySelectorAll('td')].map((td) => td.dataset.value ?? td.textContent)}))""")


def test_overview_shows_step_phases(page, server):
    prof = server.profile(LEGACY)
    want = server.api("summary", **prof)["phases"]
    page.goto(server.page_url(**prof, view="overview"))
    section = page.locator('[data-testid="section-phases"]')
    section.wait_for(timeout=30000)
    page.locator('[data-testid="chart-phases"] canvas').first.wait_for(timeout=30000)
    rows = poll(lambda: _cells(page))
    by = {r["phase"]: r["cells"] for r in rows}
    labels = want["labels"]
    a = want["average"]
    assert float(by[labels["fp_and_bp"]][1]) == pytest.approx(a["fp_and_bp_us"])
    assert float(by[labels["fp_and_bp"]][2]) == a["fp_and_bp_pct"]
    assert float(by[labels["tail"]][2]) == a["tail_pct"]
    assert float(by["Step total"][1]) == pytest.approx(a["total_us"])
    assert "stream_540_parallel_0" in by
    assert "322 steps" in section.inner_text()
    screenshot(page, "overview_step_phases")


def test_no_phases_section_without_phases(page, server):
    prof = server.profile(TORCH)
    assert server.api("summary", **prof)["phases"] is None
    page.goto(server.page_url(**prof, view="overview"))
    page.locator('[data-testid="chart-steps"]').wait_for(timeout=30000)
    page.wait_for_timeout(1000)
    assert page.locator('[data-testid="section-phases"]').count() == 0


def test_kernels_view_shows_op_types(page, server):
    prof = server.profile(LEGACY)
    want = server.api("kernels/op_types", **prof, limit=100)["rows"]
    page.goto(server.page_url(**prof, view="kernels"))
    page.locator('[data-testid="section-op-types"]').wait_for(timeout=30000)
    rows = poll(lambda: page.evaluate(ROWS_JS, "table-op-types"))
    assert rows[0]["type"] == want[0]["type"] == "MatMul"
    assert float(rows[0]["ratio_pct"]) == pytest.approx(want[0]["ratio_pct"])
    assert float(rows[0]["total_us"]) == pytest.approx(want[0]["total_us"])
