"""On-disk cache of normalized profiles, keyed by the source files' path, size and mtime.

This module is the only one that knows the layout; every other module (the reader
processes included) asks a `ProfileCache` for an entry's directory, opens an entry or
writes one through it:

    <root>/v<VERSION>/<key[:2]>/<key>/            one entry per profile (span)
        meta.json                                 meta, file errors, row count per table
        <table>.arrow                             one Arrow IPC file per table
        <args side file>                          the trace args (`meta.args_file`)
    <root>/v<VERSION>/<kind>/<key[:2]>/<key><suffix>   derived results kept per entry
                                                  (e.g. kind "distributed": rank summaries)

Entries are built in a temporary sibling directory and renamed into place, so a crash never
leaves a half-written entry; an entry is complete when its meta.json exists. A restart
memory-maps the Arrow files instead of parsing again.

The root is outside the logdir: `$NPU_PROFILER_CACHE_DIR`, else
`${XDG_CACHE_HOME:-~/.cache}/tensorboard-plugin-npu-profiler`. When it cannot be written, a
private temporary directory is used for this process only.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading

from .lru import LRU
from .model import FileError, Profile, ProfileMeta, table_path, write_table

# Bump when readers or the model change what they store.
# 2: typed meta (ProfileMeta), msprof step windows as the `step_windows` table.
# 3: SQLite exports read (tables from *.db where the text output lacks them).
VERSION = 3
APP_DIR = "tensorboard-plugin-npu-profiler"
META_FILE = "meta.json"


def default_root() -> str:
    env = os.environ.get("NPU_PROFILER_CACHE_DIR")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, APP_DIR)


def entry_key(producer: str, root: str, device_id, fingerprint: list) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([VERSION, producer, os.path.abspath(root), device_id,
                         sorted(fingerprint)]).encode())
    return h.hexdigest()[:32]


class ProfileCache:
    def __init__(self, root: str | None = None):
        root = root or default_root()
        self.root = os.path.join(root, f"v{VERSION}")
        self.writable = _ensure_writable(self.root)
        if not self.writable:
            self.root = tempfile.mkdtemp(prefix="npu-profiler-cache-")
            self.writable = True

    @classmethod
    def at(cls, versioned_root: str) -> "ProfileCache":
        """The cache whose versioned root (`cache.root`) is already known, as a reader
        process gets it: no version directory added, no probe."""
        cache = cls.__new__(cls)
        cache.root = versioned_root
        cache.writable = True
        return cache

    def entry_dir(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key)

    def has(self, key: str) -> bool:
        return os.path.isfile(os.path.join(self.entry_dir(key), META_FILE))

    def new_work_dir(self, key: str) -> str:
        parent = os.path.join(self.root, key[:2])
        os.makedirs(parent, exist_ok=True)
        return tempfile.mkdtemp(prefix=f"{key}.tmp-", dir=parent)

    def commit(self, key: str, work_dir: str, profile: Profile) -> str:
        """Write what is left of the profile into work_dir and move it into place."""
        write_profile(work_dir, profile)
        final = self.entry_dir(key)
        try:
            os.rename(work_dir, final)
        except OSError:
            # Another process built the same entry first; keep theirs.
            shutil.rmtree(work_dir, ignore_errors=True)
        return final

    def load(self, key: str) -> Profile:
        return open_profile(self.entry_dir(key))

    def update(self, key: str, profile: Profile) -> None:
        """Write a later load stage's tables and meta into the existing entry."""
        write_profile(self.entry_dir(key), profile)

    # ---- derived results kept next to the entries ---------------------------------------
    def derived_path(self, kind: str, key: str, suffix: str) -> str:
        return os.path.join(self.root, kind, key[:2], f"{key}{suffix}")

    def read_derived(self, kind: str, key: str, suffix: str):
        """The JSON document stored for an entry, or None when there is none (or it is
        unreadable: it is then computed again)."""
        try:
            with open(self.derived_path(kind, key, suffix), encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def write_derived(self, kind: str, key: str, suffix: str, doc) -> None:
        """Store a JSON document for an entry (write-aside-and-rename; best effort: a
        read-only cache only means it is computed again next time)."""
        path = self.derived_path(kind, key, suffix)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(doc, fh)
            os.replace(tmp, path)
        except OSError:
            pass


class DerivedStore:
    """A JSON document derived from each cache entry (an analysis result), kept three ways:
    a memory LRU, then the entry's derived file (`ProfileCache.read_derived`), then
    `compute()` once, stored in both. A compute that returns None stores nothing."""

    def __init__(self, kind: str, size: int):
        self.kind = kind
        self._mem: LRU[tuple[str, str], object] = LRU(size)

    def get(self, cache_root: str, key: str, suffix: str, compute):
        hit = self._mem.get((key, suffix))
        if hit is not None:
            return hit
        cache = ProfileCache.at(cache_root)
        doc = cache.read_derived(self.kind, key, suffix)
        if doc is None:
            doc = compute()
            if doc is None:
                return None
            cache.write_derived(self.kind, key, suffix, doc)
        self._mem.put((key, suffix), doc)
        return doc


def _ensure_writable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, delete=True)
        probe.close()
        return True
    except OSError:
        return False


def write_profile(directory: str, profile: Profile) -> None:
    """Write the tables not yet on disk in `directory`, then meta.json (written last: an
    entry is complete when its meta.json exists)."""
    for name in profile.table_names():
        path = table_path(directory, name)
        if profile.directory == directory and os.path.exists(path):
            continue
        write_table(path, profile.table(name))
    doc = {"meta": profile.meta.to_json(), "errors": [e.to_json() for e in profile.errors],
           "rows": {k: int(v) for k, v in profile.rows.items()}}
    tmp = os.path.join(directory, f"{META_FILE}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        # Values copied from the producer's files are JSON already; anything else is kept
        # as its repr rather than losing the entry.
        json.dump(doc, fh, default=repr)
    os.replace(tmp, os.path.join(directory, META_FILE))


def open_profile(directory: str) -> Profile:
    """A cached profile: meta now, tables memory-mapped on first use."""
    with open(os.path.join(directory, META_FILE), encoding="utf-8") as fh:
        doc = json.load(fh)
    return Profile(meta=ProfileMeta.from_json(doc.get("meta", {})),
                   errors=[FileError(**e) for e in doc.get("errors", [])],
                   directory=directory, rows=dict(doc.get("rows", {})))
