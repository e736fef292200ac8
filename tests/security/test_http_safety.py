"""The plugin exposed to any client, against a real `tensorboard` over a hostile logdir
(tests/security/conftest.py): nothing outside the logdir is served, names that are not
UTF-8 never break a route, regular expressions are time-limited, numbers range-checked,
only GET and HEAD are answered, answers are bounded, CSV cells cannot run as formulas."""
from __future__ import annotations

import csv
import http.client
import io
import json
import threading
import time
import urllib.parse

import pytest

from tb_plugin.plugin import ROUTES
from tests.security.conftest import (BAD_RUN_NAME, BAD_WORKER_NAME, FORMULA_KERNELS,
                                     FORMULA_OPS, LONG_NAME, SECRET, SECRET_OP, WIDE_OPS)
from tests.tb_server import PLUGIN

pytestmark = pytest.mark.e2e

API_PATH = f"/data/plugin/{PLUGIN}"
LEAKS = (SECRET, SECRET_OP)


def request(tb, path: str, method: str = "GET", timeout: float = 60):
    """(status, headers, body bytes) of a raw request: `path` is sent exactly as given."""
    conn = http.client.HTTPConnection("127.0.0.1", tb.port, timeout=timeout)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def api(tb, route: str, query: str = "", method: str = "GET", timeout: float = 60):
    return request(tb, f"{API_PATH}{route}" + (f"?{query}" if query else ""), method, timeout)


def q(**params) -> str:
    return urllib.parse.urlencode(params)


def assert_no_leak(body: bytes, where: str):
    text = body.decode("utf-8", "replace")
    for secret in LEAKS:
        assert secret not in text, f"{where} served data from outside the logdir"


# ---- symlinks out of the logdir ------------------------------------------------------------

def test_runs_name_the_symlinks_that_were_not_followed(tb):
    runs = {r["name"]: r for r in tb.get("runs")["runs"]}
    for name, path in (("extrun", "extrun"), ("kinlink", "kinlink/w.1.pt.trace.json")):
        assert runs[name]["state"] == "error"
        assert [e["path"] for e in runs[name]["errors"]] == [path]
        assert "outside the logdir" in runs[name]["errors"][0]["message"]
        assert tb.get("run", run=name)["workers"] == []
    torch_errors = [e for e in runs["torch"]["errors"] if e["path"].endswith("trace_view.json")]
    assert len(torch_errors) == 1 and "outside the logdir" in torch_errors[0]["message"]
    assert runs["torch"]["state"] == "ready"  # the CSV views still load


def test_trace_download_never_serves_a_file_outside_the_logdir(tb):
    status, _, body = api(tb, "/trace/download", q(run="torch"))
    assert status == 404
    assert_no_leak(body, "trace/download")
    # The torch run's views come from its CSVs; the linked trace is not read into any view.
    summary = tb.get("summary", run="torch")
    assert summary["step_count"] > 0
    assert "trace" not in tb.get("run", run="torch")["views"]


# ---- names that are not UTF-8 ---------------------------------------------------------------

def test_names_that_are_not_utf8_are_escaped_and_addressable(tb):
    status, _, body = api(tb, "/runs")
    assert status == 200
    runs = {r["name"]: r for r in json.loads(body.decode("utf-8"))["runs"]}  # strict UTF-8
    bad = runs[BAD_RUN_NAME]
    assert bad["state"] == "ready"
    # The unreadable CSV is reported under its escaped path.
    assert [e["path"] for e in bad["errors"] if e["path"].endswith("operator_details.csv")] == \
        [f"{BAD_RUN_NAME}/node01\\xff_23456_20240601000000000_ascend_pt/"
         "ASCEND_PROFILER_OUTPUT/operator_details.csv"]
    status, _, body = api(tb, "/run", q(run=BAD_RUN_NAME))
    assert status == 200
    info = json.loads(body.decode("utf-8"))
    assert [w["name"] for w in info["workers"]] == [BAD_WORKER_NAME]
    assert {"overview", "kernels", "memory"} <= set(info["views"])
    # The same data as the same span under a UTF-8 name (the fixture it was copied from).
    kernels = tb.get("kernels", run=BAD_RUN_NAME, worker=BAD_WORKER_NAME, limit=5)
    reference = tb.get("kernels", run="torch", limit=5)
    assert kernels["total_rows"] == reference["total_rows"] > 0
    assert kernels["rows"] == reference["rows"]


