"""The shared cache location: cache entries published to, and fetched from, an fsspec URL.

`NPU_PROFILER_CACHE_DIR=s3://bucket/prefix` (any fsspec URL; backends, credentials and
bounded timeouts as for remote logdirs, `storage.open_fs`) makes the cache two-level:

    <url>/v<VERSION>/...             the shared cache: the same layout as a local cache
                                     (cache.py), written by every builder
    <local>/v<VERSION>/...           this machine's mirror of it, and where this machine
                                     builds: `$NPU_PROFILER_LOCAL_CACHE_DIR`, else
                                     `<default cache dir>/shared/<sha256(url)[:16]>`

- Builders (a reader process of the local pool, a Dask worker, `npu-profiler cache build`)
  build an entry locally as without a URL, then `publish` it: every file of the entry that
  the URL does not have yet in this version, meta.json last, so an entry whose meta.json is
  visible is complete (each object is written whole). A later stage publishes only what it
  wrote or changed (a record of what is in sync, per entry, next to the local entry:
  `<key[:2]>/.<key>.synced.json`). Derived documents are published when written.
- Readers (TensorBoard) fetch lazily into the local mirror: an entry's meta.json when the
  span is looked up, an Arrow table the first time it is opened (`Profile.local_file`),
  the args side file when a slice's details are asked for, a derived document when it is
  read. A file is downloaded aside and renamed into place.
- A URL that cannot be used (no backend, unreachable, access denied) is found by `probe`
  when a cache is opened in TensorBoard or the CLI: the cache is then local only, with a
  note naming the URL and the reason (`/runs`, the CLI's stderr). A URL that can be read but
  not written is used for reading, with a note that entries built here stay local.

The cache root handed to builders is a `CacheRoot`: the local versioned root as a string
(so every path operation works as before) that carries the versioned URL, also through
pickling into spawned processes and Dask workers.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import uuid

from . import storage

log = logging.getLogger(__name__)

LOCAL_ENV = "NPU_PROFILER_LOCAL_CACHE_DIR"
SYNCED_SUFFIX = ".synced.json"


class CacheRoot(str):
    """A local versioned cache root; `url` is the versioned shared cache it mirrors (or
    None); `publish`: whether builders given this root publish what they build there."""

    url: str | None
    publish: bool

    def __new__(cls, path: str, url: str | None = None, publish: bool = True):
        obj = super().__new__(cls, path)
        obj.url = url
        obj.publish = bool(url) and publish
        return obj

    def __reduce__(self):
        return (CacheRoot, (str(self), self.url, self.publish))


class SharedCacheError(OSError):
    """A file of the shared cache that exists but cannot be fetched (the message names it)."""


def local_dir_for(url: str, default_base: str) -> str:
    """Where this machine mirrors the shared cache at `url` (unversioned)."""
    env = os.environ.get(LOCAL_ENV)
    if env:
        return os.path.abspath(os.path.expanduser(env))
    return os.path.join(default_base, "shared",
                        hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16])


class SharedCache:
    """One shared cache location (a versioned URL): file transfer in both directions."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.display = storage.display_url(self.url)
        self._fs = None
        self._lock = threading.Lock()

    def fs(self):
        with self._lock:
            if self._fs is None:
                self._fs = storage.open_fs(self.url)
            return self._fs

    def remote(self, rel: str) -> str:
        return f"{self.fs()[1]}/{rel}"

    def _reason(self, exc: BaseException) -> str:
        return storage._reason(exc, self.url.partition("://")[0].lower())

    # ---- is it usable? ---------------------------------------------------------------------
    def probe(self) -> tuple[bool, str | None]:
        """(readable, note): tries to write and remove one small object, else to list.
        Bounded by the backend's timeouts (storage.BACKEND_OPTIONS)."""
        try:
            fs, root = self.fs()
        except storage.StorageError as exc:
            return False, f"shared cache {exc}"
        probe = f"{root}/.probe-{uuid.uuid4().hex}"
        try:
            fs.pipe_file(probe, b"")
        except Exception as write_exc:
            try:
                fs.ls(root)
            except FileNotFoundError:
                pass  # nothing published yet (or no such bucket: then nothing to read)
            except Exception as exc:
                return False, (f"shared cache {self.display} cannot be used"
                               f" ({self._reason(exc)})")
            return True, (f"shared cache {self.display} is read-only here"
                          f" ({self._reason(write_exc)}); profiles read here stay in the"
                          f" local cache")
        with contextlib.suppress(Exception):
            fs.rm_file(probe)
        return True, None

    # ---- reading side --------------------------------------------------------------------
    def fetch(self, rel: str, local_path: str) -> bool:
        """Download `rel` to `local_path` (aside, then renamed); False when the shared cache
        has no such file. Other failures raise SharedCacheError naming the file."""
        tmp = f"{local_path}.tmp-{os.getpid()}-{threading.get_ident()}"
        try:
            fs, _ = self.fs()
            os.makedirs(os.path.dirname(local_path), exist_ok=True)
            fs.get_file(self.remote(rel), tmp)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            return False
        except Exception as exc:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise SharedCacheError(f"{self.display}/{rel}: cannot fetch from the shared"
                                   f" cache: {self._reason(exc)}") from exc
        os.replace(tmp, local_path)
        return True

    def fetch_many(self, files: dict[str, str]) -> int:
        """Download several small files (rel -> local path) with concurrent requests on
        async backends; those the shared cache lacks are skipped. How many were fetched.
        A failure of the whole batch raises SharedCacheError."""
        if not files:
            return 0
        try:
            fs, root = self.fs()
            got = fs.cat([self.remote(r) for r in files], on_error="omit")
        except Exception as exc:
            raise SharedCacheError(f"{self.display}: cannot fetch from the shared cache:"
                                   f" {self._reason(exc)}") from exc
        by_remote = {fs._strip_protocol(self.remote(r)): r for r in files}
        n = 0
        for name, data in got.items():
            rel = by_remote.get(fs._strip_protocol(name))
            if rel is None or not isinstance(data, bytes):
                continue
            path = files[rel]
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
            n += 1
        return n

    # ---- writing side (builders) -----------------------------------------------------------
    def publish(self, local_root: str, rels: list[str], last: str | None = None) -> None:
        """Upload the local files `rels` (relative to `local_root`), then `last`. Raises
        SharedCacheError at the first failure (nothing after it is uploaded)."""
        order = [r for r in rels if r != last] + ([last] if last else [])
        try:
            fs, _ = self.fs()
            for rel in order:
                fs.put_file(os.path.join(local_root, *rel.split("/")), self.remote(rel))
        except Exception as exc:
            raise SharedCacheError(f"{self.display}: cannot publish to the shared cache:"
                                   f" {self._reason(exc)}") from exc

    # ---- maintenance ---------------------------------------------------------------------
    def files(self) -> dict[str, int]:
        """Every file of this version: relative name -> size (one recursive listing)."""
        fs, root = self.fs()
        try:
            found = fs.find(root, detail=True)
        except FileNotFoundError:
            return {}
        prefix = root.rstrip("/") + "/"
        return {name[len(prefix):]: int(info.get("size") or 0) for name, info in found.items()
                if name.startswith(prefix)}

    def read_many(self, rels: list[str]) -> dict[str, bytes]:
        """The contents of several small files (concurrently on async backends)."""
        if not rels:
            return {}
        fs, _ = self.fs()
        got = fs.cat([self.remote(r) for r in rels], on_error="omit")
        strip = len(self.fs()[1]) + 1
        return {fs._strip_protocol(k)[strip:]: v for k, v in got.items()}

    def versions(self) -> list[str]:
        """The version directories (`v2`, `v3`, ...) next to this one."""
        fs, root = self.fs()
        parent = root.rsplit("/", 1)[0]
        try:
            names = [e.rstrip("/").rsplit("/", 1)[-1] for e in fs.ls(parent, detail=False)]
        except FileNotFoundError:
            return []
        return sorted(n for n in names if n.startswith("v") and n[1:].isdigit())

    def remove(self, all_versions: bool = False) -> list[str]:
        """Delete this version (or every version); the URLs removed."""
        fs, root = self.fs()
        parent = root.rsplit("/", 1)[0]
        names = self.versions() if all_versions else [root.rsplit("/", 1)[-1]]
        removed = []
        for name in names:
            try:
                fs.rm(f"{parent}/{name}", recursive=True)
            except FileNotFoundError:
                continue
            removed.append(f"{self.display.rsplit('/', 1)[0]}/{name}")
        return removed


