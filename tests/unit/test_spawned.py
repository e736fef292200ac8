"""Processes we spawn end with the process that started them, however it ends (here: a
process that exits at once, as a killed TensorBoard would, without shutting its pool down)."""
from __future__ import annotations

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