# ---- regular expressions ----------------------------------------------------------------------

def _timed(fn):
    t0 = time.monotonic()
    out = fn()
    return out, time.monotonic() - t0


def test_catastrophic_regex_is_stopped_and_never_blocks_other_requests(tb):
    slow = {}

    def search():
        slow["answer"], slow["seconds"] = _timed(lambda: api(
            tb, "/trace/search", q(run="longname", regex=1, q="(a|a)*$"), timeout=30))

    worker = threading.Thread(target=search)
    worker.start()
    time.sleep(0.2)
    other = []
    while worker.is_alive() and len(other) < 20:
        (status, _, _), seconds = _timed(lambda: api(tb, "/runs", timeout=30))
        other.append((status, seconds))
    worker.join(60)
    status, _, body = slow["answer"]
    assert status == 400, body
    assert "took more than" in json.loads(body)["error"]
    assert slow["seconds"] < 10
    assert other, "the search ended before another request could be made"
    assert all(s == 200 for s, _ in other)
    assert max(sec for _, sec in other) < 2.0
    # Asked again, it is refused at once (the outcome is remembered).
    (status, _, _), seconds = _timed(lambda: api(
        tb, "/trace/search", q(run="longname", regex=1, q="(a|a)*$")))
    assert status == 400 and seconds < 1.0


def test_regex_search_still_finds_names(tb):
    # (a+)+$ is the classic catastrophic pattern for `re`; it must answer, and right.
    for pattern in ("(a+)+$", "^a{30}!$", "a+!"):
        (status, _, body), seconds = _timed(lambda: api(
            tb, "/trace/search", q(run="longname", regex=1, q=pattern), timeout=30))
        assert status == 200 and seconds < 5
        names = {h["name"] for h in json.loads(body)["hits"]}
        assert names == (set() if pattern == "(a+)+$" else {LONG_NAME})


@pytest.mark.parametrize("pattern", ["a{99999999999}", "a{4294967295}", "(a{1000}){1000}",
                                     "(((x{100}){100}){100})", "(unclosed", "[z-a]"])
def test_bad_or_huge_regex_is_400(tb, pattern):
    (status, _, body), seconds = _timed(lambda: api(
        tb, "/trace/search", q(run="longname", regex=1, q=pattern)))
    assert status == 400, body
    assert json.loads(body)["error"].startswith("parameter 'q'")
    assert seconds < 5


# ---- numbers ----------------------------------------------------------------------------

PROFILE = {"run": "plain"}
NUMERIC = [
    ("/trace/search", {"q": "a"}, ["min_dur_us", "max_dur_us", "after_us", "offset", "limit",
                                   "track"]),
    ("/trace/viewport", {"start_us": "0", "end_us": "1000", "width_px": "100"},
     ["start_us", "end_us", "width_px"]),
    ("/trace/summary", {"start_us": "0", "end_us": "1000"}, ["start_us", "end_us", "limit"]),
    ("/trace/counters", {}, ["start_us", "end_us", "width_px"]),
    ("/trace/slice", {"id": "0"}, ["id"]),
    ("/kernels", {}, ["step", "limit", "offset"]),
    ("/operators", {}, ["limit", "offset"]),
    ("/memory", {}, ["max_points"]),
    ("/memory/allocations", {}, ["start_us", "end_us", "limit", "offset"]),
]
HUGE = ["1e308", "-1e308", "1e400", "inf", "-inf", "nan", "99999999999999999999999",
        "-99999999999999999999999", "0x10", "1" * 5000]