_instances: dict[str, SharedCache] = {}
_instances_lock = threading.Lock()


def shared_cache(url: str) -> SharedCache:
    """One SharedCache per versioned URL in a process (reader processes open many caches:
    each `ProfileCache.at` reuses the backend's connection pool)."""
    with _instances_lock:
        found = _instances.get(url)
        if found is None:
            found = _instances[url] = SharedCache(url)
        return found


# ---- what is in sync, per entry -----------------------------------------------------------
def synced_path(entry_dir: str) -> str:
    parent, key = os.path.split(entry_dir)
    return os.path.join(parent, f".{key}{SYNCED_SUFFIX}")


def read_synced(entry_dir: str) -> dict[str, list[int]]:
    try:
        with open(synced_path(entry_dir), encoding="utf-8") as fh:
            doc = json.load(fh)
        return doc if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def mark_synced(entry_dir: str, names: list[str]) -> None:
    """Record that these files of the entry are the shared cache's copies (size, mtime)."""
    doc = read_synced(entry_dir)
    for name in names:
        with contextlib.suppress(OSError):
            st = os.stat(os.path.join(entry_dir, name))
            doc[name] = [st.st_size, st.st_mtime_ns]
    tmp = f"{synced_path(entry_dir)}.tmp-{os.getpid()}-{threading.get_ident()}"
    with contextlib.suppress(OSError):
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
        os.replace(tmp, synced_path(entry_dir))


def unsynced(entry_dir: str) -> list[str]:
    """The entry's files that differ from what was last published or fetched."""
    doc = read_synced(entry_dir)
    out = []
    for name in sorted(os.listdir(entry_dir)):
        if ".tmp-" in name or name.startswith("."):
            continue
        try:
            st = os.stat(os.path.join(entry_dir, name))
        except OSError:
            continue
        if doc.get(name) != [st.st_size, st.st_mtime_ns]:
            out.append(name)
    return out
