"""Cache maintenance: what a cache holds and removing it (`npu-profiler cache info` /
`cache clear`). Reads the layout `cache.py` writes (`<key[:2]>/<key>` entries, their
`.tmp-` build directories, `<key>.early-trace` traces decoded beside a views stage (waiting
for, or left over from, a timeline stage), `<kind>/<key[:2]>/<key><suffix>` derived documents, one
directory per cache version) and nothing else."""
from __future__ import annotations

import json
import os
import shutil

from .cache import EARLY_TRACE, META_FILE, VERSION, WORK_INFIX, ProfileCache, listdir_or_empty, \
    meta_trace_ready


def stats(cache: ProfileCache) -> dict:
    """What this cache holds: complete entries (and how many have their timeline),
    unfinished build directories, derived documents per kind, bytes on disk, and the
    directories of other cache versions (stale: nothing reads them)."""
    entries = timelines = unfinished = early = 0
    derived: dict[str, int] = {}
    size = 0
    for dirpath, dirnames, filenames in os.walk(cache.root):
        rel = os.path.relpath(dirpath, cache.root).split(os.sep)
        size += sum(_size(os.path.join(dirpath, f)) for f in filenames)
        if len(rel) == 2 and len(rel[0]) == 2:  # <key[:2]>/<key>[.tmp-*]
            if WORK_INFIX in rel[1]:
                unfinished += 1
            elif rel[1].endswith(EARLY_TRACE):
                early += 1
            elif META_FILE in filenames:
                entries += 1
                timelines += meta_trace_ready(os.path.join(dirpath, META_FILE))
        elif len(rel) == 2 and len(rel[1]) == 2:  # <kind>/<key[:2]>/<key><suffix>
            derived[rel[0]] = derived.get(rel[0], 0) + len(filenames)
    parent = os.path.dirname(cache.root)
    others = sorted(d for d in listdir_or_empty(parent)
                    if d.startswith("v") and d[1:].isdigit() and d != f"v{VERSION}")
    out = {"root": str(cache.root), "version": VERSION, "entries": entries,
           "entries_with_timeline": timelines, "unfinished": unfinished,
           "early_traces": early,
           "derived": dict(sorted(derived.items())), "bytes": size,
           "other_versions": others}
    if cache.shared is not None:
        out["shared"] = shared_stats(cache)
    return out

def shared_stats(cache: ProfileCache) -> dict:
    """The same figures for the shared cache (one listing, then every meta.json)."""
    files = cache.shared.files()
    metas = [rel for rel in files if rel.count("/") == 2 and len(rel.split("/")[0]) == 2
             and rel.endswith(f"/{META_FILE}")]
    derived: dict[str, int] = {}
    for rel in files:
        parts = rel.split("/")
        if len(parts) == 3 and len(parts[1]) == 2 and len(parts[0]) != 2:
            derived[parts[0]] = derived.get(parts[0], 0) + 1
    timelines = 0
    for data in cache.shared.read_many(metas).values():
        try:
            timelines += bool(json.loads(data).get("meta", {}).get("trace_ready"))
        except (ValueError, AttributeError):
            pass
    return {"url": cache.shared.display, "entries": len(metas),
            "entries_with_timeline": timelines, "bytes": sum(files.values()),
            "derived": dict(sorted(derived.items())),
            "other_versions": [v for v in cache.shared.versions() if v != f"v{VERSION}"]}


def clear(cache: ProfileCache, all_versions: bool = False) -> list[str]:
    """Remove this version's entries (and with `all_versions`, every version's); the
    directories removed. Entries open elsewhere stay readable until closed (POSIX)."""
    parent = os.path.dirname(cache.root)
    names = ([d for d in listdir_or_empty(parent) if d.startswith("v") and d[1:].isdigit()]
             if all_versions else [os.path.basename(cache.root)])
    removed = []
    for name in sorted(names):
        path = os.path.join(parent, name)
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    os.makedirs(cache.root, exist_ok=True)
    if cache.publishes:  # a read-only shared cache is left alone (cache info says so)
        removed += cache.shared.remove(all_versions)
    return removed


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0
