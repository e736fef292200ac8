"""Names from data that are HTML/JS render as text: a real chromium against a real
`tensorboard` over a generated logdir whose run, worker, operator and kernel names and a
file error path carry markup. Each payload would set `window.__pwned` if it ever ran."""
from __future__ import annotations

import os

import pytest

from tests.security.traces import write_kineto
from tests.tb_server import TensorBoard

from .conftest import Server, _new_page, poll

pytestmark = pytest.mark.browser

RUN = "<img src=x onerror=window.__pwned=1>"
WORKER = "<svg onload=window.__pwned=2>"
OPS = ["<img src=x onerror=window.__pwned=3>", "<script>window.__pwned=4</script>",
       "<b onmouseover=window.__pwned=5>bold</b>", "aten::mm"]
KERNELS = ["<img src=y onerror=window.__pwned=6>", "<iframe srcdoc='<script>parent.__pwned=7</script>'>",
           "plain_kernel"]
ERRORS_RUN = "errors <img src=z onerror=window.__pwned=8>"
BAD_FILE = "<img src=q onerror=window.__pwned=9>.2.pt.trace.json"
MARKUP = "img, svg, script, iframe, b[onmouseover]"


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory, chromium_path):
    logdir = str(tmp_path_factory.mktemp("html_names"))
    write_kineto(os.path.join(logdir, RUN), f"{WORKER}.1.pt.trace.json", OPS, KERNELS)
    write_kineto(os.path.join(logdir, ERRORS_RUN), "good.1.pt.trace.json", ["aten::add"], ["k"])
    with open(os.path.join(logdir, ERRORS_RUN, BAD_FILE), "wb") as fh:
        fh.write(b"not json")
    with TensorBoard(logdir).loaded() as tb:
        yield Server(tb)


@pytest.fixture
def hpage(browser, hostile_server):
    ctx, page = _new_page(browser, hostile_server)
    yield page
    rec = page.recorder
    pwned = page.evaluate("window.__pwned")
    ctx.close()
    assert pwned is None, f"a name from the data ran as script (payload {pwned})"
    assert rec.foreign_requests() == []
    assert rec.console_errors == []


def _no_markup(page):
    found = page.evaluate(f"""() => [...document.querySelectorAll('#npu-profiler-root :is({MARKUP})')]
        .map((e) => e.outerHTML)""")
    assert found == []
    assert page.evaluate("window.__pwned") is None


def _text(page) -> str:
    return page.locator("#npu-profiler-root").inner_text()


def _open(page, server, view):
    prof = server.profile(RUN)
    assert prof["worker"] == WORKER  # the API gives the names as they are
    page.goto(server.page_url(**prof, view=view))
    page.locator(f'[data-testid="view-{view}"]').wait_for()
    return prof


def test_run_and_worker_names_show_as_text(hpage, hostile_server):
    _open(hpage, hostile_server, "overview")
    options = hpage.locator('[data-testid="run-select"] option')
    poll(lambda: options.count() == 2)
    assert RUN in [options.nth(i).inner_text() for i in range(options.count())]
    assert hpage.locator('[data-testid="worker-select"] option').first.inner_text().startswith(WORKER)
    _no_markup(hpage)


def test_kernel_names_show_as_text_in_table_and_tooltip(hpage, hostile_server):
    _open(hpage, hostile_server, "kernels")
    hpage.locator('[data-testid="table-kernels"][aria-busy="false"]').wait_for()
    assert poll(lambda: all(k in _text(hpage) for k in KERNELS)), _text(hpage)
    # Hover around the pie: every tooltip it shows is text.
    chart = hpage.locator('[data-testid="chart-kernels-name"]')
    box = chart.bounding_box()
    shown = set()
    for fx, fy in ((0.28, 0.5), (0.2, 0.35), (0.2, 0.65), (0.35, 0.5), (0.28, 0.3), (0.28, 0.7)):
        hpage.mouse.move(box["x"] + box["width"] * fx, box["y"] + box["height"] * fy)
        hpage.wait_for_timeout(300)
        text = chart.inner_text()
        shown |= {k for k in KERNELS if k in text}
        _no_markup(hpage)
    assert shown, "no tooltip showed a kernel name"


def test_operator_names_and_call_stacks_show_as_text(hpage, hostile_server):
    _open(hpage, hostile_server, "operators")
    table = hpage.locator('[data-testid="table-operators"][aria-busy="false"]')
    table.wait_for()
    assert poll(lambda: all(op in _text(hpage) for op in OPS)), _text(hpage)
    rows = hpage.locator('[data-testid="table-operators"] .tr[data-index]')
    for i in range(rows.count()):
        rows.nth(i).click()
        box = hpage.locator('[data-testid="call-stack"]')
        box.locator(".stack-frames").first.wait_for()
        frames = box.locator(".stack-frames").first.inner_text()
        assert any(frames.startswith(op + "\n") or frames.startswith(op + ";") for op in OPS), frames
        _no_markup(hpage)


def test_trace_search_and_details_show_names_as_text(hpage, hostile_server):
    _open(hpage, hostile_server, "trace")
    hpage.wait_for_function(
        "() => Number(document.querySelector('[data-testid=trace-canvas]').dataset.painted) > 0",
        timeout=60000)
    hpage.get_by_test_id("trace-search").fill("onerror")
    hpage.get_by_test_id("trace-search").press("Enter")
    hpage.get_by_test_id("trace-details").wait_for()
    names = set()
    for _ in range(3):
        names.add(hpage.get_by_test_id("trace-details-name").inner_text())
        hpage.get_by_test_id("trace-next").click()
        hpage.wait_for_timeout(300)
    assert OPS[0] in names and KERNELS[0] in names, names
    _no_markup(hpage)


def test_file_errors_show_paths_as_text(hpage, hostile_server):
    run = {r["name"]: r for r in hostile_server.runs()}[ERRORS_RUN]
    assert [e["path"] for e in run["errors"]] == [f"{ERRORS_RUN}/{BAD_FILE}"]
    hpage.recorder.allowed_error_urls.append("/data/plugin/npu_profiler/")
    hpage.goto(hostile_server.page_url(run=ERRORS_RUN))
    box = hpage.locator('[data-testid="run-errors"]')
    box.wait_for()
    assert box.locator(".file-error-path").first.inner_text() == f"{ERRORS_RUN}/{BAD_FILE}"
    _no_markup(hpage)
