"""The Dispatch view in a real chromium against a real `tensorboard --logdir fixtures`: on the
planted run (fixtures/advisor_planted, rank 2 stalls its host before every third launch) it
shows the dispatch-bound verdict, the per-op table and the worst gaps of the `/dispatch` JSON,
and a worst-gap link opens the timeline zoomed to that gap."""
from __future__ import annotations

import math

import pytest

from .conftest import ROWS_JS, hash_state, poll, screenshot

pytestmark = pytest.mark.browser
RUN = "advisor_planted"


def profile(server, worker: str) -> dict:
    if RUN not in [r["name"] for r in server.runs()]:
        pytest.skip("fixtures/ has no advisor_planted run")
    info = server.api("run", run=RUN)
    assert "dispatch" in info["views"]
    w = next(x for x in info["workers"] if x["name"] == worker)
    return {"run": RUN, "worker": worker, "span": w["spans"][0]}


def open_view(page, server, prof):
    page.goto(server.page_url(**prof, view="dispatch"))
    page.locator('[data-testid="view-dispatch"] [data-testid="fig-dispatch-verdict"]').wait_for(timeout=60000)


def test_dispatch_bound_rank_shows_its_gaps_and_ops(page, server):
    prof = profile(server, "rank2")
    data = server.api("dispatch", **prof)
    open_view(page, server, prof)
    assert page.get_by_test_id("fig-dispatch-verdict").get_attribute("data-value") == "dispatch-bound"
    assert int(page.get_by_test_id("fig-dispatch-gaps").get_attribute("data-value")) == \
        data["summary"]["dequeue_gaps_over_1ms"]
    links = page.get_by_test_id("dispatch-gap-link")
    assert links.count() == len(data["worst_gaps"]) > 0
    starts = [float(links.nth(i).get_attribute("data-start")) for i in range(links.count())]
    assert starts == [g["start_us"] for g in data["worst_gaps"]]
    rows = poll(lambda: page.evaluate(ROWS_JS, "table-dispatch"))
    assert [r["name"] for r in rows[:10]] == [r["name"] for r in data["ops"][:10]]
    page.get_by_test_id("chart-dispatch-steps").wait_for()
    screenshot(page, "dispatch_rank2")


def test_clean_rank_is_not_dispatch_bound(page, server):
    prof = profile(server, "rank0")
    open_view(page, server, prof)
    assert page.get_by_test_id("fig-dispatch-verdict").get_attribute("data-value") == "not dispatch-bound"
    assert page.get_by_test_id("dispatch-gap-link").count() == 0


def test_worst_gap_link_opens_the_timeline_at_the_gap(page, server):
    prof = profile(server, "rank2")
    gap = server.api("dispatch", **prof)["worst_gaps"][0]
    open_view(page, server, prof)
    page.get_by_test_id("dispatch-gap-link").first.click()
    canvas = page.get_by_test_id("trace-canvas")
    canvas.wait_for(timeout=60000)
    page.wait_for_function(
        "() => Number(document.querySelector('[data-testid=trace-canvas]').dataset.painted) > 0",
        timeout=60000)
    st = hash_state(page)
    assert st["view"] == "trace" and st["worker"] == "rank2"
    tracks = server.api("trace/tracks", **prof)
    a, b = (float(x) for x in canvas.get_attribute("data-window").split(","))
    g0, g1 = gap["start_us"] - tracks["start_us"], gap["end_us"] - tracks["start_us"]
    assert a <= g0 and b >= g1               # the whole gap is in view ...
    # the link asks for the gap with half its length on either side (whole µs, outward) ...
    half = max((gap["end_us"] - gap["start_us"]) / 2, 1)
    assert (float(st["trace.t0"]), float(st["trace.t1"])) == (
        math.floor(gap["start_us"] - half), math.ceil(gap["end_us"] + half))
    # ... and the timeline shows about that (it pads the window a little)
    assert b - a <= (float(st["trace.t1"]) - float(st["trace.t0"])) * 1.2 + 2
    # the Dequeue events on both sides of the gap are in the window
    s = server.api("trace/summary", **prof, start_us=tracks["start_us"] + a,
                   end_us=tracks["start_us"] + b, limit=500)
    names = {r["name"] for r in s["rows"]}
    assert gap["before"] in names and gap["after"] in names
    screenshot(page, "dispatch_gap_timeline")
