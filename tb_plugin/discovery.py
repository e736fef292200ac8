"""logdir -> runs -> workers -> spans, by each producer's directory layout.

Discovery looks at names and sizes only (never file contents), so it stays cheap with
hundreds of runs. Layout rules are data (`SPAN_DIR_RULES`), one entry per producer:

- torch_npu  `{worker}_{digits[.digits]}_ascend_pt/ASCEND_PROFILER_OUTPUT/`; run = parent dir.
- MindSpore  `{worker}_{digits}_ascend_ms/ASCEND_PROFILER_OUTPUT/`; run = parent dir.
- msprof     `PROF_{n}_{ts}_{id}/` with `mindstudio_profiler_output/`, `device_{N}/{summary,
             timeline}/` or a SQLite export `msprof_{ts}.db` (`MSPROF_DB`); run = parent dir,
             worker = `device{N}`, span = the PROF timestamp.
             PROF dirs inside a torch_npu/MindSpore span belong to that span and are skipped.
- kineto     `{worker}[.{span digits}].pt.trace.json[.gz]` files; run = the containing dir.
- MindSpore ≤2.3 (MindInsight era) `profiler*/` holding flat `{kind}_{id}.*` files
             (`LEGACY_MS_MARKERS`); run = parent dir, one worker `device{id}` per id, span
             `default`. The only content discovery reads: a tiny `profiler_info_{id}.json`
             for its `rank_id`.

Worker naming: a torch_npu/MindSpore span with `profiler_info_{rank}.json` is worker
`rank{rank}`; otherwise the worker is the name part before the timestamp.

Safety: nothing outside the logdir is read. A symlink whose target resolves outside it is
not followed (its run gets an error saying so) unless the user opts in with
`NPU_PROFILER_FOLLOW_EXTERNAL_SYMLINKS=1`; `inside_logdir` is the one check every later
open of a path from data or parameters repeats. File names that are not valid UTF-8 (the
OS hands them over surrogate-escaped) give run/worker/span names with `\\xNN` escapes
(`printable`), so every name the API returns is valid text and addresses the same thing.
"""
from __future__ import annotations

import dataclasses
import os
import re
import stat

from .natural_sort import natural_key
from .readers import SpanSource

ASCEND_OUTPUT = "ASCEND_PROFILER_OUTPUT"
SPAN_DIR_RULES = {
    # suffix -> (producer, name regex with groups worker and span)
    "_ascend_pt": ("torch_npu", re.compile(r"^(?P<worker>.*?)_(?P<span>\d+(?:\.\d+)?)_ascend_pt$")),
    "_ascend_ms": ("mindspore", re.compile(r"^(?P<worker>.*?)_(?P<span>\d+(?:\.\d+)?)_ascend_ms$")),
}
PROF_DIR = re.compile(r"^PROF_(?P<n>\d+)_(?P<ts>\d+)_(?P<id>[0-9a-zA-Z]+)$")
KINETO_FILE = re.compile(r"^(?P<worker>.*?)(?:\.(?P<span>\d+))?\.pt\.trace\.json(?:\.gz)?$")
# Kineto traces saved under other names by tools (e.g. HTA's `{name}_{ts}_trace.json.gz`).
KINETO_FILE_LOOSE = re.compile(r"^(?P<worker>.+?)(?:_(?P<span>\d+))?_trace\.json(?:\.gz)?$")
# Raw binary data and logs inside span dirs: never read, so never listed or fingerprinted.
SKIPPED_SUBDIRS = {"FRAMEWORK", "logs", "data", "sqlite", "mindstudio_profiler_log"}
PROFILER_INFO = re.compile(r"^profiler_info(?:_(?P<rank>\d+))?\.json$")
DEVICE_DIR = re.compile(r"^device_(?P<id>\d+)$")
# CANN's SQLite export (`msprof --type=db`): a PROF_* dir with only this is a profile too.
MSPROF_DB = re.compile(r"^msprof_\d+\.db$")
# MindSpore <=2.3: MindInsight's PROFILER_DIRECTORY_REGEX, and the files that mark a span.
LEGACY_MS_DIR = re.compile(r"^profiler")
LEGACY_MS_MARKERS = [
    re.compile(r"^step_trace_raw_(?P<id>\d+)_detail_time\.csv$"),
    re.compile(r"^aicore_intermediate_(?P<id>\d+)_type\.csv$"),
    re.compile(r"^output_timeline_data_(?P<id>\d+)\.txt$"),
    re.compile(r"^(?:ascend_)?timeline_display_(?P<id>\d+)\.json$"),
    # A dir profiled with data_process=True only (readers/minddata.py).
    re.compile(r"^minddata_pipeline_raw_(?P<id>\d+)\.csv$"),
    re.compile(r"^pipeline_profiling_(?P<id>\d+)\.json$"),
]

