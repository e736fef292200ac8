"""The plugin's frontend in a real chromium against a real `tensorboard --logdir fixtures`.

Expected values come from the HTTP API's JSON, so these tests check that the UI shows what
the backend computed (the backend's own correctness is tested in tests/e2e).
"""
from __future__ import annotations

import csv
import io
import math
import tempfile
import urllib.parse

import pytest

from tests.tb_server import FIXTURES, TensorBoard

from .conftest import ROWS_JS, _new_page, copy_screenshot_to_docs, hash_state, poll, screenshot

pytestmark = pytest.mark.browser

NPU_RUN = "torch_npu_level1"
MULTI_WORKER_RUN = "torch_npu_dist4"
GPU_RUN = "kineto_gpu"
BAD_RUN = "bad_input"



# ---- helpers -------------------------------------------------------------------------------





def table_rows(page, tid: str) -> list[dict]:
    return page.evaluate(ROWS_JS, tid)


def table_total(page, tid: str):
    el = page.locator(f'[data-testid="{tid}"]')
    if el.get_attribute("aria-busy") != "false":
        return None
    t = el.get_attribute("data-total")
    return int(t) if t is not None else None


def close(a, b, rel=1e-6) -> bool:
    if a in (None, "") or b is None:
        return a in (None, "") and b is None
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-6)


def visible_prefix(rows: list[dict], api_rows: list[dict], keys: list[str]) -> bool:
    """The table shows the API's rows in order (at least the first few, virtualized)."""
    if len(rows) == 0:
        return len(api_rows) == 0
    n = min(len(rows), len(api_rows), 15)
    if n == 0:
        return False
    for r, a in zip(rows[:n], api_rows[:n]):
        for k in keys:
            if isinstance(a.get(k), (int, float)) or a.get(k) is None:
                if not close(r.get(k), a.get(k)):
                    return False
            elif r.get(k) != str(a.get(k)):
                return False
    return True


def wait_table_matches(page, tid, api_rows, keys, total=None, timeout=20.0):
    def ok():
        if total is not None and table_total(page, tid) != total:
            return False
        return visible_prefix(table_rows(page, tid), api_rows, keys)
    if not poll(ok, timeout):
        raise AssertionError(
            f"table {tid} does not show the API rows\nUI:  {table_rows(page, tid)[:5]}\n"
            f"API: {api_rows[:5]}\nUI total {table_total(page, tid)} API total {total}")


def chart_summary(page, tid: str):
    import json
    loc = page.locator(f'[data-testid="{tid}"]')
    loc.wait_for()
    s = poll(lambda: loc.get_attribute("data-summary"))
    assert s, f"chart {tid} never drew"
    assert loc.locator("canvas").count() >= 1
    return json.loads(s)


def open_view(page, server, view: str, run: str = NPU_RUN, **extra):
    prof = server.profile(run)
    page.goto(server.page_url(**prof, view=view, **extra))
    page.locator(f'[data-testid="view-{view}"]').wait_for()
    return prof


# ---- tests ---------------------------------------------------------------------------------

def test_left_panel_lists_runs_and_views(page, server):
    page.goto(server.plugin_page)
    sel = page.locator('[data-testid="run-select"]')
    sel.wait_for()
    api_runs = [r["name"] for r in server.runs()]
    poll(lambda: len(sel.locator("option").all()) == len(api_runs))
    assert [o.get_attribute("value") for o in sel.locator("option").all()] == api_runs
    # Without a hash, a clean ready run opens and the URL gets the full selection.
    st = poll(lambda: hash_state(page).get("view") and hash_state(page))
    assert st["run"] in api_runs and st["run"] != BAD_RUN
    info = server.api("run", run=st["run"])
    assert st["worker"] == info["workers"][0]["name"]
    navs = page.locator('[role="tab"]')
    assert [n.get_attribute("data-testid") for n in navs.all()] == [f"nav-{v}" for v in info["views"]]
    assert page.locator('[data-testid="nav-trace"]').count() == 1


