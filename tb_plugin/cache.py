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
memory-maps the Arrow files instead of parsing again. A builder holds a lock on the directory
it builds in (`building`, `extending`); the next build of the same entry removes what a
builder that is gone left behind.

The root is outside the logdir: `$NPU_PROFILER_CACHE_DIR`, else
`${XDG_CACHE_HOME:-~/.cache}/tensorboard-plugin-npu-profiler`. When it cannot be written, a
private temporary directory is used for this process only. `$NPU_PROFILER_CACHE_DIR` may
also be an fsspec URL (s3://bucket/prefix): a shared cache that builders publish entries to
and TensorBoard fetches files from as views need them (`cache_store.py`); the local root is
then this machine's mirror of it.

Entry keys are the same on every machine: they hash the span's files by
`storage.source_path` (a remote logdir's files by their URL, not by where they are mirrored).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading

import msgspec

from . import build_locks, cache_store, storage
from .cache_store import CacheRoot, SharedCache, SharedCacheError
from .lru import LRU
from .model import FileError, Profile, ProfileMeta
from .table_files import WRITE_ASIDE, table_path, write_table

# Bump when readers or the model change what they store.
# 2: typed meta (ProfileMeta), msprof step windows as the `step_windows` table.
# 3: SQLite exports read (tables from *.db where the text output lacks them); PMU counters as
#    pmu_* columns; kineto operators as torch-tb-profiler builds them; step phases, op-type
#    statistics, AI CPU tasks, the MindSpore data pipeline tables.
VERSION = 3
log = logging.getLogger(__name__)
APP_DIR = "tensorboard-plugin-npu-profiler"
META_FILE = "meta.json"


CACHE_ENV = "NPU_PROFILER_CACHE_DIR"


def _base_root() -> str:
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, APP_DIR)


def default_root() -> str:
    """The local (unversioned) cache root: `$NPU_PROFILER_CACHE_DIR`, or this machine's
    mirror of it when that is a URL, else the user's cache directory."""
    env = os.environ.get(CACHE_ENV)
    if env and storage.is_url(env):
        return cache_store.local_dir_for(env, _base_root())
    if env:
        return os.path.abspath(os.path.expanduser(env))
    return _base_root()


def entry_key(producer: str, root: str, device_id, fingerprint: list) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([VERSION, producer, storage.source_path(root), device_id,
                         sorted((storage.source_path(p), *rest) for p, *rest in fingerprint)]
                        ).encode())
    return h.hexdigest()[:32]


