"""Where the benchmarks put the caches and scratch files they build: beside the plugin's
default cache root (`${XDG_CACHE_HOME:-~/.cache}`, tb_plugin/cache.py), where a user's cache
is, rather than in /tmp, where the test suite and other tools create and delete thousands
of files. On the VMs these numbers come from, the kernel CPU of creating a file moves
between ~20 us and ~700 us with the recent activity of the filesystem (the same directory
minutes apart; docs/benchmarks.md, twenty-first session), and a cold load creates 17 files
per span, so a benchmark of a load also measures the disk's recent history: compare runs
made in the same minutes."""
from __future__ import annotations

import os
import tempfile


def scratch_dir(prefix: str) -> str:
    """A new empty directory for one measurement's cache (the caller removes it)."""
    parent = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    try:
        os.makedirs(parent, exist_ok=True)
        return tempfile.mkdtemp(prefix=prefix, dir=parent)
    except OSError:
        return tempfile.mkdtemp(prefix=prefix)
