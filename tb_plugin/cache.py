"""On-disk cache of normalized profiles, keyed by the source files' path, size and mtime.

Layout: `<root>/v<VERSION>/<key[:2]>/<key>/` holding `meta.json` (meta, errors, table list)
and one Arrow IPC file per table (`<table>.arrow`), plus the trace args side file. Entries
are built in a temporary sibling directory and renamed into place, so a crash never leaves
a half-written entry. A restart memory-maps the Arrow files instead of parsing again.

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

from .model import FileError, Profile, ProfileMeta, table_path, write_table

# Bump when readers or the model change what they store.
# 2: typed meta (ProfileMeta), msprof step windows as the `step_windows` table.
VERSION = 2
APP_DIR = "tensorboard-plugin-npu-profiler"


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
        self._lock = threading.Lock()

    def entry_dir(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key)

    def has(self, key: str) -> bool:
        return os.path.isfile(os.path.join(self.entry_dir(key), "meta.json"))

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
    tmp = os.path.join(directory, f"meta.json.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        # Values copied from the producer's files are JSON already; anything else is kept
        # as its repr rather than losing the entry.
        json.dump(doc, fh, default=repr)
    os.replace(tmp, os.path.join(directory, "meta.json"))


def open_profile(directory: str) -> Profile:
    """A cached profile: meta now, tables memory-mapped on first use."""
    with open(os.path.join(directory, "meta.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    return Profile(meta=ProfileMeta.from_json(doc.get("meta", {})),
                   errors=[FileError(**e) for e in doc.get("errors", [])],
                   directory=directory, rows=dict(doc.get("rows", {})))
