"""The test servers' processes (TensorBoard, the S3 server): each runs in its own session,
so that stopping it stops everything it started."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def stop_group(proc: subprocess.Popen | None, timeout: float = 15.0) -> None:
    """SIGTERM to the process group of `proc` (started with `start_new_session=True`),
    SIGKILL if it is still there after `timeout` s. Nothing if it already ended."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)


def log_tail(path: str, chars: int) -> str:
    """The last `chars` characters of a process's log file ("" if it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")[-chars:]
    except OSError:
        return ""