def test_overview_shows_steps_breakdown_and_figures(page, server):
    prof = open_view(page, server, "overview")
    data = server.api("steps", **prof)
    n = len(data["steps"])
    page.locator('[data-testid="fig-steps"]').wait_for()
    assert page.locator('[data-testid="fig-steps"] .figure-value').inner_text() == str(n)
    avg = sum(s["total_us"] for s in data["steps"]) / n
    assert close(page.locator('[data-testid="fig-avg-step"]').get_attribute("data-value"), avg)
    assert "NPU" in page.locator('[data-testid="fig-device"]').inner_text()

    bars = chart_summary(page, "chart-steps")
    assert len(bars) == len(data["categories"])
    for series, cat in zip(bars, data["categories"]):
        assert series["type"] == "bar"
        assert all(close(v, s["breakdown"][cat]) for v, s in zip(series["values"], data["steps"]))
    pie = chart_summary(page, "chart-breakdown")[0]
    assert pie["type"] == "pie" and len(pie["values"]) == len(data["categories"])
    for v, cat in zip(pie["values"], data["categories"]):
        assert close(v, sum(s["breakdown"][cat] for s in data["steps"]) / n)

    rows = [{"step": s["step"], "total_us": s["total_us"], **s["breakdown"]} for s in data["steps"]]
    wait_table_matches(page, "table-steps", rows, ["step", "total_us", *data["categories"]], total=n)
    screenshot(page, "overview")
    copy_screenshot_to_docs("overview")


def test_operators_pies_table_and_call_stack(page, server):
    prof = open_view(page, server, "operators")
    api = server.api("operators", **prof, group_by="name", sort="-device_self_us", limit=200)
    keys = ["name", "calls", "device_self_us", "device_total_us", "host_self_us", "host_total_us"]
    wait_table_matches(page, "table-operators", api["rows"], keys, total=api["total_rows"])

    dev = chart_summary(page, "chart-operators-device")[0]
    top = [r for r in sorted(api["rows"], key=lambda r: -r["device_self_us"]) if r["device_self_us"] > 0][:10]
    assert dev["names"][:len(top)] == [r["name"] for r in top]
    chart_summary(page, "chart-operators-host")

    # Top-N selector: the pies keep the 5 largest (and "Other"), the choice is in the URL.
    page.select_option('[data-testid="operators-topn"]', "5")
    poll(lambda: len(chart_summary(page, "chart-operators-device")[0]["names"]) <= 6)
    dev5 = chart_summary(page, "chart-operators-device")[0]
    assert dev5["names"][:min(5, len(top))] == [r["name"] for r in top[:5]]
    assert hash_state(page)["operators.top"] == "5"
    page.select_option('[data-testid="operators-topn"]', "10")  # the default: no filter left
    poll(lambda: "operators.top" not in hash_state(page))

    # Call stack of the first row.
    first = api["rows"][0]
    page.locator('[data-testid="table-operators"] .tr[data-index="0"]').click()
    stacks = server.api("operators/stack", **prof, name=first["name"])["stacks"]
    box = page.locator('[data-testid="call-stack"]')
    if stacks and stacks[0]["stack"]:
        poll(lambda: box.locator(".stack-frames").count() > 0)
        assert box.locator(".stack-frames").first.inner_text().strip() == stacks[0]["stack"].strip()
    assert hash_state(page)["operators.op"] == first["name"]

    # Group by name + input shape.
    page.locator('[data-testid="operators-group-name_shape"]').click()
    api2 = server.api("operators", **prof, group_by="name_shape", sort="-device_self_us", limit=200)
    wait_table_matches(page, "table-operators", api2["rows"], ["name", "input_shapes", "calls", "device_self_us"],
                       total=api2["total_rows"])
    assert hash_state(page)["operators.group"] == "name_shape"
    screenshot(page, "operators")
    copy_screenshot_to_docs("operators")


