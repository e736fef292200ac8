"""logdir -> runs -> workers -> spans, by each producer's directory layout.

Discovery looks at names and sizes, so it stays cheap with hundreds of runs; the only
contents it reads are small and memoised per (path, size, mtime): the first few KB of an
unknown `*.json[.gz]` (traces of any name, see that section below) and the rank list of a
msprof-analyze `cluster_analysis_output/`. Layout rules are data (`SPAN_DIR_RULES`), one
entry per producer:

- torch_npu  `{worker}_{digits[.digits]}_ascend_pt/ASCEND_PROFILER_OUTPUT/`; run = parent dir.
- MindSpore  `{worker}_{digits}_ascend_ms/ASCEND_PROFILER_OUTPUT/`; run = parent dir.
- msprof     `PROF_{n}_{ts}_{id}/` with `mindstudio_profiler_output/`, `device_{N}/{summary,
             timeline}/` or a SQLite export `msprof_{ts}.db` (`MSPROF_DB`); run = parent dir,
             worker = `device{N}`, span = the PROF timestamp.
             PROF dirs inside a torch_npu/MindSpore span belong to that span and are skipped.
- kineto     `{worker}[.{span digits}].pt.trace.json[.gz]` files; run = the containing dir.
- any other `*.json[.gz]` that sniffs as a Chrome trace: producer `kineto` or
             `chrome_trace`; run = the containing dir, worker = the file name without
             `.json[.gz]`, span `default` (docs/formats.md §1.7).
- msprof-analyze `cluster_analysis_output/` with cluster csv/json/db files: a run of its
             own, worker `rank{N}` per rank of the cluster tables, span `cluster` (§2.26).
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
import math
import os
import re
import stat

from .natural_sort import natural_key
from .span_source import SpanSource

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
    logdir are left out (a reader that looks for such a file reports it).

    Directory entries say themselves whether they are links (no lstat per file): a scan
    lists every file of every span each poll, ~17,000 files for 1,000 ranks."""
    out: list[str] = []
    seen: set[tuple[int, int]] = set()
    framework = _is_framework_span(root)

    def visit(dirpath: str) -> bool:  # False once the limit is reached
        try:
            st = os.stat(dirpath)
            with os.scandir(dirpath) as it:
                entries = list(it)
        except OSError:
            return True
        if (st.st_dev, st.st_ino) in seen:
            return True
        seen.add((st.st_dev, st.st_ino))
        subdirs = []
        for e in entries:
            try:
                is_dir = e.is_dir()  # a link to a directory counts as one, as os.walk does
            except OSError:
                is_dir = False
            followable = not e.is_symlink() or inside_logdir(e.path, logdir)
            if is_dir:
                # Raw CANN data under a torch_npu span is not read; skip it (it can be huge).
                if (followable and not (framework and PROF_DIR.match(e.name))
                        and e.name not in SKIPPED_SUBDIRS):
                    subdirs.append(e.path)
            elif followable:
                out.append(e.path)
                if len(out) >= limit:
                    return False
        return all(visit(d) for d in subdirs)

    visit(root)
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
    sniff_budget = [MAX_SNIFFS_PER_SCAN]
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
            if d == CLUSTER_OUTPUT_DIR and _add_cluster_analysis(logdir, full, runs):
                continue
            if d in NOT_SEARCHED_DIRS:
                continue
            descend.append(d)
        for f in files:
            m = KINETO_FILE.match(f) or KINETO_FILE_LOOSE.match(f)
            if m and not _followable(os.path.join(path, f), logdir):
                _skip_external(logdir, path, f, False, runs, walker.notes)
            elif m:
                _add_kineto(logdir, path, f, m, runs)
            else:
                _add_any_trace(logdir, path, f, runs, sniff_budget)
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


# ---- traces of any name ----------------------------------------------------------------------
# A `*.json[.gz]` that no layout rule claims becomes a run when its first bytes look like a
# Chrome trace (docs/formats.md §1.7). Each unknown file is read once per (path, size,
# mtime): the verdict is memoised, so polling a logdir re-reads nothing.

