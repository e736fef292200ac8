"""A shared cache at an fsspec URL (NPU_PROFILER_CACHE_DIR=s3://...), with real parts: a moto
S3 server on loopback (IAM authentication on) holds the logdir and the shared cache, a real
`distributed.LocalCluster` builds the run through `npu-profiler cache build --scheduler`, and
real TensorBoards with empty local cache directories read it. They answer every view as a
TensorBoard that parsed a local copy itself, without running a reader, and fetch only the
files a view needs; an unusable cache URL is a clear note and a local cache."""
from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

from tests.remote.s3_server import S3Server
from tests.tb_server import FIXTURES, TensorBoard, free_port

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.e2e

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUCKET = "shared"
LOGS = "logs"
CACHE = "cache"
RUNS = ("torch_npu_dist4", "kineto_gpu")
VERSIONED = f"{CACHE}/v3/"


@pytest.fixture(scope="module")
def s3():
    server = S3Server().start()
    try:
        server.make_bucket(BUCKET)
        for run in RUNS:
            server.upload(os.path.join(FIXTURES, run), BUCKET, f"{LOGS}/{run}")
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def cluster(s3):
    """Workers spawned with this checkout on the path and the S3 user's credentials (a
    worker publishes what it builds)."""
    saved = dict(os.environ)
    os.environ.update(s3.env())
    os.environ["PYTHONPATH"] = ROOT + (os.pathsep + saved["PYTHONPATH"]
                                       if saved.get("PYTHONPATH") else "")
    try:
        lc = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      host="127.0.0.1", dashboard_address=None,
                                      silence_logs=logging.ERROR)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        yield lc
    finally:
        lc.close()


