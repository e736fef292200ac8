"""What an interrupted build leaves in the cache is removed by the next build of the same
entry, and never what a live builder is using.

A reader killed mid-build (Ctrl+C of TensorBoard, the OOM killer) leaves its stage-1 work
directory (spilled tables: hundreds of MB on a large profile) or, in stage 2, the parallel
trace ranges' scratch directory and half-written tables inside the entry.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tb_plugin.cache import ProfileCache
from tb_plugin.model import Profile, ProfileMeta

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY = "ab" + "0" * 30


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def _killed_builder(root: str) -> str:
    """A process that dies (SIGKILL) in the middle of building KEY; its work directory."""
    proc = _run("""
        import os, signal, sys
        from tb_plugin.cache import ProfileCache
        cache = ProfileCache.at(sys.argv[1])
        with cache.building(sys.argv[2]) as work:
            open(os.path.join(work, "kernels.arrow"), "wb").write(b"x" * 4096)
            print(work, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        """, root, KEY)
    assert proc.returncode == -9, proc.stderr
    work = proc.stdout.strip()
    assert os.path.isdir(work) and os.path.basename(work).startswith(f"{KEY}.tmp-")
    return work


def _listing(directory: str) -> list[str]:
    return sorted(os.listdir(directory))


def test_a_killed_builders_work_directory_goes_at_the_next_build(tmp_path):
    root = str(tmp_path)
    left = _killed_builder(root)
    cache = ProfileCache.at(root)
    with cache.building(KEY) as work:
        assert not os.path.exists(left)
        cache.commit(KEY, work, Profile(meta=ProfileMeta(producer="torch_npu")))
    assert _listing(os.path.join(root, KEY[:2])) == [KEY]
    assert cache.has(KEY)


def test_a_live_builders_directory_is_kept(tmp_path):
    root = str(tmp_path)
    # A builder of the same entry in another process, still at work until we say so.
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys
        from tb_plugin.cache import ProfileCache
        with ProfileCache.at(sys.argv[1]).building(sys.argv[2]) as work:
            print(work, flush=True)
            sys.stdin.readline()
        """), root, KEY], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        theirs = proc.stdout.readline().strip()
        assert os.path.isdir(theirs)
        with ProfileCache.at(root).building(KEY) as mine:
            assert os.path.isdir(theirs)
            assert mine != theirs
        assert not os.path.exists(mine)  # not committed: removed
        assert os.path.isdir(theirs)
    finally:
        proc.communicate("go\n", timeout=30)
    assert not os.path.exists(theirs)  # its builder left without committing


def test_an_interrupted_later_stage_leaves_nothing_in_the_entry(tmp_path):
    root = str(tmp_path)
    cache = ProfileCache.at(root)
    with cache.building(KEY) as work:
        cache.commit(KEY, work, Profile(meta=ProfileMeta(producer="torch_npu")))
    entry = cache.entry_dir(KEY)
    kept = _listing(entry)
    # What a reader killed in stage 2 leaves: the trace ranges' scratch with its parts, and
    # a table written aside.
    os.makedirs(os.path.join(entry, "trace-ranges-q1w2e3", "range-1"))
    with open(os.path.join(entry, "trace-ranges-q1w2e3", "range-1", "slices.arrow"), "wb") as fh:
        fh.write(b"x" * 4096)
    with open(os.path.join(entry, "slices.arrow.tmp-4242"), "wb") as fh:
        fh.write(b"x" * 4096)
    with cache.extending(KEY) as directory:
        assert directory == entry
        assert _listing(entry) == kept
