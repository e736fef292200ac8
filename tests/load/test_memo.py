"""Memoized answers (http/memo.py) through the real plugin and loader, in-process: an
answer asked again is the stored one and equal to a freshly computed one; when a span's
files change, the next answer is computed from the new files; the memo stays in its bounds.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import time

from tensorboard.plugins import base_plugin
from werkzeug.test import Client
from werkzeug.wrappers import Response

from tb_plugin.http.memo import ResponseMemo
from tb_plugin.plugin import NpuProfilerPlugin
from tests.tb_server import FIXTURES

RUN = "torch_npu_level1"


def _wait_ready(loader, run, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = loader.run_status(run)
        if st["state"] == "ready" and st.get("trace_state") != "loading":
            return st
        time.sleep(0.2)
    raise AssertionError(f"still loading: {loader.run_status(run)}")


def _get(apps, route, **params):
    resp = Client(apps[route]).get(f"/data/plugin/npu_profiler{route}", query_string=params)
    return resp.status_code, resp.get_data()


def test_answers_are_memoized_and_follow_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_PROFILER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NPU_PROFILER_INPROCESS", "1")
    logdir = tmp_path / "logs"
    shutil.copytree(os.path.join(FIXTURES, RUN), logdir / RUN)
    plugin = NpuProfilerPlugin(base_plugin.TBContext(logdir=str(logdir)))
    try:
        loader = plugin.loader
        loader.wait_scanned(30)
        _wait_ready(loader, RUN)
        apps = plugin.get_plugin_apps()
        _, run = _get(apps, "/run", run=RUN)
        worker = json.loads(run)["workers"][0]
        p = dict(run=RUN, worker=worker["name"], span=worker["spans"][0], group_by="name")

        status, first = _get(apps, "/kernels", **p)
        assert status == 200
        hits = plugin.memo.hits
        status, again = _get(apps, "/kernels", **p)
        assert status == 200 and again == first and plugin.memo.hits == hits + 1
        # The memoized body is what the handler computes (an unknown extra parameter makes
        # a different memo key, so this one is computed afresh).
        assert _get(apps, "/kernels", **p, fresh="1") == (200, first)

        # Change the span's kernels: half the rows go.
        span_root = next(st.span.root for st in loader.span_states(RUN)
                         if st.span.span == p["span"])
        path = os.path.join(span_root, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv")
        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
        kept = rows[: 1 + (len(rows) - 1) // 2]
        with open(path, "w", newline="") as fh:
            csv.writer(fh).writerows(kept)
        name_col = kept[0].index("Name")
        expected_names = {r[name_col] for r in kept[1:]}
        old_key = next(st.key for st in loader.span_states(RUN) if st.span.span == p["span"])
        loader.scan()
        assert next(st.key for st in loader.span_states(RUN)
                    if st.span.span == p["span"]) != old_key
        _wait_ready(loader, RUN)
        status, after = _get(apps, "/kernels", **p)
        assert status == 200 and after != first
        assert {r["name"] for r in json.loads(after)["rows"]} == expected_names
    finally:
        plugin.loader.stop()


def test_memo_stays_within_its_bounds():
    memo = ResponseMemo(max_bytes=10_000, max_body=3_000, max_entries=5)
    for i in range(50):
        memo.put(("r", i), Response(b"x" * (100 * (i % 40)), status=200))
    entries, size = memo.size()
    assert entries <= 5 and size <= 10_000
    memo.put(("big",), Response(b"y" * 3_001, status=200))      # larger than one body may be
    memo.put(("err",), Response(b"{}", status=503))              # only 200 answers are kept
    assert memo.get(("big",)) is None and memo.get(("err",)) is None
    memo.put(("last",), Response(b"z" * 10, status=200, content_type="text/csv"))
    hit = memo.get(("last",))
    assert hit.get_data() == b"z" * 10 and hit.content_type.startswith("text/csv")
