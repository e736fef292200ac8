"""Analysis results stored with each cache entry: the first answer of every view, made at
load time in the reader process instead of in TensorBoard's on the first request.

Why: a view's first answer for a span reads its tables back from the cache (Arrow ->
pandas) and groups them, 5-40 ms per view in TensorBoard's one process; a restart on 8
ranks x 2 spans spent ~1 s of its ~2.3 s there, one request after another. In the reader
the tables are still in memory (`model.KEEP_ROWS`), so the same results cost a fraction
there, and TensorBoard then reads one small file per view.

What: `STORED` lists the analyses (function and arguments) whose results are stored: the
ones each view asks for when it opens (the overview's steps and key figures, kernels and
operators by name, the memory curves at the UI's point budget). A request with other
arguments (another grouping, a step filter) is computed as before.

Why this is safe: each stored analysis declares the tables it reads (`reads`); the results
are written into the entry's work directory before it is moved into place (so they come
and go with the entry, shared caches included); the timeline stage, which may rewrite some
of those tables (the steps' windows from the trace's ProfilerStep slices, graph-mode step
phases, the kernels' steps), makes again the results whose tables it rewrote (`refresh`);
and whatever cannot be stored exactly (a document with a NaN, which JSON cannot hold) or
read back is left out and computed on request. tests/unit/test_stored_results.py compares
every stored result with the same analysis computed from the finished entry, on every
fixture, and a result refreshed after its table changed.
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
import os
from typing import Any, Callable

import msgspec

from ..lazy import pd
from ..model import Profile
from ..table_files import WRITE_ASIDE, read_arrow, read_table, table_path, write_table
from . import kernel_counters, memory, operators, overview

log = logging.getLogger(__name__)

FILE_PREFIX = "stored-"


@dataclasses.dataclass(frozen=True)
class Stored:
    """One stored analysis: `compute(profile, **kwargs)`, kept in `stored-<name>.arrow`
    (a DataFrame) or `stored-<name>.json` (a JSON document)."""

    name: str
    compute: Callable[..., Any]
    kwargs: dict
    reads: tuple[str, ...]  # the tables it reads (and "meta": the profile's step meta)

    def arguments(self) -> tuple:
        return _arguments(self.compute, self.kwargs)


STORED: tuple[Stored, ...] = (
    Stored("overview-steps", overview.steps, {}, ("steps", "meta")),
    Stored("overview-summary", overview.summary, {},
           ("steps", "step_phases", "kernels", "operators", "meta")),
    Stored("kernels-by-name", kernel_counters.table_with_counters,
           {"group_by": "name", "step": None}, ("kernels",)),
    Stored("operators-by-name", operators.table, {"group_by": "name"}, ("operators",)),
    Stored("memory", memory.summary, {"max_points": 2000},
           ("memory_records", "module_memory", "memory_allocations")),
)


def _arguments(fn: Callable, kwargs: dict) -> tuple:
    """`kwargs` with the function's defaults filled in, as a hashable tuple (so that a call
    that leaves a default out finds the stored result of one that spells it)."""
    params = list(inspect.signature(fn).parameters.values())[1:]  # after the profile
    out = []
    for p in params:
        if p.name in kwargs:
            out.append((p.name, kwargs[p.name]))
        elif p.default is not inspect.Parameter.empty:
            out.append((p.name, p.default))
    unknown = set(kwargs) - {p.name for p in params}
    if unknown:
        raise TypeError(f"{fn.__qualname__} has no parameter {sorted(unknown)[0]!r}")
    return tuple(out)


_BY_CALL = {(s.compute, s.arguments()): s for s in STORED}


def lookup(fn: Callable, kwargs: dict) -> Stored | None:
    """The stored analysis that `fn(profile, **kwargs)` is, or None."""
    try:
        return _BY_CALL.get((fn, _arguments(fn, kwargs)))
    except TypeError:  # unhashable arguments: never stored
        return None


def _path(directory: str, stored: Stored, suffix: str) -> str:
    return os.path.join(directory, f"{FILE_PREFIX}{stored.name}{suffix}")


def inputs_state(profile: Profile) -> dict:
    """What the stored analyses read, as it is now: per table its rows and file (a table
    rewritten is a new file: write aside and rename), and the profile's step meta."""
    state = {}
    for name in {t for s in STORED for t in s.reads if t != "meta"}:
        try:
            st = os.stat(table_path(profile.directory, name)) if profile.directory else None
            file = (st.st_ino, st.st_mtime_ns, st.st_size) if st else None
        except OSError:
            file = None
        state[name] = (profile.rows.get(name), file)
    state["meta"] = (profile.meta.step_categories, profile.meta.steps_known,
                     profile.meta.flops)
    return state