class ProfileCache:
    """`root`: a local directory or a shared cache URL (default `$NPU_PROFILER_CACHE_DIR`);
    `local`: this machine's directory for a URL (default `cache_store.local_dir_for`).
    `note` says why a URL is not used, or only read (shown in /runs and by the CLI)."""

    def __init__(self, root: str | None = None, local: str | None = None):
        root = root or os.environ.get(CACHE_ENV) or ""
        url = root.rstrip("/") if storage.is_url(root) else None
        if url is not None:
            base = os.path.abspath(os.path.expanduser(local)) if local else \
                cache_store.local_dir_for(url, _base_root())
        else:
            base = os.path.abspath(os.path.expanduser(root)) if root else default_root()
        self.note: str | None = None
        self.shared: SharedCache | None = None
        self.publishes = False  # builders of this cache publish to the shared cache
        self.url = url
        if url is not None:
            shared = SharedCache(f"{url}/v{VERSION}")
            readable, self.note = shared.probe()
            if readable:
                self.shared = shared
                self.publishes = self.note is None
            else:
                self.note += f"; using the local cache {base}"
            if self.note:
                log.warning("%s", self.note)
        path = os.path.join(base, f"v{VERSION}")
        self.writable = _ensure_writable(path)
        if not self.writable:
            path = tempfile.mkdtemp(prefix="npu-profiler-cache-")
            self.writable = True
        self.root = CacheRoot(path, self.shared.url if self.shared else None,
                              publish=self.publishes)

    @classmethod
    def at(cls, versioned_root: str) -> "ProfileCache":
        """The cache whose versioned root (`cache.root`) is already known, as a reader
        process gets it: no version directory added, no probe. A `CacheRoot` with a URL
        brings its shared cache; when its local path cannot be used on this machine (a
        Dask worker elsewhere), this machine's own mirror of that URL is used."""
        cache = cls.__new__(cls)
        cache.note = None
        url = getattr(versioned_root, "url", None)
        cache.url = url.rsplit("/", 1)[0] if url else None
        cache.shared = cache_store.shared_cache(url) if url else None
        cache.publishes = cache.shared is not None and getattr(versioned_root, "publish", True)
        root = versioned_root
        if url and not os.path.isdir(root) and not _ensure_writable(root):
            base = cache_store.local_dir_for(cache.url, _base_root())
            root = CacheRoot(os.path.join(base, os.path.basename(str(root))), url,
                             publish=cache.publishes)
        cache.root = root
        cache.writable = True
        return cache

    def mirror_root(self) -> str:
        """Where local mirrors of remote logdirs live (`storage.Mirror`; `remote/` is no
        entry prefix: those are two hex digits)."""
        return os.path.join(self.root, "remote")

    def entry_dir(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key)

    def has(self, key: str) -> bool:
        """Whether the entry is complete here, or in the shared cache (then its meta.json
        is fetched: the rest of it comes when a view opens it)."""
        if os.path.isfile(os.path.join(self.entry_dir(key), META_FILE)):
            return True
        try:
            return self._fetch_entry_file(key, META_FILE)
        except SharedCacheError as exc:  # built here instead
            log.warning("%s", exc)
            return False

    def prefetch(self, keys: list[str], kind: str | None = None, suffix: str = "") -> None:
        """Fetch, in one batch of concurrent requests, what `has` (the entries' meta.json)
        or `read_derived` (with `kind`, `suffix`) would fetch one by one for these keys:
        thousands of ranks cost a few seconds, not a round trip each."""
        if self.shared is None:
            return
        want = {}
        for key in keys:
            if kind is None:
                path = os.path.join(self.entry_dir(key), META_FILE)
                rel = self._entry_rel(key, META_FILE)
            else:
                path = self.derived_path(kind, key, suffix)
                rel = self._derived_rel(kind, key, suffix)
            if not os.path.isfile(path):
                want[rel] = path
        try:
            self.shared.fetch_many(want)
        except SharedCacheError as exc:  # each is tried again alone
            log.warning("%s", exc)
            return
        if kind is None:
            for rel, path in want.items():
                if os.path.isfile(path):
                    cache_store.mark_synced(os.path.dirname(path), [META_FILE])

    def _entry_rel(self, key: str, name: str = "") -> str:
        return f"{key[:2]}/{key}" + (f"/{name}" if name else "")

    def _fetch_entry_file(self, key: str, name: str) -> bool:
        """Fetch one file of an entry from the shared cache (False: it has none). A shared
        cache that fails here is reported as SharedCacheError."""
        if self.shared is None:
            return False
        directory = self.entry_dir(key)
        if not self.shared.fetch(self._entry_rel(key, name), os.path.join(directory, name)):
            return False
        cache_store.mark_synced(directory, [name])
        return True

    def _publish(self, key: str, names: list[str] | None = None) -> None:
        """Upload the entry's files the shared cache lacks (or `names`), meta.json last
        (best effort: a failure is logged, and the entry stays usable here)."""
        if not self.publishes:
            return
        directory = self.entry_dir(key)
        names = cache_store.unsynced(directory) if names is None else names
        if not names:
            return
        try:
            self.shared.publish(self.root, [self._entry_rel(key, n) for n in names],
                                last=self._entry_rel(key, META_FILE)
                                if META_FILE in names else None)
        except SharedCacheError as exc:
            log.warning("%s (entry %s stays local)", exc, key)
            return
        cache_store.mark_synced(directory, names)

    @contextlib.contextmanager
    def building(self, key: str):
        """A new work directory for the key's entry (stage 1), locked while this process
        builds it, removed unless `commit` moved it into place; None when another process
        built the entry meanwhile. First, the unfinished build directories of the same key:
        one whose builder is at work (a second TensorBoard or a `cache build` on the same
        cache, a Dask worker) is waited for, up to `build_locks.BUILDER_WAIT_S`, instead of reading the
        same files twice; one whose builder is gone (a reader killed, TensorBoard stopped
        mid-build) is removed: each can hold hundreds of MB of spilled tables."""
        parent = os.path.join(self.root, key[:2])
        os.makedirs(parent, exist_ok=True)
        prefix = f"{key}{WORK_INFIX}"
        waited = False
        for name in listdir_or_empty(parent):
            if name.startswith(prefix):
                waited |= build_locks.remove_abandoned(os.path.join(parent, name),
                                                       wait_s=build_locks.BUILDER_WAIT_S)
        if waited and self.has(key):  # the builder waited for committed it
            yield None
            return
        with _locked_work(parent, key) as work:
            yield work

    @contextlib.contextmanager
    def extending(self, key: str):
        """The existing entry's directory, locked while this process adds a later stage to
        it (a second builder of the same entry waits, then finds the stage done). What an
        interrupted build left in it is removed first: an entry holds only files, so a
        directory in it is a reader's scratch (the parallel trace ranges), and a file
        written aside (`table_files.WRITE_ASIDE`) a table that was being written."""
        directory = self.entry_dir(key)
        with build_locks.locked(directory, wait=True):
            for name in listdir_or_empty(directory):
                path = os.path.join(directory, name)
                if os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
                elif WRITE_ASIDE in name:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
            yield directory

    def early_trace_dir(self, key: str) -> str:
        """Where the trace tables decoded beside the views stage wait for the timeline
        stage (`early_trace`): `<key[:2]>/<key>.early-trace`, next to the entry."""
        return os.path.join(self.root, key[:2], f"{key}{EARLY_TRACE}")

    @contextlib.contextmanager
    def building_early_trace(self, key: str):
        """A locked work directory for the key's early trace, renamed to `early_trace_dir`
        by the caller when complete and removed otherwise; None when another process is
        at it, or has done it. A killed builder's leftover is removed first."""
        parent = os.path.join(self.root, key[:2])
        os.makedirs(parent, exist_ok=True)
        if _sweep_work(parent, f"{key}{EARLY_TRACE}") or os.path.isdir(self.early_trace_dir(key)):
            yield None
            return
        with _locked_work(parent, f"{key}{EARLY_TRACE}") as work:
            yield work

    def take_early_trace(self, key: str) -> str | None:
        """The key's finished early trace directory, after waiting for one that is being
        decoded (up to `build_locks.BUILDER_WAIT_S`); None when there is none."""
        _sweep_work(os.path.join(self.root, key[:2]), f"{key}{EARLY_TRACE}",
                    wait_s=build_locks.BUILDER_WAIT_S)
        path = self.early_trace_dir(key)
        return path if os.path.isdir(path) else None

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
        self._publish(key)
        return final

    def load(self, key: str) -> Profile:
        """The entry's profile (raises OSError / ValueError when it is unreadable). From a
        shared cache: its tables are fetched when first opened, and a local meta.json
        without the timeline is replaced by the shared one when that has it."""
        directory = self.entry_dir(key)
        if self.shared is None:
            return open_profile(directory)
        if not os.path.isfile(os.path.join(directory, META_FILE)):
            if not self._fetch_entry_file(key, META_FILE):
                raise FileNotFoundError(f"cache entry {key} is neither here nor in the shared"
                                        f" cache {self.shared.display}")
        profile = open_profile(directory)
        if not profile.meta.trace_ready and self._newer_meta(key):
            profile = open_profile(directory)
        profile.fetch = lambda name: self._fetch_or_fail(key, name)
        return profile

    def _newer_meta(self, key: str) -> bool:
        """Replace the local meta.json by the shared cache's when that one has the timeline."""
        directory = self.entry_dir(key)
        tmp = os.path.join(directory, f".shared-{META_FILE}")
        try:
            if not self.shared.fetch(self._entry_rel(key, META_FILE), tmp):
                return False
            if not meta_trace_ready(tmp):
                return False
            os.replace(tmp, os.path.join(directory, META_FILE))
        except SharedCacheError as exc:
            log.warning("%s", exc)
            return False
        finally:
            with contextlib.suppress(OSError):
                os.remove(tmp)
        cache_store.mark_synced(directory, [META_FILE])
        return True

    def _fetch_or_fail(self, key: str, name: str) -> None:
        if not self._fetch_entry_file(key, name):
            raise SharedCacheError(f"{self.shared.display}/{self._entry_rel(key, name)}:"
                                   f" missing from the shared cache")

    def update(self, key: str, profile: Profile) -> None:
        """Write a later load stage's tables and meta into the existing entry."""
        write_profile(self.entry_dir(key), profile)
        self._publish(key)

    def has_shared(self, keys: list[str]) -> set[str]:
        """Which of these entries the shared cache has complete (one listing)."""
        if self.shared is None:
            return set()
        files = self.shared.files()
        return {k for k in keys if self._entry_rel(k, META_FILE) in files}

    # ---- derived results kept next to the entries ---------------------------------------
    def derived_path(self, kind: str, key: str, suffix: str) -> str:
        return os.path.join(self.root, kind, key[:2], f"{key}{suffix}")

    def read_derived(self, kind: str, key: str, suffix: str):
        """The JSON document stored for an entry, or None when there is none (or it is
        unreadable: it is then computed again)."""
        path = self.derived_path(kind, key, suffix)
        try:
            if not os.path.isfile(path) and self.shared is not None:
                self.shared.fetch(self._derived_rel(kind, key, suffix), path)
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        try:  # msgspec: ~2x Python's json (thousands of rank summaries for one answer)
            return msgspec.json.decode(data)
        except msgspec.DecodeError:  # json.dump's NaN / Infinity tokens, or damage
            try:
                return json.loads(data)
            except ValueError:
                return None

    def _derived_rel(self, kind: str, key: str, suffix: str) -> str:
        return f"{kind}/{key[:2]}/{key}{suffix}"

    def write_derived(self, kind: str, key: str, suffix: str, doc) -> None:
        """Store a JSON document for an entry (write-aside-and-rename; best effort: a
        read-only cache only means it is computed again next time)."""
        path = self.derived_path(kind, key, suffix)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(doc))  # (`dumps` runs the C encoder, `dump` Python's)
            os.replace(tmp, path)
        except OSError:
            return
        if self.publishes:
            try:
                self.shared.publish(self.root, [self._derived_rel(kind, key, suffix)])
            except SharedCacheError as exc:
                log.warning("%s", exc)