def test_kernels_grouping_topn_step_filter_sort_and_search(page, server):
    prof = open_view(page, server, "kernels")
    keys_for = lambda g: [g, "calls", "total_us", "avg_us", "min_us", "max_us", "wait_us"]  # noqa: E731
    api = server.api("kernels", **prof, group_by="name", sort="-total_us", limit=200)
    wait_table_matches(page, "table-kernels", api["rows"], keys_for("name"), total=api["total_rows"])

    core = server.api("kernels", **prof, group_by="core", sort="-total_us")
    pie = chart_summary(page, "chart-kernels-core")[0]
    assert pie["names"] == [r["core"] for r in core["rows"] if r["total_us"] > 0]
    assert all(close(v, r["total_us"]) for v, r in zip(pie["values"], core["rows"]))
    names = chart_summary(page, "chart-kernels-name")[0]
    assert names["names"][:10] == [r["name"] for r in api["rows"][:10]]

    # Top-N selector.
    page.select_option('[data-testid="kernels-topn"]', "5")
    poll(lambda: len(chart_summary(page, "chart-kernels-name")[0]["names"]) <= 6)
    names = chart_summary(page, "chart-kernels-name")[0]
    assert names["names"][:5] == [r["name"] for r in api["rows"][:5]]
    assert hash_state(page)["kernels.top"] == "5"

    # Group by core / type.
    for g in ("core", "type"):
        page.locator(f'[data-testid="kernels-group-{g}"]').click()
        exp = server.api("kernels", **prof, group_by=g, sort="-total_us", limit=200)
        wait_table_matches(page, "table-kernels", exp["rows"], keys_for(g), total=exp["total_rows"])
    page.locator('[data-testid="kernels-group-name"]').click()

    # Sort ascending by calls (server-side).
    page.locator('[data-testid="table-kernels"] .th[data-key="calls"]').click()  # -calls
    page.locator('[data-testid="table-kernels"] .th[data-key="calls"]').click()  # calls
    exp = server.api("kernels", **prof, group_by="name", sort="calls", limit=200)
    wait_table_matches(page, "table-kernels", exp["rows"], keys_for("name"), total=exp["total_rows"])

    # Search (server-side, case-insensitive substring).
    needle = api["rows"][0]["name"][:4].upper()
    page.fill('[data-testid="table-kernels"] input[type="search"]', needle)
    exp = server.api("kernels", **prof, group_by="name", sort="calls", search=needle, limit=200)
    wait_table_matches(page, "table-kernels", exp["rows"], keys_for("name"), total=exp["total_rows"])
    page.fill('[data-testid="table-kernels"] input[type="search"]', "")

    # Step filter.
    steps = server.api("steps", **prof)["steps"]
    if steps:
        step = str(steps[-1]["step"])
        page.select_option('[data-testid="kernels-step"]', step)
        exp = server.api("kernels", **prof, group_by="name", sort="calls", step=step, limit=200)
        wait_table_matches(page, "table-kernels", exp["rows"], keys_for("name"), total=exp["total_rows"])
        assert hash_state(page)["kernels.step"] == step
    screenshot(page, "kernels")
    copy_screenshot_to_docs("kernels")


def test_gpu_kernels_use_cuda_kernel_types(page, server):
    prof = open_view(page, server, "kernels", run=GPU_RUN)
    core = server.api("kernels", **prof, group_by="core", sort="-total_us")
    pie = chart_summary(page, "chart-kernels-core")[0]
    assert pie["names"] == [r["core"] for r in core["rows"] if r["total_us"] > 0]
    assert "kernel type" in page.locator('[data-testid="view-kernels"]').inner_text().lower()
    screenshot(page, "kernels_gpu")


def test_kineto_views_say_whose_definitions_they_follow(page, server):
    """docs/exactness.md: kineto Operators/Overview name torch-tb-profiler; NPU views do not."""
    for view, tid in (("operators", "operators-definitions"), ("overview", "overview-definitions")):
        open_view(page, server, view, run=GPU_RUN)
        label = page.locator(f'[data-testid="{tid}"]')
        label.wait_for()
        assert "torch-tb-profiler 0.4.3" in label.inner_text()
        open_view(page, server, view, run=NPU_RUN)
        page.locator(f'[data-testid="view-{view}"]').wait_for()
        page.locator('[data-testid="table-operators"], [data-testid="table-steps"]').first.wait_for()
        assert page.locator(f'[data-testid="{tid}"]').count() == 0


