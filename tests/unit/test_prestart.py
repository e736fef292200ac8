"""The fork server started with the `tensorboard` command (tb_plugin/prestart.py): which
commands start it, and, in a real interpreter that runs the installed .pth line as `site`
does, that it starts the fork server once TensorBoard is imported, gives TensorBoard one
BLAS thread unless the user chose a count, and that the reader pool then forks its readers
from that server instead of starting another."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tb_plugin import prestart

PY = "/usr/bin/python3"


@pytest.mark.parametrize("argv, orig, env, expected", [
    (["/venv/bin/tensorboard", "--logdir", "runs"], None, {}, True),
    (["/venv/bin/tensorboard", "--logdir=runs", "--bind_all"], None, {}, True),
    (["/venv/bin/tensorboard", "--logdir_spec", "a:runs"], None, {}, True),
    (["C:\\venv\\Scripts\\tensorboard.exe", "--logdir", "runs"], None, {}, True),
    (["/venv/bin/tensorboard"], None, {"NPU_PROFILER_LOGDIR": "/data"}, True),
    (["-m", "--logdir", "runs"], [PY, "-m", "tensorboard.main", "--logdir", "runs"], {}, True),
    (["-m", "--logdir", "runs"], [PY, "-m", "tensorboard", "--logdir", "runs"], {}, True),
    # only prints, or serves no logdir of ours, or is not TensorBoard
    (["/venv/bin/tensorboard", "--logdir", "runs", "--version_tb"], None, {}, False),
    (["/venv/bin/tensorboard", "--inspect", "--logdir", "runs"], None, {}, False),
    (["/venv/bin/tensorboard", "--help"], None, {}, False),
    (["/venv/bin/tensorboard"], None, {}, False),
    (["/venv/bin/tensorboard", "dev", "list"], None, {}, False),
    (["train.py", "--logdir", "runs"], [PY, "train.py", "--logdir", "runs"], {}, False),
    (["-m", "--logdir", "runs"], [PY, "-m", "trainer", "--logdir", "runs"], {}, False),
    (["-c"], [PY, "-c", "import tensorboard"], {}, False),
    ([], None, {}, False),
])
def test_which_commands_are_tensorboard_servers(argv, orig, env, expected):
    assert prestart.is_tensorboard_server(argv, orig, environ=env) is expected


@pytest.mark.parametrize("env, expected", [
    ({}, True),
    ({"NPU_PROFILER_PRESTART": "0"}, False),
    ({"NPU_PROFILER_PRESTART": "1"}, True),
    ({"NPU_PROFILER_INPROCESS": "1"}, False),
    ({"NPU_PROFILER_DASK_SCHEDULER": "tcp://10.0.0.1:8786"}, False),
    ({"NPU_PROFILER_DASK_SCHEDULER": " "}, True),
])
def test_prestart_only_for_local_reader_processes(env, expected):
    assert prestart.wanted(environ=env) is expected


# A `tensorboard` command stand-in: its file is named `tensorboard` (what the .pth line and
# `is_tensorboard_server` look at), it runs the installed .pth as `site` does (a site dir of
# its own, added with `site.addsitedir`, which executes .pth lines the same way), then
# imports TensorBoard and reports what the line did; with "pool", it also has the reader
# pool run a task and says which process forked that reader.
_COMMAND = textwrap.dedent("""\
    import json, os, site, sys, time
    site.addsitedir(os.environ["PRESTART_SITE"])
    blas = os.environ.get("OPENBLAS_NUM_THREADS")
    import tensorboard  # (the command's first import: the starter waits for it)
    import multiprocessing.forkserver as fs
    deadline = time.monotonic() + 30
    while fs._forkserver._forkserver_pid is None and time.monotonic() < deadline:
        time.sleep(0.01)
        if os.environ.get("PRESTART_EXPECT") == "none" and time.monotonic() > deadline - 28:
            break
    server = fs._forkserver._forkserver_pid
    reader_parent = None
    if "pool" in sys.argv:
        from tb_plugin.loading.pool import ReaderPool
        pool = ReaderPool(max_workers=1, inprocess=False)
        reader_parent = pool.submit(os.getppid).result(timeout=120)
        pool.shutdown(terminate=True)
    print(json.dumps({"server": server, "blas": blas, "reader_parent": reader_parent}))
""")


def _run(tmp_path, env_extra: dict, *args: str) -> dict:
    site_dir = tmp_path / "site"
    site_dir.mkdir(exist_ok=True)
    prestart.install_line(str(site_dir))
    command = tmp_path / "bin" / "tensorboard"
    command.parent.mkdir(exist_ok=True)
    command.write_text(_COMMAND)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NPU_PROFILER_") and k not in (
               "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    env.update(PRESTART_SITE=str(site_dir), **env_extra)
    out = subprocess.run([sys.executable, str(command), "--logdir", str(tmp_path), *args],
                         env=env, cwd=str(tmp_path), capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_pth_line_is_what_gets_installed(tmp_path):
    path = prestart.install_line(str(tmp_path))
    assert os.path.basename(path) == prestart.PTH_NAME
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert len(lines) == 1 and lines[0].startswith("import ")  # (site runs such a line)


def test_the_tensorboard_command_starts_the_fork_server_and_the_pool_uses_it(tmp_path):
    report = _run(tmp_path, {}, "pool")
    assert report["server"] is not None
    assert report["blas"] == "1"  # set before TensorBoard imported NumPy
    # the reader was forked by the server the command started, not by one of its own
    assert report["reader_parent"] == report["server"]


def test_a_users_blas_thread_count_is_kept(tmp_path):
    report = _run(tmp_path, {"OMP_NUM_THREADS": "4"})
    assert report["server"] is not None
    assert report["blas"] is None  # OpenBLAS then follows the user's OMP_NUM_THREADS


def test_switched_off_the_command_starts_nothing(tmp_path):
    report = _run(tmp_path, {"NPU_PROFILER_PRESTART": "0", "PRESTART_EXPECT": "none"})
    assert report["server"] is None
    assert report["blas"] is None


def test_a_command_that_only_prints_starts_nothing(tmp_path):
    report = _run(tmp_path, {"PRESTART_EXPECT": "none"}, "--version_tb")
    assert report["server"] is None
