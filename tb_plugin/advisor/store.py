"""Advice is computed once per profile and kept: in memory (LRU), then as JSON next to the
cache (`<cache root>/advisor/<key[:2]>/<key>.<variant>.json`), so neither a request nor a
restart rescans a profile's tables. The variant covers the advisor version, the thresholds
and whether the profile's timeline was there (a profile read before its trace is advised
again once the trace is indexed)."""
from __future__ import annotations

import json

from ..cache import ProfileCache
from ..lru import LRU

# Bump when a rule changes what it reports.
ADVISOR_VERSION = 1


class AdviceStore:
    """Advice per (cache entry, variant): memory LRU, then the JSON the cache keeps for the
    entry (`ProfileCache.derived_path("advisor", key, ...)`), then computed."""

    def __init__(self, size: int = 4096):
        self._mem: LRU[str, dict] = LRU(size)

    def get(self, cache_root: str, key: str, variant: str, compute) -> dict:
        ident = f"{key}.{variant}"
        hit = self._mem.get(ident)
        if hit is not None:
            return hit
        cache = ProfileCache.at(cache_root)
        suffix = f".{variant}.json"
        value = cache.read_derived("advisor", key, suffix)
        if value is None:
            # Through JSON once, so a computed answer has the same types as a stored one.
            value = json.loads(json.dumps(compute(), default=_json_default))
            cache.write_derived("advisor", key, suffix, value)
        self._mem.put(ident, value)
        return value


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