def test_memory_curves_peaks_and_range_selection(page, server):
    prof = open_view(page, server, "memory")
    mem = server.api("memory", **prof)
    api = server.api("memory/allocations", **prof, sort="-size_kb", limit=200)
    keys = ["name", "device", "size_kb", "alloc_us", "release_us", "duration_us"]
    wait_table_matches(page, "table-allocations", api["rows"], keys, total=api["total_rows"])

    device = mem["devices"][0]["device"] if mem["devices"] else mem["curves"][0]["device"]
    series = chart_summary(page, "chart-memory")
    curves = [c for c in mem["curves"] if c["device"] == device]
    drawn = {s["name"] for s in series}
    for c in curves:
        if any(p[1] is not None for p in c["points"]):
            assert f"{c['component']} Allocated" in drawn
        if any(p[2] is not None for p in c["points"]):
            assert f"{c['component']} Reserved" in drawn

    # Peak tables.
    wait_table_matches(page, "table-memory-devices", mem["devices"], ["device", "peak_allocated_mb", "peak_reserved_mb"],
                       total=len(mem["devices"]))
    assert table_total(page, "table-memory-components") == len(mem["component_peaks"])

    # Drag a time range on the curve: the allocations table is filtered to it.
    box = page.locator('[data-testid="chart-memory"]').bounding_box()
    y = box["y"] + box["height"] * 0.6
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=8)
    page.mouse.move(box["x"] + box["width"] * 0.7, y, steps=8)
    page.mouse.up()
    st = poll(lambda: "memory.from" in hash_state(page) and hash_state(page))
    assert st, "dragging on the memory chart did not select a range"
    start, end = float(st["memory.from"]), float(st["memory.to"])
    assert end > start
    exp = server.api("memory/allocations", **prof, start_us=st["memory.from"], end_us=st["memory.to"],
                     sort="-size_kb", limit=200)
    wait_table_matches(page, "table-allocations", exp["rows"], keys, total=exp["total_rows"])
    page.locator('[data-testid="memory-range"]').wait_for()
    screenshot(page, "memory")
    copy_screenshot_to_docs("memory")


def test_trace_view_offers_the_original_file(page, server):
    prof = open_view(page, server, "trace")
    # The timeline is in the plugin now; the original file stays one click away.
    page.locator('[data-testid="trace-canvas"]').wait_for()
    with page.expect_download() as dl:
        page.locator('[data-testid="trace-download"]').click()
    path = dl.value.path()
    with open(path, "rb") as fh:
        got = fh.read()
    assert got == server.raw("trace/download", **prof)
    screenshot(page, "trace")
    copy_screenshot_to_docs("trace")


def test_switching_run_worker_and_span(page, server):
    page.goto(server.page_url(run=NPU_RUN, view="overview"))
    page.locator('[data-testid="view-overview"]').wait_for()
    # Worker.
    info = server.api("run", run=MULTI_WORKER_RUN)
    page.select_option('[data-testid="run-select"]', MULTI_WORKER_RUN)
    poll(lambda: hash_state(page).get("run") == MULTI_WORKER_RUN and hash_state(page).get("worker"))
    w1 = info["workers"][1]
    page.select_option('[data-testid="worker-select"]', w1["name"])
    st = poll(lambda: hash_state(page).get("worker") == w1["name"] and hash_state(page))
    assert st["span"] == w1["spans"][0]
    data = server.api("steps", run=MULTI_WORKER_RUN, worker=w1["name"], span=w1["spans"][0])
    avg = sum(s["total_us"] for s in data["steps"]) / len(data["steps"])
    assert poll(lambda: close(page.locator('[data-testid="fig-avg-step"]').get_attribute("data-value"), avg))
    # Span: pick a run/worker with several spans, if the fixtures have one.
    span = None
    for r in server.runs():
        if r["state"] != "ready":
            continue
        ri = server.api("run", run=r["name"])
        multi = [w for w in ri["workers"] if len(w["spans"]) > 1]
        if not multi:
            continue
        w = multi[0]
        span = w["spans"][1]
        if r["name"] == BAD_RUN:
            page.recorder.allowed_error_urls.append("/data/plugin/npu_profiler/")
        page.select_option('[data-testid="run-select"]', r["name"])
        poll(lambda: hash_state(page).get("run") == r["name"])
        page.select_option('[data-testid="worker-select"]', w["name"])
        page.select_option('[data-testid="span-select"]', span)
        assert poll(lambda: hash_state(page).get("span") == span)
        page.locator('[data-testid="main"] h1').wait_for()
        break
    if span is not None:
        # Back restores the previous selection.
        page.go_back()
        assert poll(lambda: hash_state(page).get("span") != span)