@pytest.mark.parametrize("route, base, names", NUMERIC, ids=[r for r, _, _ in NUMERIC])
def test_every_numeric_parameter_is_range_checked(tb, route, base, names):
    for name in names:
        for value in HUGE:
            status, _, body = api(tb, route, q(**{**PROFILE, **base, name: value}))
            assert status == 400, (route, name, value, body[:200])
            message = json.loads(body)["error"]
            assert f"'{name}'" in message, message
            if value != "1" * 5000:  # too long for any parameter: says so instead
                assert "between" in message or "must be" in message, message


def test_tracks_ids_are_range_checked(tb):
    for value in ("1,99999999999999999999", "-1", "x", ",".join(["1"] * 5000)):
        status, _, body = api(tb, "/trace/viewport",
                              q(run="plain", start_us=0, end_us=1000, width_px=100, tracks=value))
        assert status == 400 and "'tracks'" in json.loads(body)["error"], (value, body)


def test_no_route_fails_on_any_huge_number(tb):
    names = sorted({n for _, _, ns in NUMERIC for n in ns} | {"span_index", "rank_offset",
                                                              "rank_limit"})
    for route in ROUTES:
        for value in ("1e308", "99999999999999999999999", "nan"):
            query = q(run="plain", **{n: value for n in names}, q="a")
            status, _, body = api(tb, route, query)
            assert status < 500, (route, value, body[:300])


# ---- methods ----------------------------------------------------------------------------

METHODS = ["POST", "PUT", "DELETE", "PATCH", "TRACE", "PROPFIND", "OPTIONS"]


@pytest.mark.parametrize("path", [f"{API_PATH}/index.js", f"{API_PATH}/runs",
                                  f"{API_PATH}/run?run=plain", f"{API_PATH}/kernels?run=plain",
                                  f"{API_PATH}/trace/download?run=plain"])
def test_only_get_and_head_are_answered(tb, path):
    get_status, get_headers, get_body = request(tb, path)
    assert get_status == 200 and get_body
    for method in METHODS:
        status, headers, body = request(tb, path, method)
        assert status == 405, (method, path, status)
        assert headers.get("Allow") == "GET, HEAD"
    status, headers, body = request(tb, path, "HEAD")
    assert status == 200 and body == b""
    assert headers["Content-Type"] == get_headers["Content-Type"]


# ---- path traversal, in every route --------------------------------------------------------

# Raw query values (sent as they are, so the server does the decoding).
TRAVERSAL = ["..", "..%2F..", "%2e%2e", "%2e%2e%2f%2e%2e%2foutside%2fsecret.txt",
             "%252e%252e%252f", "plain%2F..%2F..%2Foutside", "..%5C..%5Coutside",
             "plain%00", "%00", "C:%5CWindows%5Cwin.ini", "%2Fetc%2Fpasswd",
             "extrun%2Fhost.1.pt.trace.json", "kinlink%2Fw.1.pt.trace.json"]
# Names of the runs whose symlinks were not followed: they exist (with their error) but
# must not lead to the data behind them.
LINKED = ["extrun", "kinlink"]
NAMING = ["run", "worker", "span", "base_run", "base_worker", "base_span", "exp_run",
          "exp_worker", "exp_span", "name", "input_shapes", "file", "path"]


def _valid(tb) -> dict:
    plain = tb.get("run", run="plain")["workers"][0]
    other = tb.get("run", run="longname")["workers"][0]
    return {"run": "plain", "worker": plain["name"], "span": plain["spans"][0],
            "base_run": "plain", "base_worker": plain["name"], "base_span": plain["spans"][0],
            "exp_run": "longname", "exp_worker": other["name"], "exp_span": other["spans"][0],
            "name": "aten::mm", "start_us": "0", "end_us": "100000", "width_px": "100",
            "id": "0", "q": "a"}


