"""A real TensorBoard pointed at `s3://bucket/prefix` on a real S3-compatible server
(moto's standalone server on loopback, IAM authentication on), next to a real TensorBoard
on a local copy of the same runs: every route answers the same, objects are fetched once,
a run uploaded later appears, a wrong credential or a missing backend is a clear error in
/runs, and nothing outside the URL's prefix is listed."""
from __future__ import annotations

import csv
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.remote.s3_server import S3Server
from tests.tb_server import FIXTURES, TensorBoard, get_json

pytestmark = pytest.mark.e2e

BUCKET = "profiles"
PREFIX = "team/logs"
RUNS = ["torch_npu_level1", "kineto_gpu", "msprof_paddle"]
LATE_RUN = "mindspore_2x"  # uploaded while TensorBoard runs


@pytest.fixture(scope="module")
def s3():
    server = S3Server().start()
    try:
        server.make_bucket(BUCKET)
        for run in RUNS:
            server.upload(os.path.join(FIXTURES, run), BUCKET, f"{PREFIX}/{run}")
        # Decoys: a sibling prefix sharing the stem, and another bucket.
        server.upload(os.path.join(FIXTURES, "kineto_gpu"), BUCKET, "team/logs-other/leak")
        server.make_bucket("other-team")
        server.upload(os.path.join(FIXTURES, "kineto_gpu"), "other-team", f"{PREFIX}/leak")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def local_tb(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("local-copy")
    for run in RUNS + [LATE_RUN]:
        shutil.copytree(os.path.join(FIXTURES, run), logdir / run)
    with TensorBoard(str(logdir)).loaded() as server:
        yield server


@pytest.fixture(scope="module")
def remote_tb(s3):
    with TensorBoard(f"s3://{BUCKET}/{PREFIX}", extra_env=s3.env()).loaded() as server:
        yield server


def _mirror_tree(tb: TensorBoard) -> str:
    """The local mirror of the remote logdir inside that TensorBoard's cache directory."""
    found = []
    for d, dirs, _ in os.walk(tb.cache_dir):
        if os.path.basename(d) == "remote":
            found += [os.path.join(d, m, "tree") for m in dirs]
            dirs[:] = []
    assert len(found) == 1, found
    return found[0]


def _upload_late_run(s3, remote_tb, timeout=180):
    if not s3.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/{LATE_RUN}/",
                                       MaxKeys=1).get("KeyCount"):
        s3.upload(os.path.join(FIXTURES, LATE_RUN), BUCKET, f"{PREFIX}/{LATE_RUN}")
    deadline = time.time() + timeout
    ready_since = None
    while time.time() < deadline:
        runs = {r["name"]: r for r in remote_tb.get("runs")["runs"]}
        if LATE_RUN in runs and runs[LATE_RUN]["state"] == "ready" \
                and runs[LATE_RUN]["trace_state"] == "ready":
            # A scan during the upload may have listed part of the run and loaded that;
            # the next scans list the rest and load it again. Ready through three scans
            # (NPU_PROFILER_POLL_SECONDS=2) after the upload: the whole run.
            ready_since = ready_since or time.time()
            if time.time() - ready_since > 6.5:
                return runs[LATE_RUN]
        else:
            ready_since = None
        time.sleep(0.5)
    raise AssertionError(f"{LATE_RUN} did not appear: {remote_tb.get('runs')}")


def _strip_volatile(doc):
    """Timings of the load itself differ between two TensorBoards; the numbers of the
    profile must not."""
    if isinstance(doc, dict):
        return {k: _strip_volatile(v) for k, v in doc.items()
                if k not in ("load_seconds", "trace_seconds")}
    if isinstance(doc, list):
        return [_strip_volatile(v) for v in doc]
    return doc


def _requests(tb: TensorBoard, run: str):
    """(route, params) of every route of one run: run-level ones, each profile's, and a
    comparison of the run's first two profiles."""
    out = [("run", {"run": run}), ("advisor", {"run": run}), ("distributed", {"run": run})]
    profiles = []
    for w in tb.get("run", run=run)["workers"]:
        for span in w["spans"]:
            profiles.append(dict(run=run, worker=w["name"], span=span))
    for p in profiles:
        out += [(route, {**p, **extra}) for route, extra in [
            ("summary", {}), ("steps", {}), ("kernels", {"group_by": "name"}),
            ("kernels", {"group_by": "type"}), ("kernels", {"group_by": "core"}),
            ("operators", {"group_by": "name"}), ("operators", {"group_by": "name_shape"}),
            ("memory", {}), ("memory/allocations", {}), ("trace/tracks", {}),
            ("trace/counters", {}), ("trace/search", {"q": "a", "limit": 50}),
            ("advisor", {})]]
    if len(profiles) >= 2:
        pair = {**{f"base_{k}": v for k, v in profiles[0].items()},
                **{f"exp_{k}": v for k, v in profiles[1].items()}}
        out += [("compare/steps", pair), ("compare/kernels", {**pair, "group_by": "name"}),
                ("compare/operators", {**pair, "group_by": "name"})]
    return out