def test_deep_link_restores_the_view(page, server):
    prof = server.profile(MULTI_WORKER_RUN, worker_index=2)
    url = server.page_url(**prof, view="kernels", **{"kernels.group": "core", "kernels.top": "15"})
    page.goto(url)
    page.locator('[data-testid="view-kernels"]').wait_for()
    core = server.api("kernels", **prof, group_by="core", sort="-total_us", limit=200)
    wait_table_matches(page, "table-kernels", core["rows"], ["core", "calls", "total_us"], total=core["total_rows"])
    assert page.locator('[data-testid="worker-select"]').input_value() == prof["worker"]
    assert page.locator('[data-testid="kernels-topn"]').input_value() == "15"
    assert page.locator('[data-testid="kernels-group-core"]').get_attribute("aria-checked") == "true"
    assert page.locator('[data-testid="nav-kernels"]').get_attribute("aria-selected") == "true"
    # The link shown in the panel reproduces the same URL.
    link = page.locator('[data-testid="deep-link"]').get_attribute("href")
    assert dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link).fragment)) == hash_state(page)
    assert hash_state(page)["worker"] == prof["worker"]


def test_csv_export_matches_the_table(page, server):
    prof = open_view(page, server, "kernels")
    api = server.api("kernels", **prof, group_by="name", sort="-total_us", limit=200)
    keys = ["name", "calls", "total_us", "avg_us", "min_us", "max_us", "wait_us"]
    wait_table_matches(page, "table-kernels", api["rows"], keys, total=api["total_rows"])
    ui = table_rows(page, "table-kernels")
    with page.expect_download() as dl:
        page.locator('[data-testid="table-kernels-csv"]').click()
    with open(dl.value.path(), encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(io.StringIO(fh.read())))
    assert len(rows) == api["total_rows"]
    for u, c in zip(ui, rows):
        assert u["name"] == c["name"]
        for k in keys[1:]:
            assert close(u[k], c[k]), (k, u, c)
    # A client-side table (steps) exports too.
    open_view(page, server, "overview")
    data = server.api("steps", **prof)
    page.locator('[data-testid="table-steps"][aria-busy="false"]').wait_for()
    with page.expect_download() as dl:
        page.locator('[data-testid="table-steps-csv"]').click()
    with open(dl.value.path(), encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["step"]) for r in rows] == [s["step"] for s in data["steps"]]


def test_bad_input_shows_per_file_errors(page, server):
    run = {r["name"]: r for r in server.runs()}[BAD_RUN]
    assert run["errors"], "fixture bad_input should report file errors"
    # Some of its profiles cannot be read: their API answers are expected errors.
    page.recorder.allowed_error_urls.append("/data/plugin/npu_profiler/")
    page.goto(server.page_url(run=BAD_RUN))
    box = page.locator('[data-testid="run-errors"]')
    box.wait_for()
    items = box.locator(".file-error")
    assert items.count() == len(run["errors"])
    for i, err in enumerate(run["errors"]):
        assert items.nth(i).locator(".file-error-path").inner_text() == err["path"]
        assert items.nth(i).locator(".file-error-message").inner_text() == err["message"]
    screenshot(page, "bad_input")


def test_names_from_data_stay_text(page, server):
    """No data-derived string becomes markup: every table cell and tooltip is text."""
    open_view(page, server, "kernels")
    page.locator('[data-testid="table-kernels"][aria-busy="false"]').wait_for()
    assert page.evaluate("document.querySelectorAll('#npu-profiler-root img, #npu-profiler-root script').length") == 0
    # Hover the name pie to produce a tooltip and check it has no elements but text/spans.
    box = page.locator('[data-testid="chart-kernels-name"]').bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.28, box["y"] + box["height"] * 0.5)
    page.wait_for_timeout(400)
    tags = page.evaluate("""() => [...document.querySelectorAll('#npu-profiler-root [data-testid="chart-kernels-name"] *')]
        .map((e) => e.tagName.toLowerCase())""")
    assert set(tags) <= {"div", "span", "b", "canvas"}, tags


