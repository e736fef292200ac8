"""Held "still loading" answers (`wait_ms`, http/holding.py) through a real TensorBoard: a
request for a profile or a timeline still being read is answered when it is ready, instead
of with a 503 the client must poll again."""
from __future__ import annotations

import time

import pytest

from tests.tb_server import TensorBoard

WAIT_MS = 10_000


def _profile(tb: TensorBoard) -> dict:
    runs = tb.get("runs")["runs"]
    assert len(runs) == 1, runs
    info = tb.get("run", run=runs[0]["name"])
    worker = info["workers"][0]
    return {"run": runs[0]["name"], "worker": worker["name"], "span": worker["spans"][0]}


def test_held_requests_are_answered_when_the_profile_and_its_timeline_are_ready(large_logdir):
    tb = TensorBoard(large_logdir).start()
    try:
        deadline = time.time() + 120
        while not tb.get("runs")["runs"]:
            assert time.time() < deadline, "the span was never found"
            time.sleep(0.1)
        # The run list, held since the answer the client has: it comes back when a stage
        # of the span has ended (the span was still loading when it was asked).
        first = tb.get("runs")
        if first["runs"][0]["state"] == "loading":
            t0 = time.time()
            news = tb.get("runs", since=first["generation"], wait_ms=WAIT_MS)
            assert time.time() - t0 < WAIT_MS / 1000
            assert news["generation"] > first["generation"], (first, news)
        prof = _profile(tb)

        # The views: a held request returns the steps, whatever the state it was asked in.
        code, body = tb.status("steps", wait_ms=WAIT_MS, **prof)
        while code == 503:  # a loading answer whose progress moved is let through
            assert body["state"] == "loading" and time.time() < deadline, body
            code, body = tb.status("steps", wait_ms=WAIT_MS, **prof)
        assert code == 200, body
        assert body["steps"], body

        # The timeline, still being indexed right after the views: an answer at once says
        # so; the same request held is answered with the tracks as soon as they exist.
        code, body = tb.status("trace/tracks", **prof)
        if code == 200:
            pytest.skip("the timeline was indexed before it could be asked for")
        assert code == 503 and body["state"] == "loading", body
        t0 = time.time()
        code, body = tb.status("trace/tracks", wait_ms=WAIT_MS, **prof)
        held = time.time() - t0
        assert code == 200, body
        assert body["tracks"], body
        # Answered on the change, not at the end of the wait.
        assert held < WAIT_MS / 1000, held
        runs = tb.get("runs")["runs"]
        assert runs[0]["state"] == "ready"

        # Once everything is loaded (the advice stage too: `trace_state`), rescans that find
        # nothing new change nothing: a held /runs answers at the end of its wait, with the
        # generation it was asked with.
        tb.wait_loaded()
        quiet = tb.get("runs")
        t0 = time.time()
        same = tb.get("runs", since=quiet["generation"], wait_ms=1000)
        assert time.time() - t0 >= 1.0
        assert same["generation"] == quiet["generation"]
    finally:
        tb.stop()
    assert "Traceback" not in tb.log(), tb.log()


def test_wait_ms_out_of_range_is_a_400(large_logdir):
    tb = TensorBoard(large_logdir).start()
    try:
        for value in ("-1", str(WAIT_MS + 1), "soon", "1e3"):
            code, body = tb.status("steps", run=".", wait_ms=value)
            assert code == 400, (value, body)
            assert "wait_ms" in body["error"], (value, body)
    finally:
        tb.stop()
