"""Browser test setup: a real `tensorboard --logdir fixtures` and Debian's chromium driven
by Playwright. Every page records its requests and console messages; after each test the
`page` fixture asserts that no request left the TensorBoard origin and that the console
has no errors.
"""
from __future__ import annotations

import os
import shutil
import time
import urllib.parse

import pytest

from tests.tb_server import FIXTURES, ROOT, TensorBoard, get_json

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-dev-shm-usage"]
SCREENSHOTS = os.path.join(ROOT, "test-artifacts", "screenshots")
PLUGIN = "npu_profiler"


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def chromium_path():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium); browser tests skipped")
    try:
        import playwright  # noqa: F401
    except ImportError:
        pytest.skip("the playwright python package is not installed")
    return CHROMIUM


class Server:
    """The running TensorBoard plus API helpers for expected values."""

    def __init__(self, tb: TensorBoard):
        self.tb = tb
        self.base = tb.base
        self.api_base = tb.api
        self.origin = urllib.parse.urlsplit(tb.base).netloc
        self.plugin_page = f"{tb.base}/data/plugin_entry.html?name={PLUGIN}"

    def api(self, route: str, **params):
        q = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        return get_json(f"{self.api_base}/{route}" + (f"?{q}" if q else ""))

    def raw(self, route: str, **params) -> bytes:
        import urllib.request
        q = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        with urllib.request.urlopen(f"{self.api_base}/{route}?{q}", timeout=60) as resp:
            return resp.read()

    def page_url(self, **hash_params) -> str:
        if not hash_params:
            return self.plugin_page
        return self.plugin_page + "#" + urllib.parse.urlencode(hash_params)

    def runs(self) -> list[dict]:
        return self.api("runs")["runs"]

    def profile(self, run: str, worker_index: int = 0, span_index: int = 0) -> dict:
        info = self.api("run", run=run)
        w = info["workers"][worker_index]
        return {"run": run, "worker": w["name"], "span": w["spans"][span_index]}


@pytest.fixture(scope="session")
def server(chromium_path):
    if not os.path.isdir(FIXTURES) or not any(
            os.path.isdir(os.path.join(FIXTURES, d)) for d in os.listdir(FIXTURES)):
        pytest.skip("fixtures/ has no runs")
    with TensorBoard(FIXTURES).loaded() as tb:
        yield Server(tb)


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


class Recorder:
    def __init__(self, origin: str):
        self.origin = origin
        self.requests: list[str] = []
        self.console_errors: list[str] = []
        self.allowed_error_urls: list[str] = []

    def on_console(self, msg):
        if msg.type != "error":
            return
        url = (msg.location or {}).get("url", "")
        # A top-level plugin page asks for /favicon.ico, which TensorBoard does not serve.
        if url.endswith("/favicon.ico"):
            return
        if any(a in url for a in self.allowed_error_urls):
            return
        self.console_errors.append(f"{msg.text} @ {url}")

    def foreign_requests(self) -> list[str]:
        bad = []
        for u in self.requests:
            parts = urllib.parse.urlsplit(u)
            if parts.scheme in ("data", "blob", "about"):
                continue
            if parts.netloc != self.origin:
                bad.append(u)
        return bad


def _new_page(browser, server, color_scheme="light", width=1280, height=900):
    ctx = browser.new_context(viewport={"width": width, "height": height},
                              color_scheme=color_scheme, accept_downloads=True)
    page = ctx.new_page()
    rec = Recorder(server.origin)
    page.on("request", lambda r: rec.requests.append(r.url))
    page.on("console", rec.on_console)
    page.on("pageerror", lambda e: rec.console_errors.append(f"page error: {e}"))
    page.set_default_timeout(20000)
    page.recorder = rec
    return ctx, page


@pytest.fixture
def page(browser, server):
    ctx, pg = _new_page(browser, server)
    yield pg
    rec = pg.recorder
    ctx.close()
    assert rec.foreign_requests() == [], "requests left the TensorBoard origin"
    assert rec.console_errors == [], "browser console has errors"


@pytest.fixture
def dark_page(browser, server):
    ctx, pg = _new_page(browser, server, color_scheme="dark")
    yield pg
    rec = pg.recorder
    ctx.close()
    assert rec.foreign_requests() == []
    assert rec.console_errors == []


def screenshot(page, name: str) -> str:
    os.makedirs(SCREENSHOTS, exist_ok=True)
    path = os.path.join(SCREENSHOTS, f"{name}.png")
    page.wait_for_timeout(600)  # let chart animations settle
    page.screenshot(path=path, full_page=False)
    return path


def copy_screenshot_to_docs(name: str) -> None:
    src = os.path.join(SCREENSHOTS, f"{name}.png")
    dst_dir = os.path.join(ROOT, "docs", "screenshots")
    if os.path.exists(src) and os.environ.get("UPDATE_DOC_SCREENSHOTS"):
        os.makedirs(dst_dir, exist_ok=True)
        shutil.copyfile(src, os.path.join(dst_dir, f"{name}.png"))


# ---- helpers shared by the browser suites ------------------------------------------------

ROWS_JS = """(tid) => {
  const rows = [...document.querySelectorAll(`[data-testid="${tid}"] .tr[data-index]`)];
  rows.sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index));
  return rows.map((r) => Object.fromEntries(
    [...r.querySelectorAll('.td')].map((c) => [c.dataset.key, c.dataset.value])));
}"""


def poll(fn, timeout=20.0, interval=0.2):
    """Calls fn until it returns a truthy value; returns the last value."""
    deadline = time.time() + timeout
    value = fn()
    while not value and time.time() < deadline:
        time.sleep(interval)
        value = fn()
    return value


def hash_state(page) -> dict:
    """The plugin page's URL state (its location hash) as a dict."""
    return dict(urllib.parse.parse_qsl(page.evaluate("location.hash").lstrip("#")))