class DerivedStore:
    """A JSON document derived from each cache entry (an analysis result), kept three ways:
    a memory LRU, then the entry's derived file (`ProfileCache.read_derived`), then
    `compute()` once, stored in both. A compute that returns None stores nothing."""

    def __init__(self, kind: str, size: int, hold=None, memory: LRU | None = None):
        """`hold(doc)`: the form kept in memory (default: the document itself); `memory`:
        an LRU shared with other stores of the same documents (default: its own)."""
        self.kind = kind
        self._mem: LRU[tuple[str, str], object] = memory if memory is not None else LRU(size)
        self._hold = hold

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
        if self._hold is not None:
            doc = self._hold(doc)
        self._mem.put((key, suffix), doc)
        return doc


WORK_INFIX = ".tmp-"  # <key>.tmp-*: a stage-1 build directory
EARLY_TRACE = ".early-trace"  # <key>.early-trace: a trace decoded beside the views stage


@contextlib.contextmanager
def _locked_work(parent: str, name: str):
    """A new directory `<name>.tmp-*` in `parent`, locked while the block runs and removed
    unless the block moved it away (committed). Made under another name and locked before
    it takes the name that sweeps for abandoned ones look for: a directory by that name is
    always locked while it is in use."""
    made = tempfile.mkdtemp(prefix=f"{name}.new-", dir=parent)
    with build_locks.locked(made, wait=True):
        work = made.replace(f"{name}.new-", f"{name}{WORK_INFIX}", 1)
        os.rename(made, work)
        try:
            yield work
        finally:
            if os.path.isdir(work):  # not moved into place
                shutil.rmtree(work, ignore_errors=True)


