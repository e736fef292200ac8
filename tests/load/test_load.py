"""Short load test against a real TensorBoard: 20 clients for 10 s over every route of every
fixture run, plus a generated run that is still loading. No latency assertions (timing is
for `benchmarks/load_test.py`): no answer may be a 5xx, every route class must answer, the
server's memory must stay bounded, and a memoized answer must equal a fresh one."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.load import driver
from tests.tb_server import FIXTURES, ROOT, TensorBoard, get_json

pytestmark = pytest.mark.e2e

CLIENTS = int(os.environ.get("NPU_LOAD_CLIENTS", "20"))
SECONDS = float(os.environ.get("NPU_LOAD_SECONDS", "10"))
# The server tree (TensorBoard + 2 reader processes, ~0.5 GB at rest on the fixtures) may
# grow while the generated run loads, but not without bound.
MAX_TREE_MB = 2500
MAX_GROWTH_MB = 400


def _fetch(tb, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(tb.api + path, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_concurrent_clients_get_no_server_errors(tmp_path):
    logdir = tmp_path / "logs"
    logdir.mkdir()
    for name in sorted(os.listdir(FIXTURES)):
        if os.path.isdir(os.path.join(FIXTURES, name)) and not name.startswith(("_", ".")):
            shutil.copytree(os.path.join(FIXTURES, name), logdir / name)
    subprocess.run([sys.executable, os.path.join(ROOT, "fixtures", "generate.py"), "--large",
                    "--trace-mb", "40", "--out", str(logdir / "large")], check=True,
                   stdout=subprocess.DEVNULL)
    tb = TensorBoard(str(logdir)).start()
    try:
        _wait_fixture_runs(tb)
        pool = driver.build_requests("127.0.0.1", tb.port, {"large"})
        res = driver.hammer("127.0.0.1", tb.port, pool, CLIENTS, SECONDS,
                            server_pid=tb.proc.pid)
        assert res.count_5xx() == 0, res.errors[:10]
        classes = {r.route_class for r in pool}
        answered = {c for c, st in res.statuses.items() if st.get(200)}
        assert {c for c in classes if not c.startswith("loading:")} <= answered, res.statuses
        rss = [m for _, m in res.rss_mb]
        assert max(rss) < MAX_TREE_MB, rss
        assert rss[-1] - rss[0] < MAX_GROWTH_MB, rss
        # Memoized answers are the answers: each equals the one computed for the same
        # request with an extra (ignored) parameter, which is never memoized together.
        rng = random.Random(7)
        sample = [r for r in pool if not r.route_class.startswith("loading:")]
        for req in rng.sample(sample, min(12, len(sample))):
            if req.path.startswith("/runs"):
                continue  # live progress, never memoized
            status, memoized = _fetch(tb, req.path)
            sep = "&" if "?" in req.path else "?"
            status2, fresh = _fetch(tb, f"{req.path}{sep}fresh=1")
            assert (status, memoized) == (status2, fresh), req.path
    finally:
        tb.stop()


def _wait_fixture_runs(tb, timeout: float = 600) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        data = get_json(f"{tb.api}/runs")
        others = [r for r in data["runs"] if r["name"] != "large"]
        if data.get("scanned") and others and all(
                r["state"] != "loading" and r.get("trace_state") != "loading" for r in others):
            return
        time.sleep(0.5)
    raise AssertionError("fixture runs still loading")
