"""Processes we spawn end with the process that started them, however it ends (here: a
process that exits at once, as a killed TensorBoard would, without shutting its pool down),
and start without running the parent's main script again: multiprocessing's spawn runs the
parent's `__main__` file in each child, and in TensorBoard that is its console script, which
imports `tensorboard.main` (0.16 s of CPU and 35 MB per process)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_PARENT = textwrap.dedent("""
    import os, sys
    from tb_plugin.loading.pool import ReaderPool

    if __name__ == "__main__":
        pool = ReaderPool(max_workers=2, inprocess=False)
        pids = {pool.submit(os.getpid).result(timeout=120) for _ in range(4)}
        print(" ".join(map(str, sorted(pids))), flush=True)
        os._exit(0)  # no shutdown of the pool, no atexit: like SIGKILL
""")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_readers_end_when_their_parent_is_gone():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _PARENT], capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout
    pids = [int(p) for p in out.split()]
    assert pids and all(p != os.getpid() for p in pids)
    deadline = time.time() + 30
    while any(_alive(p) for p in pids):
        assert time.time() < deadline, f"readers {pids} outlived their parent"
        time.sleep(0.1)


# A parent like TensorBoard's console script: imports tensorboard.main, starts our pool.
PROBE = '''
import os, sys

def loaded():
    """Run in the reader: which of the parent's modules it has, and that it is a reader."""
    import multiprocessing
    return {"tensorboard_main": "tensorboard.main" in sys.modules,
            "main_file": getattr(sys.modules["__main__"], "__file__", None),
            "pid": os.getpid(), "parent": multiprocessing.parent_process().pid}
'''

MAIN = '''
import json, os, sys
from tensorboard.main import run_main  # as TensorBoard's console script does
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe
from tb_plugin.loading.pool import ReaderPool

if __name__ == "__main__":
    pool = ReaderPool(max_workers=1, inprocess=False)
    try:
        print(json.dumps(pool.submit(probe.loaded).result(timeout=120)))
    finally:
        pool.shutdown(terminate=True)
'''


def test_readers_do_not_run_the_parents_main_script(tmp_path):
    (tmp_path / "probe.py").write_text(textwrap.dedent(PROBE))
    (tmp_path / "tensorboard_like.py").write_text(textwrap.dedent(MAIN))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(tmp_path / "tensorboard_like.py")], env=env,
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["parent"] > 0 and got["pid"] != got["parent"]  # it ran in a reader
    assert got["main_file"] is None, got  # the parent's script was not run again
    assert got["tensorboard_main"] is False, got
