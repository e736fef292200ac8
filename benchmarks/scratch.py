"""Where the benchmarks put the caches and scratch files they build: beside the plugin's
default cache root (`${XDG_CACHE_HOME:-~/.cache}`, tb_plugin/cache.py), where a user's cache
is, and not in /tmp. On the VMs these numbers come from, creating a file anywhere under /tmp
costs ~0.4 ms against ~0.04 ms elsewhere on the same ext4 disk (docs/benchmarks.md,
twenty-first session), which would be charged to every table a load writes (17 files per
span) and never to a user whose cache is where the plugin puts it."""
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