def test_dark_theme_follows_prefers_color_scheme(dark_page, server):
    page = dark_page
    open_view(page, server, "overview")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert bg != "rgb(245, 245, 245)"
    chart_summary(page, "chart-steps")
    screenshot(page, "overview_dark")
    copy_screenshot_to_docs("overview_dark")


def test_4k_and_narrow_layouts(browser, server):
    for width, height, name in ((3840, 2160, "overview_4k"), (1280, 720, None)):
        ctx, page = _new_page(browser, server, width=width, height=height)
        try:
            open_view(page, server, "overview")
            chart_summary(page, "chart-steps")
            # No horizontal overflow of the page itself.
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
            if name:
                fs = page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)")
                assert fs >= 17
                screenshot(page, name)
        finally:
            ctx.close()
        assert page.recorder.console_errors == []


def test_tensorboard_tab_opens_the_plugin(page, server):
    page.goto(f"{server.base}/#{'npu_profiler'}")
    frame = page.frame_locator("iframe")
    frame.locator('[data-testid="run-select"]').wait_for(timeout=30000)
    frame.locator('[data-testid="main"]').wait_for()
    poll(lambda: frame.locator('[data-testid="view-overview"]').count() > 0)
    assert frame.locator('[data-testid="view-overview"]').count() == 1
    screenshot(page, "tensorboard_tab")


def test_works_under_path_prefix(browser, chromium_path):
    tb = TensorBoard(FIXTURES, path_prefix="/x/y").start()
    try:
        tb.wait_loaded()
        from .conftest import Server
        srv = Server(tb)
        ctx, page = _new_page(browser, srv)
        try:
            prof = srv.profile(NPU_RUN)
            page.goto(srv.page_url(**prof, view="kernels"))
            api = srv.api("kernels", **prof, group_by="name", sort="-total_us", limit=200)
            wait_table_matches(page, "table-kernels", api["rows"], ["name", "total_us"], total=api["total_rows"])
            api_reqs = [u for u in page.recorder.requests if "/npu_profiler/kernels" in u]
            assert api_reqs and all(urllib.parse.urlsplit(u).path.startswith("/x/y/data/plugin/npu_profiler/")
                                    for u in api_reqs)
            assert page.recorder.foreign_requests() == []
            assert page.recorder.console_errors == []
        finally:
            ctx.close()
    finally:
        tb.stop()


def test_empty_logdir_explains_recognized_layouts(browser, chromium_path):
    with tempfile.TemporaryDirectory() as empty:
        tb = TensorBoard(empty).start()
        try:
            tb.wait_loaded()
            from .conftest import Server
            srv = Server(tb)
            ctx, page = _new_page(browser, srv)
            try:
                page.goto(srv.plugin_page)
                es = page.locator('[data-testid="empty-state"]')
                es.wait_for()
                text = es.inner_text()
                for pattern in ("*_ascend_pt", "*_ascend_ms", "PROF_*", "*.pt.trace.json[.gz]"):
                    assert pattern in text
                assert page.recorder.console_errors == []
            finally:
                ctx.close()
        finally:
            tb.stop()


def test_follows_tensorboard_dark_mode(browser, server):
    """Inside TensorBoard, the plugin follows TensorBoard's body.dark-mode class."""
    ctx, page = _new_page(browser, server, color_scheme="dark")
    try:
        page.goto(f"{server.base}/#npu_profiler")
        frame = page.frame_locator("iframe")
        frame.locator('[data-testid="view-overview"]').wait_for(timeout=30000)
        iframe = page.frames[1] if len(page.frames) > 1 else None
        assert iframe is not None
        assert poll(lambda: page.evaluate("document.body.classList.contains('dark-mode')"))
        assert poll(lambda: iframe.evaluate("document.documentElement.dataset.theme") == "dark")
        page.evaluate("document.body.classList.remove('dark-mode')")
        assert poll(lambda: iframe.evaluate("document.documentElement.dataset.theme") == "light")
        page.evaluate("document.body.classList.add('dark-mode')")
        assert poll(lambda: iframe.evaluate("document.documentElement.dataset.theme") == "dark")
        screenshot(page, "tensorboard_tab_dark")
    finally:
        ctx.close()
    assert page.recorder.foreign_requests() == []
    assert page.recorder.console_errors == []
