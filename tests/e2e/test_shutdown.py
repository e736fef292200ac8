"""TensorBoard exits promptly while our readers are busy, and leaves none of them behind.

A Ctrl+C in a terminal sends SIGINT to every process of the foreground group: TensorBoard
and its reader processes. Before the fix, the reader's KeyboardInterrupt became the result
of the task it was running, was raised again in the pool's thread in TensorBoard and killed
that thread; the pool then never told its readers to exit, and TensorBoard hung on exit.
A SIGINT to TensorBoard alone (`kill -INT`) made it wait for the running task to end.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil
import pytest

from tests.tb_server import TensorBoard

EXIT_S = 20  # far less than "forever", far more than an exit takes (well under 1 s here)


def _busy_tensorboard(logdir: str) -> tuple[TensorBoard, list[psutil.Process]]:
    """A TensorBoard whose reader is building the span's timeline right now, and the
    processes it has started."""
    tb = TensorBoard(logdir).start()
    deadline = time.time() + 120
    while time.time() < deadline:
        runs = tb.get("runs")
        if runs["runs"] and runs["runs"][0].get("trace_state") == "loading" \
                and runs["runs"][0]["state"] != "loading":
            break
        time.sleep(0.05)
    else:
        tb.stop()
        pytest.fail(f"the timeline never started loading: {runs}")
    children = psutil.Process(tb.proc.pid).children(recursive=True)
    # A reader: spawned, or forked from the fork server (its command line is the server's,
    # and its parent the server, not TensorBoard).
    assert any("spawn_main" in " ".join(c.cmdline()) or
               ("multiprocessing.forkserver" in " ".join(c.cmdline()) and c.ppid() != tb.proc.pid)
               for c in children), "no reader process is running"
    return tb, children


def _exits_and_leaves_nothing(tb: TensorBoard, children: list[psutil.Process]) -> float:
    t0 = time.time()
    try:
        tb.proc.wait(timeout=EXIT_S)
    except subprocess.TimeoutExpired:
        tb.stop()  # SIGTERM, then SIGKILL to the group
        pytest.fail(f"tensorboard did not exit within {EXIT_S} s: {tb.log()}")
    took = time.time() - t0
    _, alive = psutil.wait_procs(children, timeout=10)
    alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    try:
        assert not alive, [" ".join(p.cmdline())[:120] for p in alive]
    finally:
        for p in alive:
            p.kill()
        tb.stop()
    return took


def test_ctrl_c_while_a_reader_is_busy(large_logdir):
    """SIGINT to the whole process group, as a terminal's Ctrl+C."""
    tb, children = _busy_tensorboard(large_logdir)
    os.killpg(tb.proc.pid, signal.SIGINT)
    _exits_and_leaves_nothing(tb, children)
    assert "Traceback" not in tb.log(), tb.log()


def test_sigint_to_tensorboard_alone_ends_its_readers(large_logdir):
    """`kill -INT` of TensorBoard only: it ends its readers instead of waiting for them."""
    tb, children = _busy_tensorboard(large_logdir)
    os.kill(tb.proc.pid, signal.SIGINT)
    took = _exits_and_leaves_nothing(tb, children)
    assert "Traceback" not in tb.log(), tb.log()
    # The timeline build it interrupted takes seconds; an exit that waited for it would too.
    assert took < 2.0, took


def test_held_requests_do_not_delay_the_exit(large_logdir):
    """Requests held until the timeline is ready (`wait_ms`, up to 10 s) are cut short by
    the exit, not waited for."""
    import threading
    import urllib.error
    import urllib.parse
    import urllib.request

    tb, children = _busy_tensorboard(large_logdir)
    run = tb.get("runs")["runs"][0]["name"]
    info = tb.get("run", run=run)
    prof = {"run": run, "worker": info["workers"][0]["name"],
            "span": info["workers"][0]["spans"][0]}
    url = f"{tb.api}/trace/tracks?" + urllib.parse.urlencode({**prof, "wait_ms": 10000})

    def held():
        try:
            urllib.request.urlopen(url, timeout=30).read()
        except (urllib.error.URLError, ConnectionError, OSError):
            pass  # cut by the exit
    threads = [threading.Thread(target=held, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.5)  # the requests are held now (the timeline takes seconds)
    if not any(t.is_alive() for t in threads):
        tb.stop()
        pytest.skip("the timeline was ready before the requests could be held")
    os.kill(tb.proc.pid, signal.SIGINT)
    took = _exits_and_leaves_nothing(tb, children)
    assert took < 8, took  # not the 10 s the requests could have been held
