"""Where the files of a logdir are: a local directory, or any fsspec URL (s3://, gs://,
hdfs://, az://, ...) mirrored into the cache directory.

Everything after this module reads local paths (readers memory-map files), so a remote
logdir becomes a local *mirror tree* that discovery walks like any logdir:

    <ProfileCache.mirror_root()>/<sha256(url)[:24]>/
        source.json      the URL this mirror is of
        state.sqlite     one row per listed object: rel path, size, ETag, mtime, fetched
        tree/...         the logdir: directories, and for each object either its fetched
                         copy or a *stub* (a sparse file of the object's size)
        tmp/, locks/     downloads being written; one lock file per object being fetched

- Listing (`RemoteLogdir.sync`, every scan): directory by directory, one level at a time
  (the directories of a level are listed concurrently on async backends), pruned where
  discovery never looks (`discovery.remote_descend`), capped at `MAX_ENTRIES` entries per
  scan (logged, and a note in /runs). Only changed objects (size, ETag or mtime differ from
  the last listing) are touched, so polling costs only the listing.
- Stubs carry the object's size and an mtime derived from its identity
  (`local_mtime_ns`: whole seconds of the remote mtime, ns from a hash of the ETag), so
  discovery's fingerprint (path, size, mtime) and so the cache key change exactly when the
  object changes. Discovery may read the first bytes of JSON files (trace sniffing,
  profiler_info): for `*.json[.gz]` the stub holds the first `HEAD_BYTES` (a ranged
  request), or the whole object when it is at most `SMALL_BYTES`.
- Fetching (`materialize`, in the reader process before a build): every stub under the
  span's root and among its files is downloaded once (write-aside-and-rename, so a reader
  of the old copy keeps it), with a per-object lock so two reader processes never fetch
  the same object twice. A later listing that finds the object changed writes a new stub,
  whose new fingerprint makes the span load again.
- Backends are optional extras (`BACKENDS`); a URL whose backend is not installed, an
  unknown protocol, a wrong credential or an unreachable endpoint raise `StorageError`
  with a message naming the URL and the fix; the loader shows it as a run-level error in
  /runs. S3 timeouts and retries are bounded (`BACKEND_OPTIONS`). Credentials and
  endpoints come from each backend's standard environment (`AWS_*`, `AWS_ENDPOINT_URL`,
  `GOOGLE_APPLICATION_CREDENTIALS`, `AZURE_STORAGE_*`, fsspec's `FSSPEC_<PROTOCOL>_<KEY>`).
- Cache keys: `source_path` names a mirror tree's file by its URL, so the cache key of a
  remote span is the same on every machine whatever its local cache directory (a shared
  cache location, cache_store.py, relies on it).
- Safety: read-only (objects are only listed and read); an entry whose name is not under
  the URL's prefix, or whose key has `.`/`..`/empty parts, backslashes or NULs, is left
  out (a note says so); the mirror holds no symlinks.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import sqlite3
import sys
import threading
import zlib
from typing import Callable, Iterable

log = logging.getLogger(__name__)

_PROTOCOL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*$")  # a URL scheme (RFC 3986)
MAX_ENTRIES = int(os.environ.get("NPU_PROFILER_REMOTE_MAX_ENTRIES", "100000"))
# Directories listed at once on an async backend (one request each).
LIST_CONCURRENCY = 16
HEAD_BYTES = 64 * 1024
SMALL_BYTES = 64 * 1024
# Names whose first bytes discovery may read (trace sniffing, profiler_info json).
HEAD_SUFFIXES = (".json", ".json.gz")


@dataclasses.dataclass(frozen=True)
class Backend:
    extra: str    # pip install tensorboard-plugin-npu-profiler[<extra>]
    package: str  # the module fsspec needs for this protocol
    credentials: str  # where the backend takes credentials from (for error messages)


BACKENDS = {
    "s3": Backend("s3", "s3fs", "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_PROFILE,"
                                " endpoint AWS_ENDPOINT_URL"),
    "s3a": Backend("s3", "s3fs", "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_PROFILE,"
                                 " endpoint AWS_ENDPOINT_URL"),
    "gs": Backend("gcs", "gcsfs", "GOOGLE_APPLICATION_CREDENTIALS or gcloud's default login"),
    "gcs": Backend("gcs", "gcsfs", "GOOGLE_APPLICATION_CREDENTIALS or gcloud's default login"),
    "hdfs": Backend("hdfs", "pyarrow", "a Java runtime and Hadoop's libhdfs: JAVA_HOME,"
                                       " HADOOP_HOME, CLASSPATH, ARROW_LIBHDFS_DIR; Kerberos"
                                       " ticket"),
    "az": Backend("azure", "adlfs", "AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_*"),
    "abfs": Backend("azure", "adlfs", "AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_*"),
    "abfss": Backend("azure", "adlfs", "AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_*"),
    "adl": Backend("azure", "adlfs", "AZURE_STORAGE_* / Azure AD environment"),
}

# Per protocol: constructor options that bound how long an unreachable endpoint can stall a
# scan (a few seconds, not minutes of retries).
_S3_OPTIONS = {"config_kwargs": {"connect_timeout": 3, "read_timeout": 20,
                                  "retries": {"max_attempts": 2, "mode": "standard"}}}
BACKEND_OPTIONS = {"s3": _S3_OPTIONS, "s3a": _S3_OPTIONS}
# Attributes set on the filesystem once opened (s3fs's own retry count is one).
BACKEND_ATTRIBUTES = {"s3": {"retries": 2}, "s3a": {"retries": 2}}


class StorageError(Exception):
    """A logdir that cannot be listed or an object that cannot be fetched: the message
    names the URL and what to do."""


def is_url(logdir: str) -> bool:
    """Whether `logdir` names a remote (fsspec) location rather than a local path."""
    proto, sep, _ = logdir.partition("://")
    return bool(sep) and bool(_PROTOCOL.match(proto)) and proto.lower() not in ("file", "local")


def display_url(url: str) -> str:
    """The URL as shown to users: without credentials (`user:secret@host`)."""
    proto, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    if "@" in host:
        host = host.rsplit("@", 1)[1]
    return f"{proto}{sep}{host}{slash}{path}".rstrip("/")


def open_logdir(logdir: str, mirror_root: str) -> "LocalLogdir | RemoteLogdir":
    """The logdir as the loader uses it (`mirror_root`: `ProfileCache.mirror_root()`).
    No network I/O: a remote logdir's backend is opened, and its errors reported, at its
    first `sync`."""
    if is_url(logdir):
        return RemoteLogdir(logdir, mirror_root)
    if logdir.startswith("file://"):
        logdir = logdir[len("file://"):]
    return LocalLogdir(os.path.abspath(os.path.expanduser(logdir)))


class LocalLogdir:
    """A local directory: read where it is."""

    def __init__(self, path: str):
        self.path = path
        self.display = path

    def sync(self, descend=None) -> list[str]:
        return []


def open_fs(url: str):
    """(filesystem, root path inside it) for `url`, with the bounded options of its
    backend; a missing backend or unknown protocol is a StorageError naming the fix."""
    import fsspec

    proto = url.partition("://")[0].lower()
    backend = BACKENDS.get(proto)
    try:
        fsspec.get_filesystem_class(proto)
    except ImportError as exc:
        if backend is not None:
            raise StorageError(
                f"{display_url(url)}: reading {proto}:// needs the [{backend.extra}] extra:"
                f" pip install 'tensorboard-plugin-npu-profiler[{backend.extra}]'"
                f" ({backend.package} is not installed)") from exc
        raise StorageError(f"{display_url(url)}: the backend for {proto}:// is not"
                           f" installed: {exc}") from exc
    except ValueError as exc:
        raise StorageError(f"{display_url(url)}: no storage backend for {proto}://"
                           f" (fsspec does not know this protocol)") from exc
    try:
        # A new instance: fsspec's instance cache would keep credentials from an
        # environment that has changed since.
        fs, root = fsspec.core.url_to_fs(url, skip_instance_cache=True,
                                         **BACKEND_OPTIONS.get(proto, {}))
    except ImportError as exc:
        raise StorageError(f"{display_url(url)}: a module the {proto}:// backend needs is"
                           f" missing: {exc}") from exc
    except Exception as exc:
        needs = f" ({proto}:// needs {backend.credentials})" if backend is not None else ""
        raise StorageError(f"{display_url(url)}: cannot open: {_reason(exc, proto)}"
                           f"{needs}") from exc
    for name, value in BACKEND_ATTRIBUTES.get(proto, {}).items():
        setattr(fs, name, value)
    return fs, root.rstrip("/")


def _reason(exc: BaseException, proto: str) -> str:
    """What went wrong, in words a user can act on."""
    backend = BACKENDS.get(proto)
    creds = f" (credentials: {backend.credentials})" if backend else ""
    text = f"{exc.__class__.__name__}: {exc}"
    if isinstance(exc, PermissionError):
        return f"access denied{creds}: {exc}"
    if isinstance(exc, FileNotFoundError):
        return f"not found (no such bucket, container or prefix): {exc}"
    name = exc.__class__.__name__
    # asyncio is imported only by the async backends (30 ms the readers' fork server and
    # TensorBoard's start would pay for nothing): an asyncio error implies it is loaded.
    aio = sys.modules.get("asyncio")
    timeouts = (ConnectionError, TimeoutError) + ((aio.TimeoutError,) if aio else ())
    if isinstance(exc, timeouts) or \
            "Connect" in name or "Endpoint" in name or "Timeout" in name:
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        where = f" {endpoint}" if endpoint and backend and backend.extra == "s3" else ""
        return f"cannot reach the storage endpoint{where}: {text}"
    return text


# ---- identity of a remote object -----------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class RemoteFile:
    size: int
    etag: str
    mtime_ns: int  # the local mtime of its mirror copy (`local_mtime_ns`)


def _mtime_seconds(info: dict) -> float | None:
    for field in ("LastModified", "last_modified", "mtime", "updated", "modified", "created",
                  "timeCreated"):
        v = info.get(field)
        if v is None:
            continue
        if isinstance(v, datetime.datetime):
            if v.tzinfo is None:
                v = v.replace(tzinfo=datetime.timezone.utc)
            return v.timestamp()
        if isinstance(v, (int, float)):
            return float(v) / 1000.0 if v > 1e11 else float(v)  # ms (hdfs) or s
        if isinstance(v, str):
            try:
                return datetime.datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def identity(info: dict) -> RemoteFile:
    """Size, ETag (or content hash) and mirror mtime of one listed object. The mirror
    mtime is the remote mtime's whole seconds plus, as ns, a hash of the ETag and exact
    mtime: two versions of an object written within one second still differ."""
    size = int(info.get("size") or 0)
    etag = ""
    for field in ("ETag", "etag", "md5Hash", "content_md5", "crc32c"):
        if info.get(field):
            etag = str(info[field]).strip('"')
            break
    seconds = _mtime_seconds(info)
    token = f"{etag}|{seconds!r}|{size}".encode()
    base = int(seconds) if seconds is not None else 0
    return RemoteFile(size, etag, base * 1_000_000_000 + zlib.crc32(token) % 1_000_000_000)


# ---- listing ------------------------------------------------------------------------------
@dataclasses.dataclass
class Listing:
    files: dict[str, RemoteFile]
    dirs: set[str]
    capped: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)


def _safe_part(part: str) -> bool:
    return bool(part) and part not in (".", "..") and "\\" not in part and "\x00" not in part \
        and len(part.encode("utf-8", "surrogateescape")) <= 255


def _ls_level(fs, paths: list[str]) -> list[list[dict] | BaseException]:
    """`ls` of each directory (concurrently on async backends), errors as values."""
    if getattr(fs, "async_impl", False) and hasattr(fs, "_ls"):
        import asyncio

        from fsspec.asyn import sync

        async def one(p):
            return await fs._ls(p, detail=True)

        async def level():
            out = []
            for i in range(0, len(paths), LIST_CONCURRENCY):
                out += await asyncio.gather(*(one(p) for p in paths[i:i + LIST_CONCURRENCY]),
                                            return_exceptions=True)
            return out

        return sync(fs.loop, level)
    out = []
    for p in paths:
        try:
            out.append(fs.ls(p, detail=True))
        except Exception as exc:
            out.append(exc)
    return out


def list_tree(fs, root: str, descend: Callable[[tuple[str, ...]], bool],
              max_entries: int = MAX_ENTRIES) -> Listing:
    """Every file and directory under `root` (relative '/'-joined names), level by level,
    not going into directories `descend` refuses, stopping after `max_entries` entries.
    An error listing `root` itself is raised; one in a subdirectory becomes a note."""
    with contextlib.suppress(Exception):
        fs.invalidate_cache()  # polling must see new objects, not fsspec's listing cache
    listing = Listing(files={}, dirs=set())
    level = [("", root)]
    count = 0
    while level and not listing.capped:
        results = _ls_level(fs, [p for _, p in level])
        below = []
        for (rel_dir, path), entries in zip(level, results):
            if isinstance(entries, BaseException):
                if not rel_dir:
                    raise entries
                listing.notes.append(f"{rel_dir}: cannot list: {entries}")
                continue
            prefix = path.rstrip("/") + "/"
            for info in entries:
                name = fs._strip_protocol(info.get("name", "")).rstrip("/")
                if name == path.rstrip("/"):
                    continue  # some backends list a directory marker as itself
                part = name[len(prefix):] if name.startswith(prefix) else None
                if part is None or "/" in part or not _safe_part(part):
                    listing.notes.append(f"{rel_dir or '.'}: entry {name!r} left out"
                                         f" (not a plain name under the logdir)")
                    continue
                rel = f"{rel_dir}/{part}" if rel_dir else part
                count += 1
                if count > max_entries:
                    listing.capped = True
                    break
                if info.get("type") == "directory":
                    listing.dirs.add(rel)
                    if descend(tuple(rel.split("/"))):
                        below.append((rel, name))
                elif rel not in listing.files:
                    listing.files[rel] = identity(info)
            if listing.capped:
                break
        level = below
    for rel in [r for r in listing.files if r in listing.dirs]:
        del listing.files[rel]  # an object and a "directory" of one name: keep the directory
        listing.notes.append(f"{rel}: both an object and a directory; the object is left out")
    if listing.capped:
        msg = (f"listing stopped after {max_entries} entries"
               f" (NPU_PROFILER_REMOTE_MAX_ENTRIES); later objects are not shown")
        log.warning("%s: %s", root, msg)
        listing.notes.append(msg)
    return listing


# ---- the mirror --------------------------------------------------------------------------
# mtime_ns: the mtime asked for (`identity`); local_mtime_ns: the one the local filesystem
# stored (it may round), which is what discovery's fingerprint sees.
_SCHEMA = ("CREATE TABLE IF NOT EXISTS files (rel TEXT PRIMARY KEY, size INTEGER,"
           " etag TEXT, mtime_ns INTEGER, fetched INTEGER, local_mtime_ns INTEGER)")


class Mirror:
    """The local mirror of one URL (see the module doc for its layout)."""

    SOURCE = "source.json"
    STATE = "state.sqlite"
    TREE = "tree"

    def __init__(self, directory: str, url: str):
        self.dir = directory
        self.url = url
        self.tree = os.path.join(directory, self.TREE)
        self._fs = None
        self._lock = threading.Lock()

    @classmethod
    def create(cls, mirror_root: str, url: str) -> "Mirror":
        key = hashlib.sha256(url.encode("utf-8")).hexdigest()[:24]
        m = cls(os.path.join(mirror_root, key), url)
        for d in (m.tree, os.path.join(m.dir, "tmp"), os.path.join(m.dir, "locks")):
            os.makedirs(d, exist_ok=True)
        src = os.path.join(m.dir, cls.SOURCE)
        if not os.path.isfile(src):
            _write_atomic(src, json.dumps({"url": url}).encode())
        return m

    @classmethod
    def of_tree(cls, tree: str) -> "Mirror | None":
        """The mirror whose tree is `tree` (a span's logdir), or None for a local logdir."""
        if os.path.basename(os.path.normpath(tree)) != cls.TREE:
            return None
        directory = os.path.dirname(os.path.normpath(tree))
        try:
            with open(os.path.join(directory, cls.SOURCE), encoding="utf-8") as fh:
                url = json.load(fh)["url"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return cls(directory, url)

    def fs(self):
        with self._lock:
            if self._fs is None:
                self._fs = open_fs(self.url)
            return self._fs

    def remote(self, rel: str) -> str:
        return f"{self.fs()[1]}/{rel}"

    def local(self, rel: str) -> str:
        return os.path.join(self.tree, *rel.split("/"))

    @contextlib.contextmanager
    def db(self):
        con = sqlite3.connect(os.path.join(self.dir, self.STATE), timeout=60)
        try:
            con.execute(_SCHEMA)
            yield con
            con.commit()
        finally:
            con.close()

    # -- listing side (the scan, in TensorBoard's process) --
    def update(self, listing: Listing) -> list[str]:
        """Bring the tree in line with a listing: new or changed objects get a stub (with
        its head where discovery may read it), removed ones are deleted (not when the
        listing was capped). Returns notes."""
        fs, _ = self.fs()
        notes = list(listing.notes)
        with self.db() as con:
            known = {r: (s, e, m, lm) for r, s, e, m, lm in con.execute(
                "SELECT rel, size, etag, mtime_ns, local_mtime_ns FROM files")}
        for d in sorted(listing.dirs):
            path = self.local(d)
            if os.path.isfile(path):
                os.remove(path)
            os.makedirs(path, exist_ok=True)
        changed = [rel for rel, rf in listing.files.items()
                   if known.get(rel, (None,) * 4)[:3] != (rf.size, rf.etag, rf.mtime_ns)
                   or not self._local_is(rel, rf.size, known[rel][3])]
        heads = self._heads(fs, {r: listing.files[r] for r in changed}, notes)
        rows = []
        for rel in changed:
            rf = listing.files[rel]
            if rel.endswith(HEAD_SUFFIXES) and rel not in heads:
                continue  # left out until its first bytes can be read (next scan)
            head, whole = heads.get(rel, (b"", False))
            try:
                local_mtime = self._write_stub(rel, rf, head)
            except OSError as exc:
                notes.append(f"{rel}: cannot write its local copy: {exc}")
                continue
            rows.append((rel, rf.size, rf.etag, rf.mtime_ns, int(whole), local_mtime))
        gone = [] if listing.capped else [r for r in known if r not in listing.files]
        for rel in gone:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                os.remove(self.local(rel))
        with self.db() as con:
            con.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)", rows)
            con.executemany("DELETE FROM files WHERE rel = ?", [(r,) for r in gone])
        if not listing.capped:
            self._prune_dirs(listing)
        return notes

    def _local_is(self, rel: str, size: int, local_mtime_ns: int | None) -> bool:
        """Whether the local file is the recorded version's stub or copy (a fetch that
        raced with a change may have left another version: then it is written again)."""
        try:
            st = os.stat(self.local(rel))
        except OSError:
            return False
        return st.st_size == size and st.st_mtime_ns == local_mtime_ns

    def _heads(self, fs, files: dict[str, RemoteFile], notes: list[str]
               ) -> dict[str, tuple[bytes, bool]]:
        """First bytes (whole content when small) of the objects discovery may read."""
        want = [r for r in files if r.endswith(HEAD_SUFFIXES)]
        if not want:
            return {}
        paths = [self.remote(r) for r in want]
        ends = [files[r].size if files[r].size <= SMALL_BYTES else HEAD_BYTES for r in want]
        try:
            got = fs.cat_ranges(paths, [0] * len(paths), ends, on_error="return")
        except Exception as exc:
            got = [exc] * len(paths)
        out = {}
        for rel, end, data in zip(want, ends, got):
            if isinstance(data, BaseException) or not isinstance(data, bytes):
                notes.append(f"{rel}: cannot read its first bytes (tried again next scan):"
                             f" {data}")
                continue
            whole = files[rel].size <= SMALL_BYTES and len(data) == files[rel].size
            out[rel] = (data[:end], whole)
        return out

    def _write_stub(self, rel: str, rf: RemoteFile, head: bytes) -> int:
        """Write the stub (write-aside-and-rename); the mtime the filesystem stored."""
        path = self.local(rel)
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = self._tmp(rel)
        with open(tmp, "wb") as fh:
            fh.write(head[:rf.size])
            fh.truncate(rf.size)  # sparse: a stub costs no disk beyond its head
        os.utime(tmp, ns=(rf.mtime_ns, rf.mtime_ns))
        local_mtime = os.stat(tmp).st_mtime_ns
        os.replace(tmp, path)
        return local_mtime

    def _tmp(self, rel: str) -> str:
        h = hashlib.sha1(rel.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return os.path.join(self.dir, "tmp", f"{h}.{os.getpid()}.{threading.get_ident()}")

    def _prune_dirs(self, listing: Listing) -> None:
        """Remove local directories the listing no longer has (a deleted run must vanish)."""
        keep = set(listing.dirs)
        for rel in listing.files:
            parts = rel.split("/")
            keep.update("/".join(parts[:i]) for i in range(1, len(parts)))
        for dirpath, dirnames, _ in os.walk(self.tree, topdown=False):
            rel = os.path.relpath(dirpath, self.tree).replace(os.sep, "/")
            if rel != "." and rel not in keep:
                shutil.rmtree(dirpath, ignore_errors=True)

    # -- fetching side (a reader process, before a build) --
    def fetch(self, paths: Iterable[str]) -> None:
        """Download every stub among `paths` (files, or directories: everything under
        them) once. Raises StorageError naming the first object that cannot be fetched."""
        rels = set()
        with self.db() as con:
            for p in paths:
                rel = os.path.relpath(os.path.abspath(p), self.tree).replace(os.sep, "/")
                if rel.startswith(".."):
                    continue
                if rel == ".":
                    q = con.execute("SELECT rel FROM files WHERE fetched = 0")
                else:
                    q = con.execute("SELECT rel FROM files WHERE fetched = 0 AND (rel = ? OR"
                                    " (rel > ? AND rel < ?))", (rel, rel + "/", rel + "0"))
                rels.update(r for (r,) in q)
        for rel in sorted(rels):
            self._fetch_one(rel)

    def _fetch_one(self, rel: str) -> None:
        lock = os.path.join(self.dir, "locks",
                            hashlib.sha1(rel.encode("utf-8", "surrogateescape")).hexdigest())
        with open(lock, "a") as lf:
            fcntl.flock(lf, fcntl.LOCK_EX)  # another reader may be fetching it right now
            try:
                with self.db() as con:
                    row = con.execute("SELECT size, mtime_ns, fetched FROM files WHERE rel = ?",
                                      (rel,)).fetchone()
                if row is None or row[2]:
                    return
                _, mtime_ns, _ = row
                fs, _ = self.fs()
                tmp = self._tmp(rel)
                try:
                    fs.get_file(self.remote(rel), tmp)
                except Exception as exc:
                    with contextlib.suppress(OSError):
                        os.remove(tmp)
                    proto = self.url.partition("://")[0].lower()
                    raise StorageError(f"{display_url(self.url)}/{rel}: cannot fetch:"
                                       f" {_reason(exc, proto)}") from exc
                # The listed mtime, so the fingerprint stays that of the listing; if the
                # object changed meanwhile, the next listing writes a new stub.
                os.utime(tmp, ns=(mtime_ns, mtime_ns))
                local_mtime = os.stat(tmp).st_mtime_ns
                os.replace(tmp, self.local(rel))
                with self.db() as con:
                    con.execute("UPDATE files SET fetched = 1, local_mtime_ns = ? WHERE rel = ?",
                                (local_mtime, rel))
            finally:
                fcntl.flock(lf, fcntl.LOCK_UN)


class RemoteLogdir:
    """A logdir at an fsspec URL: listed every scan into its local mirror tree (`path`)."""

    def __init__(self, url: str, mirror_root: str):
        self.url = url.rstrip("/")
        self.display = display_url(self.url)
        self.mirror = Mirror.create(mirror_root, self.url)
        self.path = self.mirror.tree

    def sync(self, descend: Callable[[tuple[str, ...]], bool]) -> list[str]:
        """List the URL (not going into directories `descend` refuses: discovery's
        `remote_descend`) and update the mirror tree; returns notes. Raises StorageError."""
        fs, root = self.mirror.fs()
        proto = self.url.partition("://")[0].lower()
        try:
            listing = list_tree(fs, root, descend)
        except StorageError:
            raise
        except Exception as exc:
            raise StorageError(f"{self.display}: cannot list: {_reason(exc, proto)}") from exc
        return [f"{self.display}: {n}" for n in self.mirror.update(listing)]


_MIRROR_PATH = re.compile(r"^(.*[/\\][0-9a-f]{24})[/\\]" + Mirror.TREE + r"(?:[/\\](.*))?$")
_mirror_urls: dict[str, str | None] = {}


def source_path(path: str) -> str:
    """A name of a logdir file that is the same on every machine (cache keys hash it): for
    a file of a remote logdir's mirror tree, its URL (the mirror's place depends on the
    local cache directory); else its absolute path."""
    path = os.path.abspath(path)
    m = _MIRROR_PATH.match(path)
    if m is None:
        return path
    directory = m.group(1)
    if directory not in _mirror_urls:
        mirror = Mirror.of_tree(os.path.join(directory, Mirror.TREE))
        _mirror_urls[directory] = mirror.url if mirror is not None else None
    url = _mirror_urls[directory]
    if url is None:
        return path
    rel = (m.group(2) or "").replace(os.sep, "/")
    return f"{url}/{rel}" if rel else url


def materialize(logdir: str, paths: Iterable[str]) -> None:
    """Make the files a reader needs local: for a mirror tree, fetch the stubs among
    `paths` (and under those that are directories); nothing for a local logdir."""
    mirror = Mirror.of_tree(logdir)
    if mirror is not None:
        mirror.fetch(paths)


def _write_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)
