"""`npu-profiler cache build | info | clear`, run as the command users run (a subprocess)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.tb_server import FIXTURES, TensorBoard

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli(cache_dir, *args, timeout=600):
    env = dict(os.environ, NPU_PROFILER_CACHE_DIR=str(cache_dir),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "tb_plugin.cli", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture()
def logdir(tmp_path):
    d = tmp_path / "logdir"
    shutil.copytree(os.path.join(FIXTURES, "torch_npu_dist4"), d / "dist4")
    shutil.copytree(os.path.join(FIXTURES, "kineto_gpu"), d / "gpu")
    # The profiles, counted from the files: one per rank directory, one per kineto trace.
    expected = (len([n for n in os.listdir(d / "dist4") if n.endswith("_ascend_pt")])
                + len([n for n in os.listdir(d / "gpu") if ".pt.trace.json" in n]))
    return str(d), expected


def test_build_then_info_then_clear(tmp_path, logdir):
    path, profiles = logdir
    cache = tmp_path / "cache"
    info = json.loads(cli(cache, "cache", "info", path, "--format", "json").stdout)
    assert info["entries"] == 0 and info["logdir"]["profiles"] == profiles
    assert info["logdir"]["cached"] == 0

    built = cli(cache, "cache", "build", path, "--progress")
    assert built.returncode == 0, built.stderr
    assert f"{profiles} profiles in 2 runs cached" in built.stdout
    assert "100.0%" in built.stderr  # the progress bar reached its end

    info = json.loads(cli(cache, "cache", "info", path, "--format", "json").stdout)
    assert info["entries"] == profiles
    assert info["logdir"] == {"path": path, "profiles": profiles, "cached": profiles,
                              "cached_with_timeline": profiles}
    assert info["derived"].get("advisor") == profiles  # advice is precomputed too
    assert info["bytes"] > 0 and info["unfinished"] == 0

    # A TensorBoard on that cache finds every profile built: nothing is read again.
    tb = TensorBoard(path, cache_dir=str(cache)).start()
    try:
        runs = tb.wait_loaded()["runs"]
        assert {r["name"] for r in runs} == {"dist4", "gpu"}
        assert all(r["state"] == "ready" for r in runs)
    finally:
        tb.stop()
    info_after = json.loads(cli(cache, "cache", "info", "--format", "json").stdout)
    assert info_after["entries"] == profiles

    text = cli(cache, "cache", "info", path).stdout
    assert f"{profiles} of {profiles} profiles cached" in text

    cleared = cli(cache, "cache", "clear")
    assert cleared.returncode == 0 and "removed" in cleared.stdout
    info = json.loads(cli(cache, "cache", "info", path, "--format", "json").stdout)
    assert info["entries"] == 0 and info["logdir"]["cached"] == 0


def test_clear_all_versions_removes_stale_cache_versions(tmp_path):
    cache = tmp_path / "cache"
    (cache / "v1" / "ab").mkdir(parents=True)
    info = json.loads(cli(cache, "cache", "info", "--format", "json").stdout)
    assert info["other_versions"] == ["v1"]
    assert "stale versions" in cli(cache, "cache", "info").stdout
    out = cli(cache, "cache", "clear").stdout
    assert "v1" not in out and (cache / "v1").exists()  # only the current version
    cli(cache, "cache", "clear", "--all-versions")
    assert not (cache / "v1").exists()


def test_build_with_an_unreachable_scheduler_says_so_and_builds_locally(tmp_path, logdir):
    path, profiles = logdir
    cache = tmp_path / "cache"
    res = cli(cache, "cache", "build", path, "--scheduler", "tcp://127.0.0.1:9")
    assert res.returncode == 0, res.stderr
    assert "tcp://127.0.0.1:9" in res.stderr and "reading locally" in res.stderr
    assert json.loads(cli(cache, "cache", "info", "--format", "json").stdout)["entries"] \
        == profiles
