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
import threading
import time

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


def _live_builder(root: str, commit: bool) -> tuple[subprocess.Popen, str]:
    """A builder of KEY in another process, at work until it reads a line; then it commits
    the entry (`commit`) or leaves without."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys
        from tb_plugin.cache import ProfileCache
        from tb_plugin.model import Profile, ProfileMeta
        cache = ProfileCache.at(sys.argv[1])
        with cache.building(sys.argv[2]) as work:
            print(work, flush=True)
            sys.stdin.readline()
            if sys.argv[3] == "commit":
                cache.commit(sys.argv[2], work, Profile(meta=ProfileMeta(producer="kineto")))
        """), root, KEY, "commit" if commit else "leave"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    work = proc.stdout.readline().strip()
    assert os.path.isdir(work)
    return proc, work


def _release_later(proc: subprocess.Popen, seconds: float) -> threading.Thread:
    def release():
        time.sleep(seconds)
        proc.stdin.write("go\n")
        proc.stdin.flush()
    t = threading.Thread(target=release)
    t.start()
    return t


def test_a_second_builder_waits_for_the_live_one_and_takes_its_entry(tmp_path):
    """Two TensorBoards (or a `cache build` and a TensorBoard) on one cache read a span's
    files once: the second builder waits for the first and finds the entry built."""
    root = str(tmp_path)
    proc, theirs = _live_builder(root, commit=True)
    try:
        release = _release_later(proc, 1.0)
        t0 = time.monotonic()
        with ProfileCache.at(root).building(KEY) as mine:
            waited = time.monotonic() - t0
            assert mine is None  # nothing to build: theirs is the entry now
        release.join()
        assert waited >= 1.0, waited  # it did wait for the other builder to finish
    finally:
        proc.communicate(timeout=30)
    assert proc.returncode == 0
    cache = ProfileCache.at(root)
    assert cache.has(KEY)
    assert cache.load(KEY).meta.producer == "kineto"  # the other builder's entry
    assert _listing(os.path.join(root, KEY[:2])) == [KEY]


def test_a_builder_that_leaves_without_its_entry_is_followed_by_the_waiting_one(tmp_path):
    root = str(tmp_path)
    proc, theirs = _live_builder(root, commit=False)
    try:
        release = _release_later(proc, 0.5)
        with ProfileCache.at(root).building(KEY) as mine:
            assert mine is not None and mine != theirs
            assert not os.path.exists(theirs)  # it left without committing: removed
            cache = ProfileCache.at(root)
            cache.commit(KEY, mine, Profile(meta=ProfileMeta(producer="torch_npu")))
        release.join()
    finally:
        proc.communicate(timeout=30)
    assert ProfileCache.at(root).load(KEY).meta.producer == "torch_npu"
    assert _listing(os.path.join(root, KEY[:2])) == [KEY]


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