def test_runs_are_those_under_the_prefix_and_load_like_the_local_copy(remote_tb, local_tb):
    remote = {r["name"]: r for r in remote_tb.get("runs")["runs"]}
    local = {r["name"]: r for r in local_tb.get("runs")["runs"]}
    assert set(RUNS) <= set(remote) <= set(RUNS) | {LATE_RUN}  # no decoy, no error run
    for run in RUNS:
        assert remote[run]["state"] == "ready" and remote[run]["errors"] == [], remote[run]
        assert remote[run] == local[run]


def test_every_route_answers_the_same_numbers_as_the_local_copy(s3, remote_tb, local_tb):
    _upload_late_run(s3, remote_tb)
    ok = 0
    for run in RUNS + [LATE_RUN]:
        for route, params in _requests(local_tb, run):
            lcode, lbody = local_tb.status(route, **params)
            rcode, rbody = remote_tb.status(route, **params)
            assert (rcode, _strip_volatile(rbody)) == (lcode, _strip_volatile(lbody)), \
                (route, params)
            ok += lcode == 200
    assert ok >= 60  # the comparison is of real answers, not of two identical errors


def test_trace_download_is_the_uploaded_object(remote_tb):
    run = "torch_npu_level1"
    w = remote_tb.get("run", run=run)["workers"][0]
    span = w["spans"][0]
    url = f"{remote_tb.api}/trace/download?run={run}&worker={w['name']}&span={span}"
    with urllib.request.urlopen(url, timeout=60) as resp:
        body = resp.read()
    span_dir = [d for d in os.listdir(os.path.join(FIXTURES, run)) if span in d][0]
    with open(os.path.join(FIXTURES, run, span_dir, "ASCEND_PROFILER_OUTPUT",
                           "trace_view.json"), "rb") as fh:
        assert body == fh.read()


def test_objects_are_fetched_once_and_polling_downloads_nothing(remote_tb):
    tree = _mirror_tree(remote_tb)
    before = {}
    for run in RUNS:
        for d, _, files in os.walk(os.path.join(tree, run)):
            for f in files:
                full = os.path.join(d, f)
                rel = os.path.relpath(full, tree)
                with open(full, "rb") as fh, \
                        open(os.path.join(FIXTURES, rel), "rb") as orig:
                    assert fh.read() == orig.read(), rel  # every file a reader used is there
                before[rel] = os.stat(full).st_ino
    assert len(before) >= 25
    time.sleep(5)  # two more scans (NPU_PROFILER_POLL_SECONDS=2)
    after = {rel: os.stat(os.path.join(tree, rel)).st_ino for rel in before}
    assert after == before


def test_tensorboard_itself_keeps_answering(remote_tb):
    listing = get_json(f"{remote_tb.base}/data/plugins_listing")
    assert listing["npu_profiler"]["enabled"] is True
    get_json(f"{remote_tb.base}/data/runs")  # TensorBoard's own run list, from its reader


def _wait_error_run(tb: TensorBoard, timeout: float) -> tuple[dict, float]:
    started = time.time()
    while time.time() - started < timeout:
        data = tb.get("runs")
        if data["runs"]:
            return data, time.time() - started
        time.sleep(0.2)
    raise AssertionError(f"no run-level error after {timeout}s: {tb.get('runs')}")


def test_wrong_credential_is_a_clear_error_in_runs_quickly(s3):
    url = f"s3://{BUCKET}/{PREFIX}"
    tb = TensorBoard(url, extra_env=s3.env(secret="not-the-secret")).start()
    try:
        data, waited = _wait_error_run(tb, 30)
        assert waited < 15
        (run,) = data["runs"]
        assert run["name"] == url and run["state"] == "error"
        (err,) = run["errors"]
        assert err["path"] == url
        assert "access denied" in err["message"]
        assert "AWS_SECRET_ACCESS_KEY" in err["message"]
        listing = get_json(f"{tb.base}/data/plugins_listing")
        assert "npu_profiler" in listing
    finally:
        tb.stop()