SNIFF_BYTES = 8192            # text looked at per file
SNIFF_GZ_BYTES = 4096         # compressed bytes read from a `.gz` (inflated to <= SNIFF_BYTES)
SNIFF_MEMO_ENTRIES = 65536
MAX_SNIFFS_PER_SCAN = 20000   # new files sniffed in one scan; the rest wait for the next one
ANY_TRACE_FILE = re.compile(r"\.json(?:\.gz)?$", re.I)
# Files whose names say what they are (and that they are not traces): never opened.
NOT_A_TRACE = re.compile(
    r"^(?:profiler_info(?:_\d+)?|profiler_metadata|communication(?:_matrix)?|"
    r"cluster_communication(?:_matrix)?|communication_group|package(?:-lock)?|tsconfig|"
    r"meta|step_trace_point_info|info)\.json$", re.I)
# Directories never searched for traces: ours and TensorBoard's caches, VCS and node folders.
NOT_SEARCHED_DIRS = {"tensorboard-plugin-npu-profiler", ".git", "node_modules", "__pycache__"}
# Top-level keys a kineto trace writes before `traceEvents` (its header can be longer than
# the sniffed prefix: HTA's distributedInfo with pg_config runs to 16 KB).
KINETO_HEADER_KEYS = {"schemaVersion", "deviceProperties", "distributedInfo", "record_shapes",
                      "trace_id", "cupti_version", "cuda_runtime_version", "cuda_driver_version",
                      "with_flops", "with_stack", "profile_memory", "roctracer_version"}
# Evidence of kineto events in the prefix (categories / step markers).
KINETO_EVENT_HINT = re.compile(r'"cat"\s*:\s*"(?:cpu_op|kernel|cuda_runtime|python_function|'
                               r'user_annotation|gpu_memcpy|gpu_memset|cuda_driver)"'
                               r'|"ProfilerStep#\d+"')
# Process names of an Ascend timeline (torch_npu's `export_chrome_trace`, msprof JSON):
# such a trace is read by the generic reader, which knows these processes.
ASCEND_PROCESS_HINT = re.compile(r'"name"\s*:\s*"(?:Ascend Hardware|CANN|AscendCL|HCCL|'
                                 r'Overlap Analysis|Step Trace|NPU MEM)"')

TRACE_EVENTS_LIST = re.compile(r'"traceEvents"\s*:\s*\[')

_sniff_memo = None  # LRU (path, size, mtime_ns) -> "kineto" | "chrome_trace" | None


def _sniff_cache():
    global _sniff_memo
    if _sniff_memo is None:
        from .lru import LRU

        _sniff_memo = LRU(SNIFF_MEMO_ENTRIES)
    return _sniff_memo


def read_prefix(path: str) -> bytes:
    """At most SNIFF_BYTES of the file's text: for `.gz`, only the first SNIFF_GZ_BYTES
    compressed bytes are read and inflated."""
    import zlib

    with open(path, "rb") as fh:
        if not path.lower().endswith(".gz"):
            return fh.read(SNIFF_BYTES)
        raw = fh.read(SNIFF_GZ_BYTES)
    try:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        return inflater.decompress(raw, SNIFF_BYTES)
    except zlib.error:
        return b""


def _json_keys(text: str, depth_wanted: int, first_only: bool) -> list[str]:
    """The object keys at nesting depth `depth_wanted` in a JSON prefix (in order), read by
    a scanner that tolerates the prefix ending anywhere. `first_only`: stop at the end of
    the first container at that depth (the first event of a list)."""
    keys: list[str] = []
    depth = 0
    expect_key = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                break
            if expect_key and depth == depth_wanted:
                keys.append(text[i + 1:j])
            expect_key = False
            i = j + 1
            continue
        if c in "{[":
            depth += 1
            expect_key = c == "{"
        elif c in "}]":
            if first_only and depth == depth_wanted:
                break
            depth -= 1
            expect_key = False
        elif c == ",":
            expect_key = True
        elif c == ":":
            expect_key = False
        i += 1
    return keys


def sniff_trace(prefix: bytes) -> str | None:
    """What a file's first bytes say it is: "kineto" (a kineto-shaped Chrome trace: kineto
    header keys, or kineto event categories / `ProfilerStep#` and no Ascend process name),
    "chrome_trace" (any other Chrome trace), or None (not a trace).

    A trace is a JSON object with a top-level `traceEvents` key whose value is a list,
    within the prefix (or a kineto header: `schemaVersion` followed by kineto's own keys,
    which can outlast the prefix), or a JSON list whose first element is an object with a
    `ph` key.
    """
    text = prefix.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if text.startswith("{"):
        keys = _json_keys(text, 1, first_only=False)
        kineto_header = bool(keys) and keys[0] == "schemaVersion" and \
            any(k in KINETO_HEADER_KEYS for k in keys[1:])
        has_events = "traceEvents" in keys and TRACE_EVENTS_LIST.search(text) is not None
        if not has_events and not kineto_header:
            return None
    elif text.startswith("["):
        if not text[1:].lstrip().startswith("{") or \
                "ph" not in _json_keys(text, 2, first_only=True):
            return None
        keys = []
    else:
        return None
    if any(k in KINETO_HEADER_KEYS for k in keys):
        return "kineto"
    if KINETO_EVENT_HINT.search(text) and not ASCEND_PROCESS_HINT.search(text):
        return "kineto"
    return "chrome_trace"


