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

Why this is safe: the views-stage tables are all these analyses read (the same invariant
the rank summaries rely on, `loading/build._rank_summary`; the timeline stage adds trace
tables only), the results are written into the entry's work directory before it is moved
into place (so they come and go with the entry, shared caches included), and whatever
cannot be stored exactly (a document with a NaN, which JSON cannot hold) or read back is
left out and computed on request. tests/test_stored_results.py compares every stored
result with the same analysis computed from the finished entry, on every fixture.
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
import os
from typing import Any, Callable

import msgspec
import pandas as pd

from ..model import Profile, read_table, write_table
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

    def arguments(self) -> tuple:
        return _arguments(self.compute, self.kwargs)


STORED: tuple[Stored, ...] = (
    Stored("overview-steps", overview.steps, {}),
    Stored("overview-summary", overview.summary, {}),
    Stored("kernels-by-name", kernel_counters.table_with_counters,
           {"group_by": "name", "step": None}),
    Stored("operators-by-name", operators.table, {"group_by": "name"}),
    Stored("memory", memory.summary, {"max_points": 2000}),
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


def write_all(profile: Profile, directory: str) -> dict[str, str]:
    """Compute every stored analysis of `profile` and write it into `directory` (a build's
    work directory). A failure leaves that result out (it is computed on request, where
    the same error then reaches the user). Returns name -> "arrow" | "json" of those
    written (for `meta.stored_results`)."""
    written = {}
    for s in STORED:
        try:
            value = s.compute(profile, **s.kwargs)
            if isinstance(value, pd.DataFrame):
                write_table(_path(directory, s, ".arrow"), value)
                written[s.name] = "arrow"
            else:
                data = msgspec.json.encode(value)
                if msgspec.json.decode(data) != value:  # NaN, or a type JSON changes
                    continue
                with open(_path(directory, s, ".json"), "wb") as fh:
                    fh.write(data)
                written[s.name] = "json"
        except Exception:
            log.warning("stored result %s not made for %s (made on request)", s.name,
                        directory, exc_info=True)
    return written


def read(profile: Profile, stored: Stored):
    """The stored result of `stored` for this profile's entry, or None (not stored, or
    unreadable: the caller computes it)."""
    directory = profile.directory
    if not directory:
        return None
    names = profile.meta.stored_results or ()
    if stored.name not in names:
        return None
    try:
        if names[stored.name] == "arrow":
            return read_table(profile.local_file(_path(directory, stored, ".arrow")))
        with open(profile.local_file(_path(directory, stored, ".json")), "rb") as fh:
            return msgspec.json.decode(fh.read())
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
