"""Seeded mutation fuzzing of every input file the readers take.

A case is (seed, index): from them alone it picks one input file of one fixture span (every
CSV, JSON, .gz, .txt and info file of every fixture under `fixtures/`) and one mutation
(truncation, byte flips, random insertions, huge numbers, deep nesting, wrong types, empty,
gz of garbage, ...), so any case can be replayed by its two numbers.

Each case runs in a worker process on that worker's private copy of the fixtures, through
the loader's own path (`tb_plugin.loading`'s stage 1 and 2: `readers.read` under
`table_files.spilling`, `derive.complete`, the cache write and reopen), then the views a profile
of that kind serves. The parent gives every case a time limit and replaces a worker that
overruns it, so a hang is a finding, not a stuck run. A finding is:
- an exception that escapes the reader, derive, the cache or a view;
- a file error without a path inside the logdir or without a reason, or whose reason is an
  internal error (an exception's text) rather than something a user can act on;
- a table that lost a column of its schema, or an integer column holding int64's minimum
  (a number it cannot hold, cast without a word);
- a hang (the case overran its time limit).

Used by `tests/fuzz/test_fuzz_readers.py` (bounded for CI) and `benchmarks/fuzz_inputs.py`
(the long run).
"""
from __future__ import annotations

import copy
import dataclasses
import gzip
import json
import multiprocessing
import multiprocessing.connection
import os
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
import zlib
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "fixtures")

# Reasons that are an exception's text, not a message for a user: a bug surfaced as an error.
INTERNAL = re.compile(
    r"unexpected error|could not read this profile|could not read the trace|analysis failed"
    r"|timeline index failed|unexpected trace content|Traceback|\b[A-Z][A-Za-z]*Error\b"
    r"|ArrowInvalid|ArrowNotImplemented|object has no attribute|not supported between"
    r"|unhashable type|out of bounds|invalid literal for|object is not|can't convert"
    r"|cannot convert|must be real number|NoneType")


@dataclasses.dataclass(frozen=True)
class Case:
    seed: int
    index: int
    file: str       # relative to the fixtures root
    mutation: str
    campaign: bool = False  # drawn by a campaign of its mutation alone (`plan(mutation=...)`)

    def describe(self) -> str:
        return (f"seed={self.seed} case={self.index} file={self.file} mutation={self.mutation}"
                f"  (replay: python benchmarks/fuzz_inputs.py --seed {self.seed}"
                f" --case {self.index}" + (f" --mutation {self.mutation}" if self.campaign
                                           else "") + ")")


@dataclasses.dataclass
class Outcome:
    case: Case
    ok: bool
    seconds: float
    problems: list[str]


# --------------------------------------------------------------------------- inputs

def input_files(fixtures: str = FIXTURES) -> list[tuple[str, str]]:
    """(file relative to `fixtures`, span root relative to `fixtures`) for every input file
    of every span discovery finds under `fixtures`, sorted (the plan depends on it)."""
    from tb_plugin import discovery

    runs, _ = discovery.discover(os.path.abspath(fixtures))
    out = set()
    for run in runs.values():
        for span in run.spans():
            root = os.path.relpath(span.root, fixtures)
            for f in span.files:
                out.add((os.path.relpath(f, fixtures), root))
    return sorted(out)


def kind_of(path: str, data: bytes) -> str:
    """json | csv | gz | bytes: which structural mutations make sense for the file."""
    if data[:2] == b"\x1f\x8b":
        return "gz"
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] in (b"{", b"["):
        return "json"
    first = head.split(b"\n", 1)[0]
    if path.endswith((".csv", ".txt")) and b"," in first:
        return "csv"
    return "bytes"


def file_kinds(files: list[tuple[str, str]], fixtures: str = FIXTURES) -> dict[str, str]:
    """`kind_of` each input file (`input_files`), from its first 64 KiB: what `plan` needs."""
    kinds = {}
    for f, _ in files:
        with open(os.path.join(fixtures, f), "rb") as fh:
            kinds[f] = kind_of(f, fh.read(1 << 16))
    return kinds