def refresh(profile: Profile, directory: str, before: dict) -> None:
    """Make again, into the entry `directory`, the stored results whose tables changed
    since `before` (`inputs_state`), and update `meta.stored_results` (the caller stores
    the meta). A result that comes out the same keeps its file (a shared cache then
    uploads nothing again); one that can no longer be made is dropped (computed on
    request)."""
    after = inputs_state(profile)
    stale = [s for s in STORED if any(before.get(t) != after.get(t) for t in s.reads)]
    if not stale:
        return
    names = dict(profile.meta.stored_results or {})
    for s in stale:
        old = read(profile, s) if s.name in names else None
        value = _compute(s, profile, directory)
        if value is not None and old is not None and _same(old, value):
            continue
        names.pop(s.name, None)
        for suffix in (".arrow", ".json"):
            try:
                os.unlink(_path(directory, s, suffix))
            except OSError:
                pass
        kind = _write(s, value, directory) if value is not None else None
        if kind:
            names[s.name] = kind
    profile.meta.stored_results = names or None


def _same(a, b) -> bool:
    if isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame):  # (dtypes included)
        return isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame) and a.equals(b)
    return a == b


def _compute(s: Stored, profile: Profile, directory: str):
    """`s` of the profile, or None when it fails (it is then made on request, where the
    same error reaches the user)."""
    try:
        return s.compute(profile, **s.kwargs)
    except Exception:
        log.warning("stored result %s not made for %s (made on request)", s.name,
                    directory, exc_info=True)
        return None


def _write(s: Stored, value, directory: str) -> str | None:
    """Write one result; its kind ("arrow" | "json"), or None when JSON cannot hold it
    exactly (NaN, or a type JSON changes)."""
    if isinstance(value, pd.DataFrame):
        write_table(_path(directory, s, ".arrow"), value)
        return "arrow"
    data = msgspec.json.encode(value)
    if msgspec.json.decode(data) != value:
        return None
    path = _path(directory, s, ".json")
    aside = f"{path}{WRITE_ASIDE}{os.getpid()}"  # aside, then in place at once
    with open(aside, "wb") as fh:
        fh.write(data)
    os.replace(aside, path)
    return "json"


def write_all(profile: Profile, directory: str) -> dict[str, str]:
    """Compute every stored analysis of `profile` and write it into `directory` (a build's
    work directory); name -> "arrow" | "json" of those written (`meta.stored_results`)."""
    written = {}
    for s in STORED:
        value = _compute(s, profile, directory)
        kind = _write(s, value, directory) if value is not None else None
        if kind:
            written[s.name] = kind
    return written


def read(profile: Profile, stored: Stored, raw: bool = False):
    """The stored result of `stored` for this profile's entry, or None (not stored, or
    unreadable: the caller computes it). `raw`: as stored, for a caller that only sends it
    on: a JSON document as its text (`msgspec.Raw`, checked to be one whole JSON value but
    not decoded: the bytes its value encodes to), a table as its Arrow table (memory-mapped,
    no pandas frame)."""
    directory = profile.directory
    if not directory:
        return None
    names = profile.meta.stored_results or ()
    if stored.name not in names:
        return None
    try:
        if names[stored.name] == "arrow":
            path = profile.local_file(_path(directory, stored, ".arrow"))
            return read_arrow(path) if raw else read_table(path)
        with open(profile.local_file(_path(directory, stored, ".json")), "rb") as fh:
            data = fh.read()
        return msgspec.json.decode(data, type=msgspec.Raw) if raw else msgspec.json.decode(data)
    except Exception:  # a missing or damaged file: computed again
        log.warning("stored result %s of %s unreadable (computed instead)", stored.name,
                    directory, exc_info=True)
        return None


def result(profile: Profile, fn: Callable, **kwargs):
    """`fn(profile, **kwargs)`, read from the entry when it is a stored analysis."""
    stored = lookup(fn, kwargs)
    if stored is not None:
        value = read(profile, stored)
        if value is not None:
            return value
    return fn(profile, **kwargs)


def raw_read(profile: Profile, fn: Callable, **kwargs):
    """The stored result `fn(profile, **kwargs)` is, as stored (`read(..., raw=True)`: JSON
    text, an Arrow table), or None when it is not stored or unreadable (the caller computes
    it). For a caller that only sends the result on. Why: a view's first answer then needs
    no decoding, and no pandas (lazy.py): decoding the memory view's stored curves (87 KB)
    only to encode them again cost TensorBoard ~1.7 ms per span, a table's frame 1-2 ms
    more than paging it in Arrow (tables.arrow_page)."""
    stored = lookup(fn, kwargs)
    return read(profile, stored, raw=True) if stored is not None else None
