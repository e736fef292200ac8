"""A bounded, thread-safe least-recently-used map: the one memory cache of the plugin.

Every in-memory cache (open profiles, analysis results, timeline indexes and their
searches, per-rank summaries) is an `LRU`, bounded by a number of entries and, when a
`weigh` function is given, by the summed weight of the entries (e.g. rows or bytes).

`get_or_compute(key, compute)` computes outside the lock, so a slow computation never
blocks lookups of other keys; two threads missing the same key at once may both compute
it, and the later result wins (results are deterministic, so this only costs time).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING = object()


class LRU(Generic[K, V]):
    def __init__(self, max_entries: int, max_weight: float | None = None,
                 weigh: Callable[[V], float] | None = None):
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        if (max_weight is None) != (weigh is None):
            raise ValueError("max_weight and weigh go together")
        self.max_entries = max_entries
        self.max_weight = max_weight
        self._weigh = weigh
        self._items: OrderedDict[K, tuple[V, float]] = OrderedDict()
        self._weight = 0.0
        self._lock = threading.Lock()

    def get(self, key: K, default=None):
        """The value for `key` (now the most recently used), or `default`."""
        with self._lock:
            item = self._items.get(key, _MISSING)
            if item is _MISSING:
                return default
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: K, value: V) -> None:
        """Store `value`, then evict least recently used entries until within bounds. The
        newest entry is kept even when it alone weighs more than `max_weight`."""
        w = float(self._weigh(value)) if self._weigh is not None else 0.0
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._weight -= old[1]
            self._items[key] = (value, w)
            self._weight += w
            while len(self._items) > 1 and (
                    len(self._items) > self.max_entries
                    or (self.max_weight is not None and self._weight > self.max_weight)):
                _, (_, ew) = self._items.popitem(last=False)
                self._weight -= ew

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            value = compute()
            self.put(key, value)
        return value

    def pop(self, key: K, default=None):
        with self._lock:
            item = self._items.pop(key, _MISSING)
            if item is _MISSING:
                return default
            self._weight -= item[1]
            return item[0]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weight = 0.0

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    @property
    def weight(self) -> float:
        with self._lock:
            return self._weight

    def keys(self) -> list[K]:
        """Keys from least to most recently used (a snapshot)."""
        with self._lock:
            return list(self._items)