# --------------------------------------------------------------------------- mutations

HUGE = ["1e308", "-1e308", "1e400", "-1e400", "1" + "0" * 40, "-" + "9" * 30,
        "123456789012345678901234567890.123456", "9223372036854775808", "-9223372036854775809",
        "1e-400", "0.0000000000000000000000001", "4294967295", "18446744073709551616"]
WRONG = [None, True, False, 0, -1, 1e308, "", "text", "N/A", "-", "NaN", [], {}, [1, "a"],
         {"a": None}, "\u00e9\u7b97\u5b50", "1700000000000000.000"]
CELLS = ["abc", "", "N/A", "-", "NaN", "inf", "-inf", "1e400", "-1", "0x10", "1,5", "\t",
         " 12 ", "=1+1", '"', "\u7b97\u5b50", "1.2.3", "9" * 30, "x" * 5000]
SPECIAL = [b"{", b"}", b"[", b"]", b'"', b",", b":", b"\\", b"\n", b"\r\n", b"\x00", b"\xff",
           b"\xc3", b"\xef\xbb\xbf", b"NaN", b"-", b"\t", b"},{", b'","']


def _truncate(data, rng, kind):
    return data[: rng.randrange(len(data) + 1)] if data else data


def _empty(data, rng, kind):
    return b""


def _whitespace(data, rng, kind):
    return rng.choice([b"", b" ", b"\n", b"\r\n\r\n", b"\xef\xbb\xbf", b"\t \n"])


def _flip(data, rng, kind):
    if not data:
        return b"\xff"
    b = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        i = rng.randrange(len(b))
        b[i] = rng.randrange(256) if rng.random() < 0.5 else b[i] ^ (1 << rng.randrange(8))
    return bytes(b)


def _insert(data, rng, kind):
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(b) + 1)
        if rng.random() < 0.5:
            piece = rng.choice(SPECIAL) * rng.randint(1, 4)
        else:
            piece = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        b[i:i] = piece
    return bytes(b)


def _duplicate(data, rng, kind):
    if len(data) < 2:
        return data * 2
    a = rng.randrange(len(data))
    n = rng.randint(1, min(4096, len(data) - a))
    at = rng.randrange(len(data) + 1)
    return data[:at] + data[a:a + n] + data[at:]


def _delete_range(data, rng, kind):
    if not data:
        return data
    a = rng.randrange(len(data))
    return data[:a] + data[a + rng.randint(1, min(4096, len(data) - a)):]


def _garbage(data, rng, kind):
    return bytes(rng.randrange(256) for _ in range(rng.randint(1, 4096)))


def _gz_garbage(data, rng, kind):
    return gzip.compress(bytes(rng.randrange(256) for _ in range(rng.randint(0, 4096))))


def _gz_of_input(data, rng, kind):
    """The file gzip-compressed under its plain name (readers decide by the magic bytes)."""
    return gzip.compress(data)


