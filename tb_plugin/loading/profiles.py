"""The open-profile store: cache entries opened in TensorBoard's process (meta read, tables
memory-mapped on first use), the most recently used ones kept open."""
from __future__ import annotations

from ..cache import ProfileCache
from ..lru import LRU
from ..model import Profile

MAX_OPEN = 64


class OpenProfiles:
    def __init__(self, cache: ProfileCache, max_open: int = MAX_OPEN):
        self.cache = cache
        self._open: LRU[str, Profile] = LRU(max_open)

    def get(self, key: str) -> Profile:
        """The profile of a cache entry (raises OSError / ValueError when unreadable)."""
        prof = self._open.get(key)
        if prof is None:
            prof = self.cache.load(key)
            self._open.put(key, prof)
        return prof

    def put(self, key: str, profile: Profile) -> None:
        self._open.put(key, profile)

    def forget(self, key: str) -> None:
        """Drop an open profile, so the next `get` reads the entry again (after a later load
        stage rewrote it)."""
        self._open.pop(key)
