"""The Data pipeline view in a real chromium against a real `tensorboard --logdir fixtures`:
on the planted run (fixtures/mindspore_pipeline_legacy, a Map bottleneck) the view draws the
graph (a box per op of `/data_pipeline`, each child -> parent edge and the device queue),
marks the bottleneck op and only it, and its tables show the route's numbers; on MindInsight's
real sample (real/mindspore_legacy_run1) it draws Batch <- Shuffle <- 2 x TFReader."""
from __future__ import annotations

import re

import pytest

from .conftest import poll, screenshot

pytestmark = pytest.mark.browser

PLANTED = "mindspore_pipeline_legacy"
REAL = "real/mindspore_legacy_run1"


def _open(page, server, run):
    names = [r["name"] for r in server.runs() if r["state"] == "ready"]
    if run not in names:
        pytest.skip(f"fixtures/ has no ready run {run}")
    prof = server.profile(run)
    page.goto(server.page_url(**prof, view="data_pipeline"))
    page.wait_for_selector('[data-testid="pipeline-graph"]', timeout=30000)
    return prof, server.api("data_pipeline", **prof)


def _shown_queue_pct(text: str) -> float:
    m = re.search(r"queue (\d+(?:\.\d+)?)%", text)
    assert m, text
    return float(m.group(1))


def _graph(page):
    return page.evaluate("""() => {
        const svg = document.querySelector('[data-testid="pipeline-graph"]');
        const ops = [...svg.querySelectorAll('[data-testid^="pipeline-op-"]')].map((g) => ({
            id: Number(g.dataset.testid.replace('pipeline-op-', '')),
            bottleneck: g.dataset.bottleneck === 'true',
            text: [...g.querySelectorAll('text')].map((t) => t.textContent).join(' | '),
            bar: g.querySelector('[data-testid^="pipeline-queue-bar-"]')?.getAttribute('width') ?? null,
        }));
        return {ops, lines: svg.querySelectorAll('line').length,
                device: !!svg.querySelector('[data-testid="pipeline-device-queue"]')};
    }""")


def test_planted_bottleneck_is_drawn_and_marked(page, server):
    _, doc = _open(page, server, PLANTED)
    g = poll(lambda: _graph(page) if _graph(page)["ops"] else None)
    assert sorted(o["id"] for o in g["ops"]) == sorted(o["op_id"] for o in doc["ops"])
    assert [o["id"] for o in g["ops"] if o["bottleneck"]] == [doc["bottleneck"]["op_id"]] == [1]
    by_id = {o["op_id"]: o for o in doc["ops"]}
    for o in g["ops"]:
        op = by_id[o["id"]]
        assert op["op_type"] in o["text"]
        assert _shown_queue_pct(o["text"]) == pytest.approx(op["queue_usage_pct"], abs=0.0501)
        assert o["bar"] is not None
    # child -> parent edges plus root -> device queue
    parents = sum(1 for o in doc["ops"] if o["parent_id"] is not None)
    assert g["device"] and g["lines"] == parents + 1
    card = page.locator('[data-testid="pipeline-bottleneck"]').inner_text()
    assert "Map (op 1)" in card and "num_parallel_workers" in card
    dq = page.locator('[data-testid="pipeline-dq-empty"]').get_attribute("data-value")
    assert float(dq) == pytest.approx(doc["device_queue"]["empty_pct"])
    rows = page.locator('[data-testid="pipeline-ops-table"] tbody tr')
    assert rows.count() == len(doc["ops"])
    screenshot(page, "data_pipeline_planted")


def test_real_mindinsight_sample_graph(page, server):
    _, doc = _open(page, server, REAL)
    g = poll(lambda: _graph(page) if _graph(page)["ops"] else None)
    texts = {o["id"]: o["text"] for o in g["ops"]}
    assert sorted(texts) == [0, 1, 2, 3]
    assert "Batch #0" in texts[0] and "no queue" in texts[0]
    assert "Shuffle #1" in texts[1]
    assert _shown_queue_pct(texts[1]) == pytest.approx(100 * 0.3125, abs=0.0501)  # MindInsight's rate
    assert "TFReader #2" in texts[2] and "TFReader #3" in texts[3]
    assert not g["device"]  # no device queue files in this sample
    assert g["lines"] == 3
    marked = [o["id"] for o in g["ops"] if o["bottleneck"]]
    assert marked == [doc["bottleneck"]["op_id"]]
