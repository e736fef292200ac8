"""The run list follows the logdir while the page is open: a real TensorBoard on a temporary
copy of fixture runs; runs and workers copied in (or removed) later show up in the open page
without a reload, and `/runs` is polled with back-off, one request at a time.
"""
from __future__ import annotations

import os
import shutil
import pytest

from tests.tb_server import FIXTURES, TensorBoard

from .conftest import Server, _new_page, hash_state, poll

pytestmark = pytest.mark.browser

GPU_FILES = ("gpu-host_8811.1735000009500000123.pt.trace.json", "worker1.1623200000000.pt.trace.json.gz")

OPTIONS_JS = """() => [...document.querySelectorAll('[data-testid="%s"] option')]
  .map((o) => o.value).filter((v) => v !== '')"""


def _options(page, testid: str) -> list[str]:
    return page.evaluate(OPTIONS_JS % testid)


RUNS_TIMING_JS = """() => performance.getEntriesByType('resource')
  .filter((e) => new URL(e.name).pathname.endsWith('/npu_profiler/runs'))
  .map((e) => [e.startTime / 1000, e.responseEnd / 1000])"""


def runs_requests(page) -> list[tuple[float, float]]:
    """(start, end) in seconds since the page opened of each of its `/runs` requests, from the
    browser's own resource timing."""
    return [tuple(x) for x in page.evaluate(RUNS_TIMING_JS)]


def most_in_flight(spans: list[tuple[float, float]]) -> int:
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    most = now = 0
    for _, d in events:
        now += d
        most = max(most, now)
    return most


def page_now(page) -> float:
    return page.evaluate("performance.now() / 1000")


@pytest.fixture
def live(browser, tmp_path):
    logdir = tmp_path / "logdir"
    (logdir / "gpu").mkdir(parents=True)
    shutil.copy(os.path.join(FIXTURES, "kineto_gpu", GPU_FILES[0]), logdir / "gpu")
    tb = TensorBoard(str(logdir)).start()
    try:
        tb.wait_loaded()
        srv = Server(tb)
        ctx, page = _new_page(browser, srv)
        try:
            yield srv, page, logdir
            assert page.recorder.foreign_requests() == []
            assert page.recorder.console_errors == []
        finally:
            ctx.close()
    finally:
        tb.stop()


def test_new_runs_and_workers_appear_without_reload(live):
    srv, page, logdir = live
    page.add_init_script("performance.setResourceTimingBufferSize(100000)")
    page.goto(srv.page_url())
    page.get_by_test_id("view-overview").wait_for(timeout=60000)
    assert _options(page, "run-select") == ["gpu"]
    first_worker = srv.profile("gpu")["worker"]
    assert _options(page, "worker-select") == [first_worker]
    # Anything that reloads the page drops this.
    page.evaluate("window.__sameDocument = true")

    # A new run.
    shutil.copytree(os.path.join(FIXTURES, "torch_npu_legacy_2023"), logdir / "npu")
    assert poll(lambda: "npu" in _options(page, "run-select"), timeout=90), _options(page, "run-select")
    srv.tb.wait_loaded()
    expected_runs = [r["name"] for r in srv.runs()]
    assert poll(lambda: _options(page, "run-select") == expected_runs, timeout=60)

    # A new worker of the run on screen: listed, and the view stays on the current one.
    shutil.copy(os.path.join(FIXTURES, "kineto_gpu", GPU_FILES[1]), logdir / "gpu")
    poll(lambda: len(srv.api("run", run="gpu")["workers"]) == 2, timeout=60)
    srv.tb.wait_loaded()
    workers = [w["name"] for w in srv.api("run", run="gpu")["workers"]]
    assert len(workers) == 2 and first_worker in workers
    assert poll(lambda: sorted(_options(page, "worker-select")) == sorted(workers), timeout=60), \
        _options(page, "worker-select")
    assert hash_state(page)["worker"] == first_worker
    assert page.get_by_test_id("view-overview").count() == 1

    assert page.evaluate("window.__sameDocument === true")
    assert most_in_flight(runs_requests(page)) == 1

    # Nothing changes any more: the polls space out (2 s, 4 s, 8 s, ... up to 30 s) instead of
    # coming every 2 s. Over 20 quiet seconds at most 4 are left (2 + 4 + 8 + 16 > 20 after
    # the last change; a fixed 2 s period would make 10).
    page.wait_for_timeout(3000)  # let the poll that saw the last change settle
    t0 = page_now(page)
    page.wait_for_timeout(20000)
    starts = [a for a, _ in runs_requests(page)]
    quiet = [t for t in starts if t >= t0]
    assert len(quiet) <= 4, starts
    gaps = [b - a for a, b in zip(starts, starts[1:]) if a >= t0 - 3]
    assert gaps and max(gaps) >= 6, starts
    assert most_in_flight(runs_requests(page)) == 1


def test_removed_run_is_reported_and_another_can_be_picked(live):
    srv, page, logdir = live
    shutil.copytree(os.path.join(FIXTURES, "torch_npu_legacy_2023"), logdir / "npu")
    poll(lambda: "npu" in [r["name"] for r in srv.runs()], timeout=60)
    srv.tb.wait_loaded()
    page.goto(srv.page_url(run="npu"))
    page.get_by_test_id("view-overview").wait_for(timeout=60000)
    assert hash_state(page)["run"] == "npu"

    shutil.rmtree(logdir / "npu")
    main = page.get_by_test_id("main")
    assert poll(lambda: "no longer in the logdir" in main.inner_text(), timeout=60), main.inner_text()
    assert _options(page, "run-select") == ["gpu"]
    # The rest of the UI keeps working: pick the remaining run.
    page.get_by_test_id("run-select").select_option("gpu")
    page.get_by_test_id("view-overview").wait_for(timeout=60000)
    assert hash_state(page)["run"] == "gpu"
