"""Build locks: a process that builds a cache entry holds an exclusive lock on the
directory it builds in (`ProfileCache.building` / `extending`); the kernel releases it when
that process ends, however it ends. So a directory nobody holds is a killed builder's
leftover (removed by the next build of the entry), and one that is held is a live builder's
(waited for: a span's files are read once).

Where locks are not to be had (no `fcntl`, a file system without them) a builder goes on
unlocked and nothing is taken for abandoned.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import time

BUILDER_WAIT_S = 600.0  # how long a builder waits for another one of the same entry
_POLL_S = 0.1


@contextlib.contextmanager
def locked(directory: str, wait: bool):
    """The lock on `directory`, while the block runs. Yields "taken", "held" (another
    process has it; only without `wait`) or "unknown" (no locks here). OSError when the
    directory is not there."""
    try:
        import fcntl
    except ImportError:
        yield "unknown"
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            state = "held"
        except OSError:
            state = "unknown"
        else:
            state = "taken"
        yield state
    finally:
        os.close(fd)  # releases the lock


def remove_abandoned(work: str, wait_s: float = 0.0) -> bool:
    """Remove a build directory whose builder is gone (nobody holds its lock). With
    `wait_s`, a directory still held is waited for that long first (its builder either
    commits it, renaming it away, or leaves it to be removed here). Whether a live builder
    was found (and waited for)."""
    deadline = time.monotonic() + wait_s
    waited = False
    while _remove_if_unlocked(work) == "held" and time.monotonic() < deadline:
        waited = True
        time.sleep(_POLL_S)
    return waited


def _remove_if_unlocked(work: str) -> str:
    """The lock's state, or "gone" (no such directory: committed, or removed by another)."""
    try:
        with locked(work, wait=False) as state:
            if state == "taken":
                # by its old name only: a committed directory was renamed away
                shutil.rmtree(work, ignore_errors=True)
            return state
    except OSError:
        return "gone"
