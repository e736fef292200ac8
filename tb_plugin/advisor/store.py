"""Advice is computed once per profile and kept: in memory (LRU), then as JSON next to the
cache (`<cache root>/advisor/<key[:2]>/<key>.<variant>.json`), so neither a request nor a
restart rescans a profile's tables. The variant covers the advisor version, the thresholds
and whether the profile's timeline was there (a profile read before its trace is advised
again once the trace is indexed)."""
from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict

# Bump when a rule changes what it reports.
ADVISOR_VERSION = 1


class AdviceStore:
    def __init__(self, size: int = 4096):
        self.size = size
        self._mem: OrderedDict[str, dict] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, cache_root: str, key: str, variant: str, compute) -> dict:
        ident = f"{key}.{variant}"
        with self._lock:
            hit = self._mem.get(ident)
            if hit is not None:
                self._mem.move_to_end(ident)
                return hit
        path = os.path.join(cache_root, "advisor", key[:2], f"{ident}.json")
        try:
            with open(path, encoding="utf-8") as fh:
                value = json.load(fh)
        except (OSError, ValueError):
            value = compute()
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
                with open(tmp, "w", encoding="utf-8") as fh:
                    json.dump(value, fh, default=_json_default)
                os.replace(tmp, path)
                with open(path, encoding="utf-8") as fh:  # the same JSON types as a hit
                    value = json.load(fh)
            except OSError:
                pass
        with self._lock:
            self._mem[ident] = value
            while len(self._mem) > self.size:
                self._mem.popitem(last=False)
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
