"""Advice is computed once per profile and kept: in memory (LRU), then as JSON next to the
cache (`<cache root>/advisor/<key[:2]>/<key>.<variant>.json`), so neither a request nor a
restart rescans a profile's tables. The variant covers the advisor version, the thresholds
and whether the profile's timeline was there (a profile read before its trace is advised
again once the trace is indexed)."""
from __future__ import annotations

import json

from ..cache import DerivedStore

# Bump when a rule changes what it reports.
ADVISOR_VERSION = 1


class AdviceStore:
    """Advice per (cache entry, variant), through the cache's `DerivedStore`."""

    def __init__(self, size: int = 4096):
        self._docs = DerivedStore("advisor", size)

    def get(self, cache_root: str, key: str, variant: str, compute) -> dict:
        # Through JSON once, so a computed answer has the same types as a stored one.
        return self._docs.get(cache_root, key, f".{variant}.json",
                              lambda: json.loads(json.dumps(compute(), default=_json_default)))


def _json_default(o):
    import math

    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        f = float(o)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
