"""Background loading of profiles, one module per job:

    scan.py      the scan loop (discovery every few seconds) and which spans a scan adds
    pool.py      the bounded pool of reader processes, with the retry-in-isolation rule
    build.py     the three load stages of one span, run in a reader process
    spans.py     the per-span state machine and the facts a finished stage left
    profiles.py  the open-profile store (LRU of cache entries opened in TensorBoard)
    status.py    a run's load status for /runs and /run (a pure function)
    loader.py    the Loader: ties them together and orders the work

The names below are imported on first use: `loading.pool` and `loading.dask_pool` stay
light (no pandas), so TensorBoard's process can start its first reader before it imports
the rest of the plugin (plugin.py).
"""
from __future__ import annotations

import importlib

_EXPORTS = {"Loader": "loader", "POLL_SECONDS": "loader", "SpanFacts": "spans",
            "SpanState": "spans", "build_advice": "build", "build_entry": "build",
            "build_trace": "build"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