def _numbers(data, rng, kind):
    """Replace some number tokens by huge, tiny or overflowing ones."""
    spans = [m.span() for m in re.finditer(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", data[:1 << 22])]
    if not spans:
        return data + rng.choice(HUGE).encode()
    out = bytearray(data)
    for a, b in sorted(rng.sample(spans, min(len(spans), rng.randint(1, 8))), reverse=True):
        out[a:b] = rng.choice(HUGE).encode()
    return bytes(out)


def _json_tree(data: bytes):
    text = data.decode("utf-8", "replace").lstrip("\ufeff")
    return json.loads(text)


def _nodes(tree, rng, limit=200_000):
    """A random (container, key) of the tree (reservoir sample over the first `limit`)."""
    chosen, seen = None, 0
    stack = [tree]
    while stack and seen < limit:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            seen += 1
            if rng.randrange(seen) == 0:
                chosen = (node, k)
            if isinstance(v, (dict, list)) and v:
                stack.append(v)
    return chosen


_HOLE = "@@FUZZ-HOLE@@"


def _json_structural(data, rng, kind):
    """Wrong types, deep nesting, huge numbers, removed keys, on the parsed document."""
    try:
        tree = _json_tree(data)
    except (ValueError, RecursionError):
        return _insert(data, rng, kind)
    if not isinstance(tree, (dict, list)) or not tree:
        return json.dumps(rng.choice(WRONG)).encode()
    what = rng.choice(["type", "type", "deep", "huge", "drop", "dup"])
    raw = None
    for _ in range(rng.randint(1, 4)):
        picked = _nodes(tree, rng)
        if picked is None:
            break
        node, k = picked
        if what == "type":
            node[k] = copy.deepcopy(rng.choice(WRONG))  # never share (and mutate) WRONG
        elif what == "drop":
            if isinstance(node, dict):
                del node[k]
            else:
                node.pop(k)
        elif what == "dup" and isinstance(node, list):
            node.insert(k, copy.deepcopy(node[k]))
        else:
            node[k] = _HOLE
            depth = rng.choice([64, 1000, 100_000])
            raw = ("[" * depth + "]" * depth) if what == "deep" else rng.choice(HUGE)
            break
    text = json.dumps(tree, ensure_ascii=False)
    if raw is not None:
        text = text.replace(json.dumps(_HOLE), raw, 1)
    return text.encode("utf-8", "surrogatepass")


def _csv_rows(data: bytes) -> list[list[str]]:
    import csv
    import io

    text = data.decode("utf-8", "replace").lstrip("\ufeff")
    return list(csv.reader(io.StringIO(text, newline="")))


def _csv_structural(data, rng, kind):
    """Wrong-typed cells, ragged rows, broken headers, removed/duplicated rows."""
    import csv
    import io

    try:
        rows = _csv_rows(data)
    except csv.Error:
        return _insert(data, rng, kind)
    if not rows:
        return b"a,b\n1"
    what = rng.choice(["cell", "cell", "cell", "ragged", "header", "rows", "column"])
    body = rows[1:]
    if what == "cell" and body:
        for _ in range(rng.randint(1, 12)):
            r = rng.choice(body)
            if r:
                r[rng.randrange(len(r))] = rng.choice(CELLS)
    elif what == "ragged" and body:
        r = rng.choice(body)
        if r and rng.random() < 0.5:
            del r[rng.randrange(len(r)):]
        else:
            r.extend(rng.choice(CELLS) for _ in range(rng.randint(1, 5)))
    elif what == "header":
        h = rows[0]
        choice = rng.randrange(4)
        if choice == 0 and h:
            h[rng.randrange(len(h))] = rng.choice(["", "Name", h[0], "x" * 300, "\t"])
        elif choice == 1:
            rows = body  # no header line
        elif choice == 2 and h:
            h.append(rng.choice(h))  # duplicate column name
        else:
            rows.insert(1, list(h))  # header repeated as a data row
    elif what == "rows" and body:
        a = rng.randrange(len(body))
        if rng.random() < 0.5:
            del body[a:a + rng.randint(1, 50)]
        else:
            body[a:a] = body[a:a + rng.randint(1, 50)] * rng.randint(1, 3)
        rows = [rows[0]] + body
    elif what == "column" and rows[0]:
        c = rng.randrange(len(rows[0]))
        for r in rows:
            if c < len(r):
                del r[c]
    out = io.StringIO()
    csv.writer(out, lineterminator=rng.choice(["\n", "\r\n"])).writerows(rows)
    return out.getvalue().encode("utf-8", "surrogatepass")


def _gz_inner(data, rng, kind):
    """Inflate, mutate the content, compress again."""
    try:
        inner = gzip.decompress(data)
    except (OSError, EOFError, ValueError, zlib.error):
        return _flip(data, rng, kind)
    inner_kind = kind_of("x.json", inner)
    fn = rng.choice(_BY_KIND.get(inner_kind, []) + _GENERIC_NAMES)
    return gzip.compress(MUTATIONS[fn](inner, rng, inner_kind))


def _gz_truncate(data, rng, kind):
    return data[: rng.randrange(max(1, len(data)))]


def _gz_not_gz(data, rng, kind):
    """A .gz that is not compressed at all (its content as plain text)."""
    try:
        return gzip.decompress(data)
    except Exception:  # noqa: BLE001 - any damage: keep the bytes
        return data


MUTATIONS: dict[str, Callable] = {
    "truncate": _truncate, "empty": _empty, "whitespace_only": _whitespace,
    "byte_flip": _flip, "insert_random": _insert, "duplicate_range": _duplicate,
    "delete_range": _delete_range, "garbage": _garbage, "gz_of_garbage": _gz_garbage,
    "gz_of_input": _gz_of_input, "huge_numbers": _numbers,
    "json_structure": _json_structural, "csv_structure": _csv_structural,
    "gz_inner": _gz_inner, "gz_truncate": _gz_truncate, "gz_flip": _flip,
    "gz_not_gz": _gz_not_gz,
}
_GENERIC_NAMES = ["truncate", "empty", "whitespace_only", "byte_flip", "insert_random",
                  "duplicate_range", "delete_range", "garbage", "gz_of_garbage", "gz_of_input",
                  "huge_numbers"]
_BY_KIND = {
    "json": ["json_structure"] * 4,
    "csv": ["csv_structure"] * 4,
    "gz": ["gz_inner"] * 4 + ["gz_truncate", "gz_flip", "gz_not_gz"],
    "bytes": [],
}


def mutations_for(kind: str) -> list[str]:
    return _GENERIC_NAMES + _BY_KIND[kind]


def plan(seed: int, count: int, files: list[tuple[str, str]], kinds: dict[str, str],
         start: int = 0, mutation: str | None = None) -> list[Case]:
    """The first `count` cases from `start` of the run `seed` (a pure function of them);
    with `mutation`, a campaign of that mutation alone over the files it applies to."""
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"no mutation {mutation!r}: one of {', '.join(sorted(MUTATIONS))}")
    pool = files if mutation is None else \
        [x for x in files if mutation in mutations_for(kinds[x[0]])]
    out = []
    for i in range(start, start + count):
        rng = random.Random(f"plan:{seed}:{i}" + (f":{mutation}" if mutation else ""))
        f, _ = rng.choice(pool)
        out.append(Case(seed, i, f, mutation or rng.choice(mutations_for(kinds[f])),
                        campaign=mutation is not None))
    return out


def mutate(case: Case, data: bytes, kind: str) -> bytes:
    rng = random.Random(f"mutate:{case.seed}:{case.index}")
    return MUTATIONS[case.mutation](data, rng, kind)


# --------------------------------------------------------------------------- one case

def check_span(logdir: str, span_root: str, work: str, index_trace: bool = True) -> list[str]:
    """Load the span at `span_root` the way the loader does; the problems found.

    index_trace=False skips the timeline index (derive.complete_trace), which depends on the
    trace alone: for a mutated CSV it would only repeat the unmutated fixture's work."""
    from tb_plugin import discovery, readers
    from tb_plugin.analysis import derive
    from tb_plugin.cache import open_profile, write_profile
    from tb_plugin.model import FileError
    from tb_plugin.schema import SCHEMAS
    from tb_plugin.table_files import spilling

    problems: list[str] = []
    runs, _ = discovery.discover(logdir)
    spans = [s for r in runs.values() for s in r.spans() if s.root == span_root]
    if not spans:
        return problems  # discovery no longer sees a span here (e.g. emptied marker file)
    for span in spans:
        entry = tempfile.mkdtemp(dir=work)
        try:
            with spilling(entry):
                profile = readers.read(span, entry, stage="views")
                derive.complete(profile)
                if profile.meta.get("trace_deferred"):
                    part = readers.read(span, entry, stage="trace")
                    if part is not None:
                        profile.rows.update(part.rows)
                        profile.errors.extend(part.errors)
                        if "args_file" in part.meta:
                            profile.meta["args_file"] = part.meta["args_file"]
                if index_trace:
                    derive.complete_trace(profile)
            write_profile(entry, profile)
            profile = open_profile(entry)
        except Exception:  # noqa: BLE001 - the finding
            problems.append(f"exception escaped loading {span.root}:\n{traceback.format_exc()}")
            continue
        for e in profile.errors:
            if not isinstance(e, FileError) or not e.path or not e.message:
                problems.append(f"file error without path or reason: {e!r}")
                continue
            if os.path.isabs(e.path) or os.path.normpath(e.path).startswith(".."):
                problems.append(f"file error path is not inside the logdir: {e.path!r}")
            if INTERNAL.search(e.message):
                problems.append(f"internal error shown as a file error: {e.path}: {e.message}")
        for name in profile.table_names():
            try:
                df = profile.table(name)
            except Exception:  # noqa: BLE001
                problems.append(f"table {name} unreadable:\n{traceback.format_exc()}")
                continue
            missing = [c for c in SCHEMAS.get(name, {}) if c not in df.columns]
            if missing:
                problems.append(f"table {name} lost column(s) {missing}")
            problems.extend(_int64_minimum(name, df))
        problems.extend(_views(profile))
        shutil.rmtree(entry, ignore_errors=True)
    return problems


INT64_MIN = -(1 << 63)


def _int64_minimum(name: str, df) -> list[str]:
    """int64's minimum in an integer column: what a cast of inf, NaN or a number past int64
    gives without a word (never a value of its own), so a damaged number read as data."""
    out = []
    for col in df.columns:
        if str(df[col].dtype) in ("int64", "Int64") and \
                bool((df[col].fillna(0) == INT64_MIN).any()):
            out.append(f"table {name} column {col} holds int64's minimum (a cast of a number "
                       "it cannot hold)")
    return out


def _views(profile) -> list[str]:
    """What the HTTP layer computes for each view a profile has."""
    from tb_plugin.analysis import kernels, memory, operators, overview

    calls = []
    if profile.has("steps"):
        calls += [("overview.steps", overview.steps), ("overview.summary", overview.summary)]
    if profile.has("kernels"):
        calls += [("kernels.table", kernels.table)]
    if profile.has("operators"):
        calls += [("operators.table", operators.table)]
    if any(profile.has(t) for t in ("memory_records", "memory_allocations", "module_memory")):
        calls += [("memory.summary", memory.summary), ("memory.allocations", memory.allocations)]
    out = []
    for name, fn in calls:
        try:
            fn(profile)
        except Exception:  # noqa: BLE001
            out.append(f"view {name} raised:\n{traceback.format_exc()}")
    return out


def run_case(case: Case, copy_root: str, span_of: dict[str, str], work: str) -> list[str]:
    """Mutate the case's file in the worker's copy, load its span, restore the file."""
    path = os.path.join(copy_root, case.file)
    with open(path, "rb") as fh:
        original = fh.read()
    kind = kind_of(path, original)
    data = mutate(case, original, kind)
    try:
        with open(path, "wb") as fh:
            fh.write(data)
        return check_span(copy_root, os.path.join(copy_root, span_of[case.file]), work,
                          index_trace=kind in ("json", "gz"))
    finally:
        with open(path, "wb") as fh:
            fh.write(original)


# --------------------------------------------------------------------------- workers

def _worker(conn, fixtures: str, base: str) -> None:
    import logging
    import warnings

    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    copy_root = os.path.join(base, "fixtures")
    shutil.copytree(fixtures, copy_root, symlinks=True)
    work = os.path.join(base, "work")
    os.makedirs(work)
    span_of = {f: root for f, root in input_files(copy_root)}
    try:
        while True:
            case = conn.recv()
            if case is None:
                break
            t = time.time()
            try:
                problems = run_case(case, copy_root, span_of, work)
            except Exception:  # noqa: BLE001 - the harness itself must keep going
                problems = [f"harness error:\n{traceback.format_exc()}"]
            conn.send(Outcome(case, not problems, time.time() - t, problems))
    finally:
        shutil.rmtree(base, ignore_errors=True)


class _Slot:
    def __init__(self, ctx, fixtures: str):
        self.conn, child = ctx.Pipe()
        # Made here and removed by stop(), so a killed worker leaves nothing behind.
        self.base = tempfile.mkdtemp(prefix="npu-fuzz-")
        self.proc = ctx.Process(target=_worker, args=(child, fixtures, self.base), daemon=True)
        self.proc.start()
        child.close()
        self.case: Case | None = None
        self.sent = 0.0

    def stop(self, kill: bool = False) -> None:
        try:
            if kill:
                self.proc.kill()
            else:
                self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.conn.close()
        shutil.rmtree(self.base, ignore_errors=True)


@dataclasses.dataclass
class Summary:
    seed: int
    planned: int
    done: int
    seconds: float
    findings: list[Outcome]
    by_mutation: dict[str, int]
    by_kind: dict[str, int]
    hangs: int
    stopped_by_time: bool


def run(seed: int, count: int, *, workers: int = 2, time_cap: float | None = None,
        case_timeout: float = 30.0, start: int = 0, fixtures: str = FIXTURES,
        only: list[int] | None = None, mutation: str | None = None,
        log: Callable[[str], None] = print) -> Summary:
    """Run cases `start..start+count` of `seed` (or just the `only` indexes); `mutation`:
    that mutation alone (`plan`)."""
    files = input_files(fixtures)
    kinds = file_kinds(files, fixtures)
    cases = plan(seed, count, files, kinds, start, mutation) if only is None else \
        [c for i in only for c in plan(seed, 1, files, kinds, i, mutation)]
    ctx = multiprocessing.get_context("spawn")
    slots = [_Slot(ctx, fixtures) for _ in range(max(1, min(workers, len(cases))))]
    pending = list(reversed(cases))
    findings: list[Outcome] = []
    by_mutation: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    done = hangs = 0
    started = time.time()
    stopped = False
    try:
        while True:
            for s in slots:
                if s.case is None and pending and not stopped:
                    s.case = pending.pop()
                    s.sent = time.time()
                    s.conn.send(s.case)
            busy = [s for s in slots if s.case is not None]
            if not busy:
                break
            ready = multiprocessing.connection.wait([s.conn for s in busy], timeout=0.5)
            now = time.time()
            for s in list(busy):
                if s.conn in ready:
                    try:
                        out: Outcome = s.conn.recv()
                    except (EOFError, OSError):
                        out = Outcome(s.case, False, now - s.sent,
                                      [f"worker died (exit code {s.proc.exitcode})"])
                        _replace(slots, s, ctx, fixtures)
                elif now - s.sent > case_timeout:
                    hangs += 1
                    out = Outcome(s.case, False, now - s.sent,
                                  [f"hang: no answer within {case_timeout:.0f} s"])
                    _replace(slots, s, ctx, fixtures)
                else:
                    continue
                done += 1
                by_mutation[out.case.mutation] = by_mutation.get(out.case.mutation, 0) + 1
                k = kinds[out.case.file]
                by_kind[k] = by_kind.get(k, 0) + 1
                if not out.ok:
                    findings.append(out)
                    log(f"FINDING {out.case.describe()}\n  " + "\n  ".join(out.problems))
                s.case = None
                if done % 500 == 0:
                    log(f"{done} cases, {time.time() - started:.0f} s, {len(findings)} finding(s)")
            if time_cap is not None and time.time() - started > time_cap and not stopped:
                stopped = bool(pending)
    finally:
        for s in slots:
            s.stop(kill=s.case is not None)
    return Summary(seed, len(cases), done, time.time() - started, findings, by_mutation,
                   by_kind, hangs, stopped)


def _replace(slots: list, slot: _Slot, ctx, fixtures: str) -> None:
    """A worker that hung or died: kill it and start a fresh one in its place."""
    slot.stop(kill=True)
    slots[slots.index(slot)] = _Slot(ctx, fixtures)


if __name__ == "__main__":  # pragma: no cover - use benchmarks/fuzz_inputs.py
    sys.exit("run benchmarks/fuzz_inputs.py")
