"""The trace timeline in a real browser: paints, zoom/pan, search, select with flow links,
measure; and (slow) a generated trace of a few hundred MB with a bounded JS heap."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

from tests.browser.conftest import screenshot
from tests.tb_server import ROOT, TensorBoard


def _open(page, server, run, **extra):
    prof = server.profile(run)
    page.goto(server.page_url(**prof, view="trace", **extra))
    canvas = page.get_by_test_id("trace-canvas")
    canvas.wait_for()
    page.wait_for_function(
        "() => Number(document.querySelector('[data-testid=trace-canvas]').dataset.painted) > 0",
        timeout=60000)
    return canvas


def _window(canvas):
    a, b = (float(x) for x in canvas.get_attribute("data-window").split(","))
    return a, b


def _nonblank(page) -> int:
    """Number of distinct colors sampled on the canvas (a painted timeline has many)."""
    return page.evaluate("""() => {
      const c = document.querySelector('[data-testid=trace-canvas]');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const seen = new Set();
      for (let i = 0; i < d.length; i += 4 * 97) seen.add(d[i] << 16 | d[i+1] << 8 | d[i+2]);
      return seen.size;
    }""")


def test_timeline_paints_zooms_pans_and_selects(page, server):
    canvas = _open(page, server, "torch_npu_level1")
    assert _nonblank(page) > 8
    a0, b0 = _window(canvas)
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 200)
    page.mouse.wheel(0, -600)  # zoom in at the pointer
    page.wait_for_timeout(300)
    a1, b1 = _window(canvas)
    assert b1 - a1 < (b0 - a0) * 0.6
    canvas.focus()
    page.keyboard.press("d")  # pan right
    page.wait_for_timeout(200)
    a2, b2 = _window(canvas)
    assert a2 > a1 and abs((b2 - a2) - (b1 - a1)) < 1e-6 * (b1 - a1) + 1e-9
    page.keyboard.press("s")
    a3, b3 = _window(canvas)
    assert b3 - a3 > b2 - a2
    # Drag pans.
    page.mouse.move(box["x"] + 600, box["y"] + 300)
    page.mouse.down()
    page.mouse.move(box["x"] + 400, box["y"] + 300, steps=5)
    page.mouse.up()
    a4, _ = _window(canvas)
    assert a4 > a3
    page.get_by_test_id("trace-fit").click()
    a5, b5 = _window(canvas)
    assert a5 <= a0 + 1e-6 and b5 >= b0 - 1e-6
    screenshot(page, "trace-level1")


def test_a_slow_answer_for_an_earlier_selection_does_not_replace_the_details(page, server):
    """The latest selection wins: the details of the first search hit are held back by the
    network until the second hit is shown; when they arrive they must not replace it."""
    held = []

    def hold_first_slice(route):
        if not held:
            held.append(route)  # answered later (or never, once aborted)
        else:
            route.continue_()

    page.route(lambda url: "/trace/slice?" in url, hold_first_slice)
    _open(page, server, "torch_npu_level1")
    page.get_by_test_id("trace-search").fill("aclnnRmsNorm")
    page.get_by_test_id("trace-search").press("Enter")
    count = page.get_by_test_id("trace-search-count")
    page.wait_for_function(
        "() => (document.querySelector('[data-testid=trace-search-count]') || {}).innerText"
        "?.startsWith('1 / ')")
    for _ in range(200):  # (the route handler runs when the request is sent)
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the first hit's details were not requested"
    page.get_by_test_id("trace-next").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=trace-search-count]').innerText.startsWith('2 / ')")
    name = page.get_by_test_id("trace-details-name")
    name.wait_for()
    second = name.inner_text()
    try:
        held[0].continue_()  # the first hit's answer arrives now, late
    except Exception:  # (its request was aborted: nothing to answer)
        pass
    page.wait_for_timeout(1500)
    assert count.inner_text().startswith("2 / ")
    assert name.inner_text() == second
    page.unroute_all()


def test_search_next_previous_and_flow_links(page, server):
    canvas = _open(page, server, "torch_npu_level1")
    page.get_by_test_id("trace-search").fill("aclnnRmsNorm")
    page.get_by_test_id("trace-search").press("Enter")
    page.get_by_test_id("trace-details").wait_for()
    count = page.get_by_test_id("trace-search-count")
    assert count.inner_text().startswith("1 / ")
    first = page.get_by_test_id("trace-details-name").inner_text()
    assert "aclnnRmsNorm" in first
    page.get_by_test_id("trace-next").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=trace-search-count]').innerText.startsWith('2 / ')")
    page.get_by_test_id("trace-prev").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=trace-search-count]').innerText.startsWith('1 / ')")
    # (the details of the first hit again, not those of the second still on screen)
    page.wait_for_function(
        "(n) => document.querySelector('[data-testid=trace-details-name]').innerText === n",
        arg=first)
    # The selected host op links to its device kernel; following the link selects it.
    flows = page.get_by_test_id("trace-flows")
    flows.wait_for()
    before = page.get_by_test_id("trace-details-name").inner_text()
    flows.locator("button.link").first.click()
    page.wait_for_function(
        "(b) => document.querySelector('[data-testid=trace-details-name]').innerText !== b", arg=before)
    a, b = _window(canvas)
    assert b > a
    screenshot(page, "trace-search-flows")


def test_search_steps_through_every_page_of_hits(page, server):
    """The API pages hits 200 at a time; prev/next walk all of them (wrapping around)."""
    prof = server.profile("torch_npu_level1")
    total = server.api("trace/search", **prof, q="@", limit=1)["total"]
    assert total > 200, total  # the fixture has more hits than one page
    _open(page, server, "torch_npu_level1")
    page.get_by_test_id("trace-search").fill("@")
    page.get_by_test_id("trace-search").press("Enter")
    count = page.get_by_test_id("trace-search-count")
    page.wait_for_function(
        "(t) => document.querySelector('[data-testid=trace-search-count]').innerText === `1 / ${t}`",
        arg=total)
    page.get_by_test_id("trace-prev").click()  # wraps to the last hit, on the last page
    page.wait_for_function(
        "(t) => document.querySelector('[data-testid=trace-search-count]').innerText === `${t} / ${t}`",
        arg=total)
    last = server.api("trace/search", **prof, q="@", offset=total - 1, limit=1)["hits"][0]
    page.wait_for_function(
        "(n) => (document.querySelector('[data-testid=trace-details-name]') || {}).innerText === n",
        arg=last["name"])
    page.get_by_test_id("trace-next").click()  # and back to the first page
    page.wait_for_function(
        "(t) => document.querySelector('[data-testid=trace-search-count]').innerText === `1 / ${t}`",
        arg=total)
    assert count.inner_text() == f"1 / {total}"


def test_memory_peak_links_into_the_timeline(page, server):
    prof = server.profile("torch_npu_level1")
    mem = server.api("memory", **prof)
    peak = mem["devices"][0]["peak_ts_us"]
    assert peak is not None
    page.goto(server.page_url(**prof, view="memory"))
    link = page.get_by_test_id("memory-peak-trace-link")
    link.wait_for()
    link.click()
    canvas = page.get_by_test_id("trace-canvas")
    canvas.wait_for()
    page.wait_for_function(
        "() => Number(document.querySelector('[data-testid=trace-canvas]').dataset.painted) > 0",
        timeout=60000)
    tracks = server.api("trace/tracks", **prof)
    a, b = _window(canvas)
    rel = peak - tracks["start_us"]
    assert a <= rel <= b  # the peak is in view ...
    assert b - a < (tracks["end_us"] - tracks["start_us"]) * 0.5  # ... zoomed in around it


def test_measure_range_and_zoom_to_step(page, server):
    canvas = _open(page, server, "kineto_gpu")
    box = canvas.bounding_box()
    page.get_by_test_id("trace-measure").click()
    page.mouse.move(box["x"] + 400, box["y"] + 100)
    page.mouse.down()
    page.mouse.move(box["x"] + 900, box["y"] + 100, steps=5)
    page.mouse.up()
    panel = page.get_by_test_id("trace-measure-panel")
    panel.wait_for()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=trace-measure-panel]').innerText.includes('slices overlap')")
    a0, b0 = _window(canvas)
    page.get_by_test_id("trace-fit").click()  # zoom to the measured range
    a1, b1 = _window(canvas)
    assert b1 - a1 < b0 - a0
    step = page.get_by_test_id("trace-step")
    opts = step.locator("option").all_inner_texts()
    assert len(opts) >= 2
    step.select_option(index=1)
    a2, b2 = _window(canvas)
    assert b2 - a2 > 0


@pytest.mark.parametrize("run", ["real/mindinsight_msprof_cann63", "mindspore_2x",
                                 "real/kineto_resnet50_w0", "torch_npu_dist4"])
def test_timeline_paints_for_every_producer(page, server, run):
    _open(page, server, run)
    assert _nonblank(page) > 4


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("RUN_SLOW"), reason="slow: set RUN_SLOW=1")
def test_large_generated_trace_stays_bounded(browser, tmp_path_factory):
    """A ~250 MB generated trace: paints, zooms, and the JS heap stays small.

    Slow (a few minutes on 2 cores):
    `RUN_SLOW=1 pytest -m slow tests/browser/test_trace_ui.py`.
    """
    out = tmp_path_factory.mktemp("bigtrace")
    subprocess.run([sys.executable, os.path.join(ROOT, "fixtures", "generate.py"), "--out",
                    str(out), "--large", "--trace-mb", os.environ.get("TRACE_TEST_MB", "250")],
                   check=True, stdout=subprocess.DEVNULL)
    tb = TensorBoard(str(out), cache_dir=tempfile.mkdtemp(prefix="npu-big-")).start()
    try:
        tb.wait_loaded(timeout=900)
        from tests.browser.conftest import Server
        srv = Server(tb)
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        page.set_default_timeout(180000)
        run = srv.runs()[0]["name"]
        canvas = _open(page, srv, run)
        box = canvas.bounding_box()
        page.mouse.move(box["x"] + 700, box["y"] + 200)
        for _ in range(12):
            page.mouse.wheel(0, -500)
            page.wait_for_timeout(150)
        canvas.focus()
        for k in "ddddaaassss":
            page.keyboard.press(k)
            page.wait_for_timeout(100)
        page.get_by_test_id("trace-fit").click()
        page.wait_for_timeout(1000)
        heap = page.evaluate("() => performance.memory ? performance.memory.usedJSHeapSize : 0")
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs
                   if f.startswith("trace_view"))
        print(f"\nlarge trace: {size / 2**20:.0f} MB trace_view.json, JS heap {heap / 2**20:.1f} MB")
        assert heap < 300 * 2**20, heap
        assert _nonblank(page) > 8
        ctx.close()
    finally:
        tb.stop()