def sniff_file(path: str) -> str | None:
    """`sniff_trace` of the file, memoised per (path, size, mtime); None if unreadable."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_size, st.st_mtime_ns)
    memo = _sniff_cache()
    hit = memo.get(key, _UNSNIFFED)
    if hit is not _UNSNIFFED:
        return hit
    try:
        kind = sniff_trace(read_prefix(path)) if st.st_size > 0 else None
    except OSError:
        kind = None
    memo.put(key, kind)
    return kind


_UNSNIFFED = object()


def _any_trace_candidate(name: str) -> bool:
    return bool(ANY_TRACE_FILE.search(name)) and not NOT_A_TRACE.match(name)


def _add_any_trace(logdir: str, parent: str, f: str, runs: dict[str, Run],
                   budget: list[int]) -> bool:
    """A trace of any name in `parent` (see above); True if it became a span."""
    if not _any_trace_candidate(f):
        return False
    full = os.path.join(parent, f)
    if not _followable(full, logdir):
        return False
    key_known = True
    try:
        st = os.stat(full)
        key_known = _sniff_cache().get((full, st.st_size, st.st_mtime_ns), _UNSNIFFED) \
            is not _UNSNIFFED
    except OSError:
        return False
    if not key_known:
        if budget[0] <= 0:
            return False
        budget[0] -= 1
    kind = sniff_file(full)
    if kind is None:
        return False
    stem = re.sub(r"\.json(?:\.gz)?$", "", f, flags=re.I)
    run = _run_for(logdir, parent, runs)
    worker = printable(stem)
    w = run.workers.get(worker)
    if w is None:
        w = run.workers[worker] = Worker(worker, kind, None,
                                         "gpu" if kind == "kineto" else "cpu")
    span = "default"
    if span in w.spans:
        span = printable(f"{span}-{f}")
    w.spans[span] = SpanSource(logdir=logdir, run=run.name, worker=worker, span=span,
                               producer=kind, root=full, files=(full,))
    return True


# ---- msprof-analyze cluster_analysis_output/ -------------------------------------------------
# The directory is a run of its own (named by its path), one worker `rank{N}` per rank the
# cluster tables name, all reading the same files (readers/cluster_analysis.py). The rank
# list is the one content discovery reads here: the `Index` of `Type == rank` rows of
# cluster_step_trace_time.csv (or ClusterStepTraceTime in cluster_analysis.db), else the
# rank sets of cluster_communication.json; memoised per (path, size, mtime) like sniffing.

CLUSTER_OUTPUT_DIR = "cluster_analysis_output"
CLUSTER_FILES = ("cluster_step_trace_time.csv", "cluster_communication.json",
                 "cluster_communication_matrix.json", "communication_group.json",
                 "cluster_analysis.db")
CLUSTER_SPAN = "cluster"
MAX_CLUSTER_RANKS = 100_000
MAX_CLUSTER_JSON_FOR_RANKS = 256 << 20  # a larger comm JSON without step table: not listed


def cluster_rank(v) -> int | None:
    """A rank as the cluster tables write it (`3`, `3.0`; a number or its text); None when
    it is none, not finite or beyond int64 (damage such as 1e308). The reader picks a rank's
    rows by the same rule (readers/cluster_analysis.py)."""
    try:
        x = float(v if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v).strip())
    except (TypeError, ValueError, OverflowError):
        return None
    return int(x) if math.isfinite(x) and abs(x) < 2.0 ** 63 else None


def _cluster_ranks_from_csv(path: str) -> list[int]:
    import csv

    ranks: set[int] = set()
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
        reader = csv.reader(fh)
        header = [h.strip() for h in next(reader, [])]
        if "Type" not in header or "Index" not in header:
            return []
        ti, ii = header.index("Type"), header.index("Index")
        for row in reader:
            if len(row) > max(ti, ii) and row[ti].strip().lower() == "rank":
                rank = cluster_rank(row[ii])
                if rank is None:
                    continue
                ranks.add(rank)
                if len(ranks) >= MAX_CLUSTER_RANKS:
                    break
    return sorted(ranks)


def _cluster_ranks_from_db(path: str) -> list[int]:
    import sqlite3

    uri = "file:" + os.path.abspath(path) + "?mode=ro"
    con = sqlite3.connect(uri, uri=True, timeout=1.0)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        ranks: set[int] = set()
        if "ClusterStepTraceTime" in tables:
            q = ('SELECT DISTINCT "index" FROM ClusterStepTraceTime '
                 "WHERE lower(type) = 'rank' LIMIT ?")
            ranks.update(r for (v,) in con.execute(q, (MAX_CLUSTER_RANKS,))
                         if (r := cluster_rank(v)) is not None)
        for t in ("ClusterCommAnalyzerTime", "ClusterCommunicationTime"):
            if not ranks and t in tables:
                q = f"SELECT DISTINCT rank_id FROM {t} LIMIT ?"
                ranks.update(v for (v,) in con.execute(q, (MAX_CLUSTER_RANKS,))
                             if isinstance(v, int) and cluster_rank(v) is not None)
        return sorted(ranks)
    finally:
        con.close()


def _cluster_ranks_from_comm_json(path: str) -> list[int]:
    if os.path.getsize(path) > MAX_CLUSTER_JSON_FOR_RANKS:
        return []
    import msgspec

    with open(path, "rb") as fh:
        doc = msgspec.json.decode(fh.read())
    ranks: set[int] = set()
    if isinstance(doc, dict):
        for steps in doc.values():
            for ops in (steps.values() if isinstance(steps, dict) else ()):
                for per_rank in (ops.values() if isinstance(ops, dict) else ()):
                    if isinstance(per_rank, dict):
                        ranks.update(cluster_rank(r) for r in per_rank
                                     if str(r).lstrip("-").isdigit()
                                     and cluster_rank(r) is not None)
    return sorted(ranks)


def cluster_ranks(root: str) -> tuple[list[int], str | None]:
    """(ranks, why none) of a cluster_analysis_output directory, memoised per file state."""
    for name, fn in (("cluster_step_trace_time.csv", _cluster_ranks_from_csv),
                     ("cluster_analysis.db", _cluster_ranks_from_db),
                     ("cluster_communication.json", _cluster_ranks_from_comm_json)):
        p = os.path.join(root, name)
        try:
            st = os.stat(p)
        except OSError:
            continue
        key = ("cluster-ranks", p, st.st_size, st.st_mtime_ns)
        memo = _sniff_cache()
        ranks = memo.get(key)
        if ranks is None:
            try:
                ranks = tuple(fn(p))
            except Exception as exc:  # bad input: named in the run's errors, retried later
                return [], f"{name}: cannot list the ranks: {type(exc).__name__}: {exc}"
            memo.put(key, ranks)
        if ranks:
            return list(ranks), None
    return [], ("no rank rows in cluster_step_trace_time.csv, cluster_analysis.db or "
                "cluster_communication.json")


def _add_cluster_analysis(logdir: str, full: str, runs: dict[str, Run]) -> bool:
    """msprof-analyze's output directory as a run of ranks; True if it holds cluster files."""
    if not _followable(full, logdir):
        return False
    files = tuple(os.path.join(full, n) for n in CLUSTER_FILES
                  if os.path.isfile(os.path.join(full, n))
                  and _followable(os.path.join(full, n), logdir))
    if not files:
        return False
    run = _run_for(logdir, full, runs)
    ranks, why = cluster_ranks(full)
    if not ranks:
        run.errors.append({"path": _rel(full, logdir), "message": why})
        return True
    for rank in ranks:
        name = f"rank{rank}"
        w = run.workers[name] = Worker(name, "cluster_analysis", rank, "npu")
        w.spans[CLUSTER_SPAN] = SpanSource(logdir=logdir, run=run.name, worker=name,
                                           span=CLUSTER_SPAN, producer="cluster_analysis",
                                           root=full, files=files, rank=rank,
                                           # the rank picks this worker's rows: it is part
                                           # of the cache key, as msprof's device is
                                           device_id=rank)
    return True