# Bounds: discovery must finish quickly whatever the logdir holds.
MAX_DIRS = 200_000
MAX_DEPTH = 32

FOLLOW_EXTERNAL_SYMLINKS_ENV = "NPU_PROFILER_FOLLOW_EXTERNAL_SYMLINKS"
EXTERNAL_SYMLINK = (f"symlink to a target outside the logdir, not followed"
                    f" (set {FOLLOW_EXTERNAL_SYMLINKS_ENV}=1 to follow such links)")


def follow_external_symlinks() -> bool:
    """The user's opt-in to reading symlinked runs whose targets are outside the logdir."""
    return os.environ.get(FOLLOW_EXTERNAL_SYMLINKS_ENV, "") == "1"


def inside_logdir(path: str, logdir: str) -> bool:
    """Whether `path` may be read as part of `logdir`: it is under the logdir by name (no
    `..` out of it), and, unless the user opted in to following symlinks out of the logdir,
    also with every symlink resolved."""
    root = os.path.abspath(logdir)
    full = os.path.abspath(path)
    if not _is_under(full, root):
        return False
    if follow_external_symlinks():
        return True
    return _is_under(os.path.realpath(full), os.path.realpath(root))


def _is_under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def printable(name: str) -> str:
    """`name` as valid Unicode text: bytes of a file name that are not UTF-8 (which Python
    surrogate-escapes) become `\\xNN`, other lone surrogates `\\uNNNN`."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        pass
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")



@dataclasses.dataclass
class Worker:
    name: str
    producer: str
    rank: int | None
    device: str  # npu | gpu | cpu (best guess from the layout; readers confirm)
    spans: dict[str, SpanSource] = dataclasses.field(default_factory=dict)

    def sorted_spans(self) -> list[str]:
        return sorted(self.spans, key=_span_sort_key)


@dataclasses.dataclass
class Run:
    name: str
    path: str
    workers: dict[str, Worker] = dataclasses.field(default_factory=dict)
    # What discovery skipped in this run and why: [{"path", "message"}], paths relative to
    # the logdir (the shape of a reader's FileError, so /runs lists both alike).
    errors: list[dict] = dataclasses.field(default_factory=list)

    def spans(self) -> list[SpanSource]:
        return [w.spans[s] for w in self.workers.values() for s in w.sorted_spans()]

    def sorted_workers(self) -> list[Worker]:
        return sorted(self.workers.values(),
                      key=lambda w: (w.rank is None, w.rank if w.rank is not None else 0,
                                     natural_key(w.name)))


def _span_sort_key(s: str):
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, 0.0, s)


class _Walker:
    """os.walk with symlinks followed, loops detected, and bounds."""

    def __init__(self, logdir: str):
        self.logdir = logdir
        self.seen: set[tuple[int, int]] = set()
        self.count = 0
        self.notes: list[str] = []

    def walk(self):
        stack = [(self.logdir, 0)]
        while stack:
            path, depth = stack.pop()
            try:
                st = os.stat(path)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in self.seen:
                if os.path.islink(path):
                    self.notes.append(f"symlink loop skipped: {os.path.relpath(path, self.logdir)}")
                continue
            self.seen.add(key)
            self.count += 1
            if self.count > MAX_DIRS:
                self.notes.append(f"stopped after {MAX_DIRS} directories")
                return
            try:
                entries = list(os.scandir(path))
            except OSError:
                continue
            dirs, files = [], []
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=True):
                        dirs.append(e.name)
                    elif e.is_file(follow_symlinks=True):
                        files.append(e.name)
                except OSError:
                    continue
            descend = yield path, sorted(dirs), sorted(files)
            if descend is None:
                descend = dirs
            if depth < MAX_DEPTH:
                for d in sorted(descend, reverse=True):
                    stack.append((os.path.join(path, d), depth + 1))


def _list_files(root: str, logdir: str, limit: int = 20000) -> list[str]:
    """Every regular file under root (bounded), for the cache key. Symlinks out of the
    logdir are left out (a reader that looks for such a file reports it)."""
    out = []
    seen = set()
    framework = _is_framework_span(root)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        try:
            st = os.stat(dirpath)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirnames[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        # Raw CANN data under a torch_npu span is not read; skip it (it can be huge).
        dirnames[:] = [d for d in dirnames
                       if not (framework and PROF_DIR.match(d))
                       and d not in SKIPPED_SUBDIRS
                       and _followable(os.path.join(dirpath, d), logdir)]
        for f in filenames:
            full = os.path.join(dirpath, f)
            if not _followable(full, logdir):
                continue
            out.append(full)
            if len(out) >= limit:
                return sorted(out)
    return sorted(out)


def _followable(path: str, logdir: str) -> bool:
    """False for a symlink whose target is outside the logdir (only links need the check:
    discovery only goes into directories that are inside)."""
    return not os.path.islink(path) or inside_logdir(path, logdir)


def _span_like(name: str) -> bool:
    """Whether a directory name is a span of some producer (its run is the parent dir)."""
    return (any(name.endswith(suffix) for suffix in SPAN_DIR_RULES)
            or bool(PROF_DIR.match(name)) or bool(LEGACY_MS_DIR.match(name)))


def _skip_external(logdir: str, parent: str, name: str, is_dir: bool,
                   runs: dict[str, "Run"], notes: list[str]) -> None:
    """Record a symlink out of the logdir that is not followed: in the run it would have
    belonged to (a span's run is its parent, any other directory is a run of its own)."""
    full = os.path.join(parent, name)
    run_path = full if is_dir and not _span_like(name) else parent
    rel = _rel(full, logdir)
    _run_for(logdir, run_path, runs).errors.append({"path": rel, "message": EXTERNAL_SYMLINK})
    notes.append(f"{rel}: {EXTERNAL_SYMLINK}")


def _rel(path: str, logdir: str) -> str:
    return printable(os.path.relpath(path, logdir).replace(os.sep, "/"))


def _is_framework_span(root: str) -> bool:
    return root.endswith("_ascend_pt") or root.endswith("_ascend_ms")


def discover(logdir: str) -> tuple[dict[str, Run], list[str]]:
    """Scan `logdir`; returns (runs by name, notes about skipped things)."""
    logdir = os.path.abspath(logdir)
    runs: dict[str, Run] = {}
    walker = _Walker(logdir)
    gen = walker.walk()
    try:
        item = next(gen)
    except StopIteration:
        return runs, walker.notes
    while True:
        path, dirs, files = item
        descend = []
        for d in dirs:
            full = os.path.join(path, d)
            if not _followable(full, logdir):
                _skip_external(logdir, path, d, True, runs, walker.notes)
                continue
            if _add_framework_span(logdir, path, d, full, runs):
                continue
            if PROF_DIR.match(d):
                _add_msprof(logdir, path, d, full, runs)
                continue
            if LEGACY_MS_DIR.match(d) and _add_mindspore_legacy(logdir, path, full, runs):
                continue
            descend.append(d)
        for f in files:
            m = KINETO_FILE.match(f) or KINETO_FILE_LOOSE.match(f)
            if m and not _followable(os.path.join(path, f), logdir):
                _skip_external(logdir, path, f, False, runs, walker.notes)
            elif m:
                _add_kineto(logdir, path, f, m, runs)
        try:
            item = gen.send(descend)
        except StopIteration:
            break
    return runs, walker.notes


def _run_for(logdir: str, run_path: str, runs: dict[str, Run]) -> Run:
    name = _rel(run_path, logdir)
    run = runs.get(name)
    if run is None:
        run = runs[name] = Run(name=name, path=run_path)
    return run


def _add_framework_span(logdir, parent, d, full, runs) -> bool:
    for suffix, (producer, rx) in SPAN_DIR_RULES.items():
        if not d.endswith(suffix):
            continue
        m = rx.match(d)
        if not m:
            return False
        out = os.path.join(full, ASCEND_OUTPUT)
        try:
            names = os.listdir(full)
        except OSError:
            return True
        if not os.path.isdir(out):
            # A span whose analysis did not run yet (raw data only): not a profile.
            return True
        if not _followable(out, logdir):
            rel = _rel(out, logdir)
            _run_for(logdir, parent, runs).errors.append(
                {"path": rel, "message": EXTERNAL_SYMLINK})
            return True
        rank = None
        for n in names:
            pm = PROFILER_INFO.match(n)
            if pm and pm.group("rank") is not None:
                rank = int(pm.group("rank"))
        worker_name = f"rank{rank}" if rank is not None else printable(m.group("worker"))
        run = _run_for(logdir, parent, runs)
        w = run.workers.get(worker_name)
        if w is None:
            w = run.workers[worker_name] = Worker(worker_name, producer, rank, "npu")
        span = m.group("span")
        if span in w.spans:  # same timestamp twice (different pid): keep both, disambiguate
            span = printable(f"{span}-{m.group('worker')}")
        w.spans[span] = SpanSource(logdir=logdir, run=run.name, worker=worker_name, span=span,
                                   producer=producer, root=full,
                                   files=tuple(_list_files(full, logdir)), rank=rank)
        return True
    return False


def _add_msprof(logdir, parent, d, full, runs) -> None:
    m = PROF_DIR.match(d)
    try:
        names = os.listdir(full)
    except OSError:
        return
    devices = sorted(int(DEVICE_DIR.match(n).group("id")) for n in names if DEVICE_DIR.match(n))
    has_output = "mindstudio_profiler_output" in names or any(MSPROF_DB.match(n) for n in names)
    usable = []
    for dev in devices:
        dd = os.path.join(full, f"device_{dev}")
        if has_output or os.path.isdir(os.path.join(dd, "summary")) or \
                os.path.isdir(os.path.join(dd, "timeline")):
            usable.append(dev)
    if not usable and has_output:
        usable = [0]
    if not usable:
        return
    run = _run_for(logdir, parent, runs)
    files = tuple(_list_files(full, logdir))
    for dev in usable:
        name = f"device{dev}"
        w = run.workers.get(name)
        if w is None:
            w = run.workers[name] = Worker(name, "msprof", None, "npu")
        span = m.group("ts")
        if span in w.spans:
            span = f"{span}-{m.group('id')}"
        w.spans[span] = SpanSource(logdir=logdir, run=run.name, worker=name, span=span,
                                   producer="msprof", root=full, files=files, device_id=dev)


def _legacy_ids(names) -> list[str]:
    ids = set()
    for n in names:
        for rx in LEGACY_MS_MARKERS:
            m = rx.match(n)
            if m:
                ids.add(m.group("id"))
    return sorted(ids, key=int)


def _legacy_rank(path: str) -> int | None:
    """`rank_id` of a MindSpore `profiler_info_{id}.json` (small file; None if unusable)."""
    import json

    try:
        if os.path.getsize(path) > (1 << 20):
            return None
        with open(path, "rb") as fh:
            doc = json.loads(fh.read())
        rank = doc.get("rank_id") if isinstance(doc, dict) else None
        return int(rank) if rank is not None and int(rank) >= 0 else None
    except (OSError, ValueError, TypeError):
        return None


def _add_mindspore_legacy(logdir, parent, full, runs) -> bool:
    """A MindInsight-era `profiler*` dir: one span per device id; True if it is one."""
    try:
        names = sorted(e.name for e in os.scandir(full) if e.is_file(follow_symlinks=True)
                       and _followable(e.path, logdir))
    except OSError:
        return False
    ids = _legacy_ids(names)
    if not ids:
        return False
    run = _run_for(logdir, parent, runs)
    for dev in ids:
        own = re.compile(rf"_{dev}(?:_[A-Za-z]+)*\.[A-Za-z]+$")
        # Files of this id, plus id-less ones (step_trace_point_info.json).
        files = tuple(os.path.join(full, n) for n in names
                      if own.search(n) or not re.search(r"_\d+(?:_[A-Za-z]+)*\.[A-Za-z]+$", n))
        rank = None
        if f"profiler_info_{dev}.json" in names:
            rank = _legacy_rank(os.path.join(full, f"profiler_info_{dev}.json"))
        name = f"device{dev}"
        w = run.workers.get(name)
        if w is None:
            w = run.workers[name] = Worker(name, "mindspore_legacy", rank, "npu")
        span = "default"
        if span in w.spans:  # two profiler* dirs in one run
            span = printable(os.path.basename(full))
        w.spans[span] = SpanSource(logdir=logdir, run=run.name, worker=name, span=span,
                                   producer="mindspore_legacy", root=full, files=files,
                                   rank=rank, device_id=int(dev))
    return True


def _add_kineto(logdir, parent, f, m, runs) -> None:
    run = _run_for(logdir, parent, runs)
    worker = printable(m.group("worker"))
    w = run.workers.get(worker)
    if w is None:
        w = run.workers[worker] = Worker(worker, "kineto", None, "gpu")
    span = m.group("span") or "default"
    if span in w.spans:
        span = printable(f"{span}-{f}")
    full = os.path.join(parent, f)
    w.spans[span] = SpanSource(logdir=logdir, run=run.name, worker=worker, span=span,
                               producer="kineto", root=full, files=(full,))


def remote_descend(parts: tuple[str, ...]) -> bool:
    """Whether the listing of a remote logdir goes into the directory `parts` (its path
    relative to the logdir): not where discovery never looks, i.e. below MAX_DEPTH,
    SKIPPED_SUBDIRS inside a span, and below the subdirectories of a PROF_* dir inside a
    torch_npu/MindSpore span (raw CANN data; only their names are used)."""
    if len(parts) > MAX_DEPTH:
        return False
    for i, name in enumerate(parts[:-1]):
        framework = _is_framework_span(name)
        if framework or PROF_DIR.match(name):
            below = parts[i + 1:]
            if any(p in SKIPPED_SUBDIRS for p in below):
                return False
            if framework and len(below) >= 2 and PROF_DIR.match(below[0]):
                return False
    return True


def fingerprint(span: SpanSource) -> list[tuple[str, int, int]]:
    """(path, size, mtime_ns) of every input file: the cache key material."""
    out = []
    for p in span.files:
        try:
            st = os.stat(p)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append((p, st.st_size, st.st_mtime_ns))
    return out