def _cli(*args, env: dict, timeout: float = 900):
    env = dict(os.environ, **env,
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "tb_plugin.cli", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def _shared_env(s3, local_dir: str, key=None, secret=None) -> dict:
    return {**s3.env(key=key, secret=secret), "NPU_PROFILER_CACHE_DIR": f"s3://{BUCKET}/{CACHE}",
            "NPU_PROFILER_LOCAL_CACHE_DIR": local_dir}


def _objects(s3, prefix: str) -> dict[str, int]:
    """key -> size of every object under the prefix (boto3, independent of the plugin)."""
    out, token = {}, None
    client = s3.client()
    while True:
        kw = {"Bucket": BUCKET, "Prefix": prefix, **({"ContinuationToken": token} if token else {})}
        page = client.list_objects_v2(**kw)
        out.update({o["Key"]: o["Size"] for o in page.get("Contents", [])})
        if not page.get("IsTruncated"):
            return out
        token = page["NextContinuationToken"]


def _expected_profiles() -> int:
    """Profiles of RUNS, counted from the fixture files: rank directories and kineto traces."""
    dist = [n for n in os.listdir(os.path.join(FIXTURES, RUNS[0])) if n.endswith("_ascend_pt")]
    gpu = [n for n in os.listdir(os.path.join(FIXTURES, RUNS[1])) if ".pt.trace.json" in n]
    return len(dist) + len(gpu)


@pytest.fixture(scope="module")
def built(s3, cluster, tmp_path_factory):
    """`npu-profiler cache build s3://shared/logs --scheduler ...` into the shared cache."""
    local = str(tmp_path_factory.mktemp("builder-cache"))
    res = _cli("cache", "build", f"s3://{BUCKET}/{LOGS}", "--scheduler",
               cluster.scheduler_address, env=_shared_env(s3, local))
    assert res.returncode == 0, res.stdout + res.stderr
    return res


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Answers of a TensorBoard that parsed a local copy of the runs into a local cache."""
    logdir = tmp_path_factory.mktemp("local-copy")
    for run in RUNS:
        shutil.copytree(os.path.join(FIXTURES, run), logdir / run)
    tb = TensorBoard(str(logdir)).start()
    try:
        tb.wait_loaded(600)
        return _answers(tb)
    finally:
        tb.stop()


def _strip_volatile(doc):
    if isinstance(doc, dict):
        return {k: _strip_volatile(v) for k, v in doc.items()
                if k not in ("load_seconds", "trace_seconds")}
    if isinstance(doc, list):
        return [_strip_volatile(v) for v in doc]
    return doc


def _profiles(tb: TensorBoard) -> list[dict]:
    out = []
    for run in tb.get("runs")["runs"]:
        for w in tb.get("run", run=run["name"])["workers"]:
            out += [dict(run=run["name"], worker=w["name"], span=s) for s in w["spans"]]
    return out


def _answers(tb: TensorBoard) -> dict:
    out = {}
    for where in _profiles(tb):
        for route in ("summary", "steps", "operators", "kernels", "memory", "advisor",
                      "trace/tracks", "trace/summary"):
            out[(*where.values(), route)] = _strip_volatile(tb.status(route, **where))
    for run in RUNS:
        out[(run, "distributed")] = _strip_volatile(tb.status("distributed", run=run))
        out[(run, "run")] = _strip_volatile(tb.status("run", run=run))
    return out


def _versioned(local_dir: str) -> str:
    return os.path.join(local_dir, "v3")


def _entries(local_dir: str) -> dict[str, set[str]]:
    """key -> the file names of that local entry directory."""
    root, out = _versioned(local_dir), {}
    for prefix in os.listdir(root):
        if len(prefix) != 2:
            continue
        for key in os.listdir(os.path.join(root, prefix)):
            path = os.path.join(root, prefix, key)
            if os.path.isdir(path):
                out[key] = set(os.listdir(path))
    return out


def test_cache_build_on_dask_publishes_every_entry_complete(s3, built):
    n = _expected_profiles()
    assert f"{n} of {n} profiles published to the shared cache s3://{BUCKET}/{CACHE}/v3" \
        in built.stdout
    objects = _objects(s3, VERSIONED)
    metas = [k for k in objects if k.endswith("/meta.json") and k.count("/") == 4]
    assert len(metas) == n
    ranked = 0
    for meta_key in metas:
        doc = json.loads(s3.client().get_object(Bucket=BUCKET, Key=meta_key)["Body"].read())
        assert doc["meta"]["trace_ready"] is True
        ranked += doc["meta"].get("rank") is not None
        entry = meta_key.rsplit("/", 1)[0]
        names = {k[len(entry) + 1:] for k in objects if k.startswith(entry + "/")}
        # Every table meta.json counts is there, and the args side file it names.
        assert {f"{t}.arrow" for t in doc["rows"]} <= names
        if doc["meta"].get("args_file"):
            assert doc["meta"]["args_file"] in names
    # Derived documents too: the rank summaries (the 4 ranks of the torch_npu run and the
    # kineto traces' distributedInfo rank), the advice of every profile.
    derived = {k.split("/")[2] for k in objects if k.count("/") == 4 and
               not k.endswith("/meta.json") and len(k.split("/")[2]) > 2}
    assert {"distributed", "advisor"} <= derived
    assert sum(k.startswith(f"{VERSIONED}distributed/") for k in objects) == ranked >= 4


def test_tensorboard_on_the_shared_cache_answers_like_parsing_without_a_reader(
        s3, built, reference, tmp_path):
    local = str(tmp_path / "empty")
    os.makedirs(local)
    tb = TensorBoard(f"s3://{BUCKET}/{LOGS}", extra_env=_shared_env(s3, local)).start()
    try:
        data = tb.wait_loaded(300)
        assert data["notes"] == [], data["notes"]
        got = _answers(tb)
        # No reader ran: a reader first fetches its span's files from the remote logdir,
        # and no CSV of the logdir mirror was ever fetched (JSON heads are for discovery).
        (state,) = [os.path.join(d, "state.sqlite") for d, _, fs in os.walk(local)
                    if "state.sqlite" in fs]
        with sqlite3.connect(state) as con:
            csv_fetched = con.execute("SELECT count(*) FROM files WHERE rel LIKE '%.csv'"
                                      " AND fetched = 1").fetchone()[0]
            csvs = con.execute("SELECT count(*) FROM files WHERE rel LIKE '%.csv'").fetchone()[0]
        assert csvs > 10 and csv_fetched == 0
        # And each entry's meta.json is the builder's, byte for byte (its load_seconds too).
        for key, names in _entries(local).items():
            assert "meta.json" in names
            with open(os.path.join(_versioned(local), key[:2], key, "meta.json"), "rb") as fh:
                mine = fh.read()
            theirs = s3.client().get_object(
                Bucket=BUCKET, Key=f"{VERSIONED}{key[:2]}/{key}/meta.json")["Body"].read()
            assert mine == theirs
    finally:
        tb.stop()
    assert len(reference) >= 6 * 8
    assert sum(code == 200 for code, _ in reference.values()) >= 6 * 6
    assert got == reference


def test_only_the_files_a_view_needs_are_fetched_with_read_only_access(s3, built, tmp_path):
    reader = s3.make_user("cache-reader", ["s3:ListBucket", "s3:GetObject"])
    local = str(tmp_path / "empty")
    os.makedirs(local)
    tb = TensorBoard(f"s3://{BUCKET}/{LOGS}", extra_env=_shared_env(s3, local, key=reader)).start()
    try:
        notes = tb.wait_loaded(300)["notes"]
        assert any("read-only" in n and f"s3://{BUCKET}/{CACHE}" in n for n in notes), notes
        entries = _entries(local)
        assert len(entries) == _expected_profiles()
        # Listing the runs fetched each entry's meta.json and nothing else.
        assert all({n for n in names if not n.startswith(".")} == {"meta.json"}
                   for names in entries.values()), entries
        where = dict(run=RUNS[0], worker="rank0")
        where["span"] = tb.get("run", run=RUNS[0])["workers"][0]["spans"][0]
        assert tb.status("summary", **where)[0] == 200
        after = _entries(local)
        opened = {k for k in after if after[k] != entries[k]}
        assert len(opened) == 1
        (key,) = opened
        # The key figures are stored with the entry (analysis/stored.py): one small file.
        assert {n for n in after[key] if not n.startswith(".")} == \
            {"meta.json", "stored-overview-summary.json"}, after[key]
        # A view not stored reads its tables: some, fewer than the entry has.
        assert tb.status("kernels", **where, group_by="type")[0] == 200
        after = _entries(local)
        tables = {n for n in after[key] if n.endswith(".arrow")}
        remote = {k.rsplit("/", 1)[1] for k in _objects(s3, f"{VERSIONED}{key[:2]}/{key}/")}
        assert tables and tables < remote  # some tables, fewer than the entry has
        assert not any(n.startswith("trace_") for n in tables)
        assert "slice_args.arrow" not in after[key]
        # Opening the timeline brings its index tables.
        assert tb.status("trace/tracks", **where)[0] == 200
        traced = {n for n in _entries(local)[key] if n.endswith(".arrow")}
        assert any(n.startswith("trace_") for n in traced - tables), traced - tables
    finally:
        tb.stop()


def test_an_unusable_cache_url_is_a_note_and_a_local_cache(s3, tmp_path):
    logdir = tmp_path / "logdir"
    shutil.copytree(os.path.join(FIXTURES, RUNS[1]), logdir / RUNS[1])
    closed = f"http://127.0.0.1:{free_port()}"
    cases = {
        "forbidden": _shared_env(s3, str(tmp_path / "l1"), secret="not-the-secret"),
        "unreachable": {**_shared_env(s3, str(tmp_path / "l2")), "AWS_ENDPOINT_URL": closed},
    }
    for name, env in cases.items():
        started = time.time()
        tb = TensorBoard(str(logdir), extra_env=env).start()
        try:
            data = tb.wait_loaded(300)
            assert time.time() - started < 120, name
            (note,) = data["notes"]
            assert f"shared cache s3://{BUCKET}/{CACHE}/v3 cannot be used" in note, note
            assert ("access denied" if name == "forbidden" else "cannot reach") in note, note
            assert "using the local cache" in note
            (run,) = data["runs"]
            assert run["state"] == "ready" and run["trace_state"] == "ready"
            worker = tb.get("run", run=RUNS[1])["workers"][0]
            assert tb.status("summary", run=RUNS[1], worker=worker["name"],
                             span=worker["spans"][0])[0] == 200
        finally:
            tb.stop()
        assert os.path.isdir(os.path.join(env["NPU_PROFILER_LOCAL_CACHE_DIR"], "v3"))
    # The CLI: info names the URL and the reason (exit 2); build says so and builds locally.
    env = cases["forbidden"]
    info = _cli("cache", "info", "--format", "json", env=env)
    assert info.returncode == 2 and "cannot be used" in info.stderr and "access denied" in info.stderr
    build = _cli("cache", "build", str(logdir), env=env)
    assert build.returncode == 0, build.stdout + build.stderr
    assert "cannot be used" in build.stderr and "using the local cache" in build.stderr
    assert "profiles in 1 runs cached" in build.stdout


def test_cache_info_and_clear_work_on_the_url(s3, built, tmp_path):
    env = _shared_env(s3, str(tmp_path / "local"))
    objects = _objects(s3, VERSIONED)
    metas = [k for k in objects if k.endswith("/meta.json") and k.count("/") == 4]
    info = _cli("cache", "info", f"s3://{BUCKET}/{LOGS}", "--format", "json", env=env)
    assert info.returncode == 0, info.stderr
    doc = json.loads(info.stdout)
    assert doc["shared"]["entries"] == len(metas) == _expected_profiles()
    assert doc["shared"]["entries_with_timeline"] == len(metas)
    assert doc["shared"]["bytes"] == sum(objects.values())
    assert doc["logdir"]["in_shared_cache"] == len(metas)
    assert doc["shared"]["derived"]["distributed"] == sum(
        k.startswith(f"{VERSIONED}distributed/") for k in objects) >= 4
    cleared = _cli("cache", "clear", env=env)
    assert cleared.returncode == 0, cleared.stderr
    assert f"s3://{BUCKET}/{CACHE}/v3" in cleared.stdout
    assert _objects(s3, VERSIONED) == {}
    assert _objects(s3, f"{LOGS}/")  # the logdir is not the cache's to remove


def _object_ids(s3, prefix: str) -> dict[str, tuple[str, object]]:
    client = s3.client()
    return {k: (h["ETag"], h["LastModified"]) for k in _objects(s3, prefix)
            for h in [client.head_object(Bucket=BUCKET, Key=k)]}


def test_a_timeline_built_on_another_machine_completes_the_shared_entry(s3, tmp_path,
                                                                        monkeypatch):
    """Views built on machine A, the timeline on machine B (another local directory): the
    shared entry ends up as a local build would make it, and B re-uploads nothing it did
    not change."""
    from tb_plugin import discovery
    from tb_plugin.cache import ProfileCache, entry_key
    from tb_plugin.loading.build import build_advice, build_entry, build_trace

    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)
    logdir = tmp_path / "logs"
    shutil.copytree(os.path.join(FIXTURES, "torch_npu_level1"), logdir / "run")
    runs, _ = discovery.discover(str(logdir))
    span = next(s for r in runs.values() for s in r.spans())
    key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
    url, prefix = f"s3://{BUCKET}/split", "split/v3/"
    a = ProfileCache(url, local=str(tmp_path / "a"))
    b = ProfileCache(url, local=str(tmp_path / "b"))
    assert a.note is None and a.publishes and b.publishes
    build_entry(span, a.root, key)
    entry = f"{prefix}{key[:2]}/{key}/"
    meta = json.loads(s3.client().get_object(Bucket=BUCKET, Key=entry + "meta.json")["Body"].read())
    assert meta["meta"]["trace_deferred"] and not meta["meta"].get("trace_ready")
    before = _object_ids(s3, entry)
    assert not os.path.exists(b.entry_dir(key))
    time.sleep(1.1)  # LastModified has whole seconds: an upload now would show
    build_trace(span, b.root, key)
    build_advice(span, b.root, key)
    after = _object_ids(s3, entry)
    # Unchanged objects were not uploaded again (same ETag, same LastModified).
    for k, (etag, modified) in before.items():
        if k.endswith("/meta.json"):
            continue
        if after[k][0] == etag:
            assert after[k][1] == modified, k
    # The shared entry is what one local build makes, file for file.
    local = ProfileCache(str(tmp_path / "local"))
    build_entry(span, local.root, key)
    build_trace(span, local.root, key)
    build_advice(span, local.root, key)
    mine = {n: open(os.path.join(local.entry_dir(key), n), "rb").read()
            for n in os.listdir(local.entry_dir(key))}
    theirs = {k[len(entry):]: s3.client().get_object(Bucket=BUCKET, Key=k)["Body"].read()
              for k in after}
    assert sorted(mine) == sorted(theirs)
    assert len(mine) > 5
    for name in mine:
        if name == "meta.json":
            assert _strip_volatile(json.loads(mine[name])) == \
                _strip_volatile(json.loads(theirs[name]))
            assert json.loads(theirs[name])["meta"]["trace_ready"] is True
        else:
            assert mine[name] == theirs[name], name
