"""The readers' compiled helpers (`_native.c`: `scan`, `gather`, `us_to_ns`,
`boundary_bytes`), or None.

One place decides whether they are used: None when the extension was not built (an
install without a C compiler; setup.py marks it optional) or when
`NPU_PROFILER_NATIVE=0` switches them off (to compare, or to rule them out when a trace
reads wrong). Each caller has a numpy/msgspec counterpart that gives the same results.
"""
from __future__ import annotations

import os


def _load():
    if os.environ.get("NPU_PROFILER_NATIVE", "").strip() == "0":
        return None
    try:
        from . import _native
    except ImportError:
        return None
    return _native


helpers = _load()
