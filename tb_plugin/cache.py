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
# 3: SQLite exports read (tables from *.db where the text output lacks them); PMU counters as
#    pmu_* columns; kineto operators as torch-tb-profiler builds them; step phases, op-type
#    statistics, AI CPU tasks, the MindSpore data pipeline tables.
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

    def mirror_root(self) -> str:
        """Where local mirrors of remote logdirs live (`storage.Mirror`; `remote/` is no
        entry prefix: those are two hex digits)."""
        return os.path.join(self.root, "remote")

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

    # ---- maintenance (npu-profiler cache info / clear) ---------------------------------
    def stats(self) -> dict:
        """What this cache holds: complete entries (and how many have their timeline),
        unfinished build directories, derived documents per kind, bytes on disk, and the
        directories of other cache versions (stale: nothing reads them)."""
        entries = timelines = unfinished = 0
        derived: dict[str, int] = {}
        size = 0
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel = os.path.relpath(dirpath, self.root).split(os.sep)
            size += sum(_size(os.path.join(dirpath, f)) for f in filenames)
            if len(rel) == 2 and len(rel[0]) == 2:  # <key[:2]>/<key>[.tmp-*]
                if ".tmp-" in rel[1]:
                    unfinished += 1
                elif META_FILE in filenames:
                    entries += 1
                    timelines += _trace_ready(os.path.join(dirpath, META_FILE))
            elif len(rel) == 2 and len(rel[1]) == 2:  # <kind>/<key[:2]>/<key><suffix>
                derived[rel[0]] = derived.get(rel[0], 0) + len(filenames)
        parent = os.path.dirname(self.root)
        others = sorted(d for d in _listdir(parent)
                        if d.startswith("v") and d[1:].isdigit() and d != f"v{VERSION}")
        return {"root": self.root, "version": VERSION, "entries": entries,
                "entries_with_timeline": timelines, "unfinished": unfinished,
                "derived": dict(sorted(derived.items())), "bytes": size,
                "other_versions": others}

    def clear(self, all_versions: bool = False) -> list[str]:
        """Remove this version's entries (and with `all_versions`, every version's); the
        directories removed. Entries open elsewhere stay readable until closed (POSIX)."""
        parent = os.path.dirname(self.root)
        names = ([d for d in _listdir(parent) if d.startswith("v") and d[1:].isdigit()]
                 if all_versions else [os.path.basename(self.root)])
        removed = []
        for name in sorted(names):
            path = os.path.join(parent, name)
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
        os.makedirs(self.root, exist_ok=True)
        return removed

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


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _trace_ready(meta_path: str) -> bool:
    try:
        with open(meta_path, encoding="utf-8") as fh:
            return bool(json.load(fh).get("meta", {}).get("trace_ready"))
    except (OSError, ValueError, AttributeError):
        return False


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