def test_a_missing_backend_names_its_extra(tmp_path):
    if importlib.util.find_spec("gcsfs") is None:
        url, expected = "gs://bucket/runs", "pip install 'tensorboard-plugin-npu-profiler[gcs]'"
    else:  # gcsfs happens to be installed: a protocol no backend has
        url, expected = "nosuchproto://bucket/runs", "no storage backend for nosuchproto://"
    # The plugin's own logdir (NPU_PROFILER_LOGDIR): TensorBoard's stays local.
    tb = TensorBoard(str(tmp_path), extra_env={"NPU_PROFILER_LOGDIR": url}).start()
    try:
        data, _ = _wait_error_run(tb, 30)
        (run,) = data["runs"]
        assert run["name"] == url and run["state"] == "error"
        assert expected in run["errors"][0]["message"]
    finally:
        tb.stop()


def _cli(logdir, *args, env):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, **env, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "tb_plugin.cli", *args, logdir],
                          capture_output=True, text=True, env=env, timeout=600, cwd=root)


def test_cli_summary_of_the_bucket_is_that_of_the_local_copy(s3, tmp_path):
    url = f"s3://{BUCKET}/{PREFIX}"
    remote = _cli(url, "summary", "--format", "json", "--run", "torch_npu_level1",
                  env={**s3.env(), "NPU_PROFILER_CACHE_DIR": str(tmp_path / "c1")})
    assert remote.returncode == 0, remote.stderr
    copy = tmp_path / "local"
    for run in RUNS:
        shutil.copytree(os.path.join(FIXTURES, run), copy / run)
    local = _cli(str(copy), "summary", "--format", "json", "--run",
                 "torch_npu_level1", env={"NPU_PROFILER_CACHE_DIR": str(tmp_path / "c2")})
    assert local.returncode == 0, local.stderr
    doc = json.loads(remote.stdout)
    assert doc == json.loads(local.stdout)
    assert len(doc["runs"][0]["profiles"]) == 2
    bad = _cli(url, "summary", env={**s3.env(secret="wrong"),
                                    "NPU_PROFILER_CACHE_DIR": str(tmp_path / "c3")})
    assert f"Run {url}: 0 profiles" in bad.stdout and "access denied" in bad.stdout


def _wait_run(tb: TensorBoard, name: str, state: str, timeout: float) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        runs = {r["name"]: r for r in tb.get("runs")["runs"]}
        if name in runs and runs[name]["state"] == state:
            return runs[name]
        time.sleep(0.3)
    raise AssertionError(f"{name} not {state} after {timeout}s: {tb.get('runs')}")


def test_an_object_that_cannot_be_read_is_an_error_until_it_can(s3, tmp_path):
    """A user who may list but not read: the span's error names the object and the
    reason; once reading is allowed, the next scan loads it (no restart, no file change)."""
    src = sorted(glob.glob(os.path.join(FIXTURES, "torch_npu_level1", "*_ascend_pt")))[0]
    run_dir = tmp_path / "csv_only"
    shutil.copytree(src, run_dir / os.path.basename(src),
                    ignore=shutil.ignore_patterns("*.json"))  # CSVs only: no head reads
    s3.upload(str(run_dir), BUCKET, "team/restricted/csv_only")
    key = s3.make_user("lister", ["s3:ListBucket"])
    tb = TensorBoard(f"s3://{BUCKET}/team/restricted", extra_env=s3.env(key=key)).start()
    try:
        run = _wait_run(tb, "csv_only", "error", 120)
        (err,) = run["errors"]
        assert err["path"] == f"csv_only/{os.path.basename(src)}"
        assert "cannot fetch" in err["message"] and "access denied" in err["message"]
        assert f"s3://{BUCKET}/team/restricted/csv_only/" in err["message"]
        s3.allow("lister", ["s3:ListBucket", "s3:GetObject"])
        run = _wait_run(tb, "csv_only", "ready", 120)
        assert run["errors"] == []
        with open(os.path.join(src, "ASCEND_PROFILER_OUTPUT", "step_trace_time.csv"),
                  newline="", encoding="utf-8-sig") as fh:
            steps = list(csv.DictReader(fh))
        assert len(tb.get("steps", run="csv_only")["steps"]) == len(steps)
    finally:
        tb.stop()