def _sweep_work(parent: str, name: str, wait_s: float = 0.0) -> bool:
    """Remove the abandoned `<name>.tmp-*` work directories of `parent` (`_locked_work`),
    after waiting up to `wait_s` for live ones; whether a live one is still there."""
    live = False
    for entry in listdir_or_empty(parent):
        if entry.startswith(f"{name}{WORK_INFIX}"):
            path = os.path.join(parent, entry)
            build_locks.remove_abandoned(path, wait_s=wait_s)
            live |= os.path.isdir(path)  # still there: its builder is at work
    return live


def listdir_or_empty(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def meta_trace_ready(meta_path: str) -> bool:
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
        # A table of an entry from a shared cache that was never fetched here is there
        # already (`profile.fetch`): fetching it only to write it back would move it twice.
        if profile.directory == directory and (os.path.exists(path) or profile.fetch):
            continue
        write_table(path, profile.table(name))
    doc = {"meta": profile.meta.to_json(), "errors": [e.to_json() for e in profile.errors],
           "rows": {k: int(v) for k, v in profile.rows.items()}}
    tmp = os.path.join(directory, f"{META_FILE}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        # Values copied from the producer's files are JSON already; anything else is kept
        # as its repr rather than losing the entry.
        fh.write(json.dumps(doc, default=repr))  # (the C encoder; `dump` runs Python's)
    os.replace(tmp, os.path.join(directory, META_FILE))


def open_profile(directory: str) -> Profile:
    """A cached profile: meta now, tables memory-mapped on first use."""
    with open(os.path.join(directory, META_FILE), encoding="utf-8") as fh:
        doc = json.load(fh)
    return Profile(meta=ProfileMeta.from_json(doc.get("meta", {})),
                   errors=[FileError(**e) for e in doc.get("errors", [])],
                   directory=directory, rows=dict(doc.get("rows", {})))