def test_path_traversal_in_every_route_and_parameter(tb, hostile):
    valid = _valid(tb)
    failures = []
    for route in sorted(ROUTES):
        base_status, _, base_body = api(tb, route, q(**valid))
        for param in NAMING:
            for raw in TRAVERSAL + LINKED:
                others = q(**{k: v for k, v in valid.items() if k != param})
                status, _, body = api(tb, route, f"{others}&{param}={raw}")
                assert_no_leak(body, f"{route}?{param}={raw}")
                assert hostile[1].encode() not in body or param in ("name", "input_shapes")
                if status >= 500:
                    failures.append((route, param, raw, status, body[:200]))
                # A parameter the route reads must refuse the value; one it ignores changes
                # nothing.
                elif param not in ("name", "input_shapes") and raw not in LINKED \
                        and status not in (400, 404) and (status, body) != (base_status, base_body):
                    failures.append((route, param, raw, status, body[:200]))
    assert failures == []


@pytest.mark.parametrize("path", [
    "/assets/../../plugin.py", "/assets/..%2f..%2fplugin.py", "/assets/%2e%2e/%2e%2e/plugin.py",
    "/assets/..%5c..%5cplugin.py", "/index.js%00.py", "/assets/%2fetc%2fpasswd",
    "/../../../../etc/passwd", "/assets/....//....//plugin.py"])
def test_static_files_stay_inside_static(tb, path):
    status, _, body = request(tb, API_PATH + path)
    assert status in (400, 404), (path, status)
    assert b"NpuProfilerPlugin" not in body and b"root:" not in body


# ---- response sizes -----------------------------------------------------------------------

@pytest.mark.parametrize("route, params", [
    ("/kernels", {"limit": "1000000"}), ("/operators", {"limit": "100001"}),
    ("/memory/allocations", {"limit": "99999999"}), ("/trace/search", {"q": "a", "limit": "5000"}),
    ("/trace/viewport", {"start_us": "0", "end_us": "1", "width_px": "100000"}),
    ("/trace/counters", {"width_px": "10000000"}), ("/trace/summary",
                                                   {"start_us": "0", "end_us": "1", "limit": "1e6"}),
    ("/memory", {"max_points": "100000000"}),
])
def test_huge_pages_are_refused(tb, route, params):
    status, _, body = api(tb, route, q(run="plain", **params))
    assert status in (400, 413), (route, status, body[:200])


def test_table_pages_are_capped(tb):
    # The largest accepted limit still gives one bounded page.
    status, _, body = api(tb, "/operators", q(run="wide", limit=100000))
    assert status == 200
    page = json.loads(body)
    assert page["total_rows"] == WIDE_OPS
    assert len(page["rows"]) == 10000 < WIDE_OPS


# ---- CSV exports --------------------------------------------------------------------------

def _csv_rows(tb, route, **params) -> list[dict]:
    status, headers, body = api(tb, route, q(run="plain", format="csv", **params))
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(body.decode("utf-8"))))


def _defused(text: str) -> str:
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def test_csv_exports_neutralize_formulas(tb):
    ops = _csv_rows(tb, "/operators")
    assert sorted(r["name"] for r in ops) == sorted(_defused(n) for n in FORMULA_OPS)
    by_name = {r["name"]: r for r in ops}
    # Numbers stay numbers: every operator ran 50 µs once (tests/security/traces.py).
    assert {float(by_name[_defused(n)]["host_total_us"]) for n in FORMULA_OPS} == {50.0}
    assert {by_name[_defused(n)]["calls"] for n in FORMULA_OPS} == {"1"}
    kernels = _csv_rows(tb, "/kernels")
    assert sorted(r["name"] for r in kernels) == sorted(_defused(n) for n in FORMULA_KERNELS)
    assert {r["total_us"] for r in kernels} == {"30.0"}
    # The JSON answer keeps the names as they are.
    names = {r["name"] for r in tb.get("operators", run="plain")["rows"]}
    assert names == set(FORMULA_OPS)
