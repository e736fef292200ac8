"""The one shape of a reader: a list of small named steps over one `ReadContext`.

A reader builds its context (the span, its work dir, the profile being filled, the folder its
file names are under) and runs its steps with `run_steps`. Every step is guarded: an
exception in a step becomes a `FileError` naming the file the step was reading and the
reason, and the later steps still run, so a reader never raises for bad input.

What steps share:
- `ctx.csv` / `ctx.csvs` / `ctx.json`: read a file tolerantly, recording why it is unusable;
- `read_trace(ctx, paths)`: decode Chrome-trace files (args side file in the work dir) and
  `ctx.set_trace_tables(...)` to store what a reader made of them;
- `ctx.error(path, reason)`: one more per-file error.
Data one step hands to a later one is a field declared on the reader's context class.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

import pandas as pd

from ..discovery import EXTERNAL_SYMLINK, inside_logdir
from ..model import FileError, Profile
from ..span_source import SpanSource
from . import ARGS_FILE
from .tolerant import InputError, read_csv, read_csv_table, read_json_file

Step = Callable[["ReadContext"], None]


class ReadContext:
    """A span being read into `profile`; `base` is the folder its file names are under,
    `work_dir` the span's private cache entry directory (None in tests: args stay in memory).
    """

    def __init__(self, span: SpanSource, work_dir: str | None, profile: Profile,
                 base: str | None = None):
        self.span = span
        self.work_dir = work_dir
        self.profile = profile
        self.base = base or span.root
        # The file the running step opened last: an unexpected error is reported against it.
        self.current: str | None = None

    def error(self, path: str, message: str) -> None:
        self.profile.errors.append(FileError(self.span.rel(path), message))

    def path(self, name: str) -> str | None:
        p = os.path.join(self.base, name)
        # A dangling symlink or unreadable entry is returned too, so reading it reports why.
        if not os.path.lexists(p) or os.path.isdir(p):
            return None
        return p if self.readable(p) else None

    def readable(self, path: str) -> bool:
        """Whether `path` may be read: inside the logdir (see `discovery.inside_logdir`);
        a symlink out of it is reported once as this file's error and not read."""
        if inside_logdir(path, self.span.logdir) or not os.path.exists(path):
            return True  # (a dangling link: reading it reports that the file is missing)
        rel = self.span.rel(path)
        if not any(e.path == rel and e.message == EXTERNAL_SYMLINK for e in self.profile.errors):
            self.error(path, EXTERNAL_SYMLINK)
        return False

    def csv(self, name: str, required: tuple[str, ...] = ()) -> pd.DataFrame | None:
        """Read a CSV under `base`; None if absent or unusable (the reason is recorded)."""
        p = self.path(name)
        return None if p is None else self.read_csv_file(p, required)

    def csvs(self, paths: list[str], required: tuple[str, ...] = ()) -> pd.DataFrame | None:
        """Read CSV files (slices of one table) and stack the usable ones."""
        frames = [df for df in (self.read_csv_file(p, required) for p in paths)
                  if df is not None]
        if not frames:
            return None
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

    def csv_table(self, name: str, required: tuple[str, ...] = ()):
        """`csv` as a pyarrow Table of text columns (for steps that stay in Arrow)."""
        p = self.path(name)
        return None if p is None else self.read_csv_file(p, required, read=read_csv_table)

    def read_csv_file(self, path: str, required: tuple[str, ...] = (), read=read_csv):
        """The CSV at `path` read by `read` (`read_csv`: a frame; `read_csv_table`: an Arrow
        table); None if unusable, the reason recorded."""
        self.current = path
        if not self.readable(path):
            return None
        rel = self.span.rel(path)
        try:
            df, warnings = read(path, rel, required=required)
        except InputError as exc:
            self.error(path, str(exc))
            return None
        except Exception as exc:  # never raise for bad input
            self.error(path, f"cannot read file: {exc}")
            return None
        for w in warnings:
            self.error(path, w[len(rel) + 2:] if w.startswith(rel + ": ") else w)
        return df

    def json(self, path: str, *, object_required: bool = True, max_bytes: int | None = None):
        """A small JSON document (None if unusable, the reason recorded). A document that is
        not an object is an error when `object_required`, else silently None."""
        self.current = path
        try:
            doc = read_json_file(path) if max_bytes is None else \
                read_json_file(path, max_bytes=max_bytes)
        except InputError as exc:
            self.error(path, str(exc))
            return None
        if not isinstance(doc, dict):
            if object_required:
                self.error(path, "expected a JSON object")
            return None
        return doc

    def set_trace_tables(self, tracks: pd.DataFrame, slices: pd.DataFrame, flows: pd.DataFrame,
                         counters: pd.DataFrame, keep_extra_slices: bool = False) -> None:
        p = self.profile
        p.set("tracks", tracks)
        p.set("slices", slices, keep_extra=keep_extra_slices)
        p.set("flows", flows)
        p.set("counters", counters)


def read_trace(ctx: ReadContext, paths: list[str], *, extract_args: dict[str, str] | None = None,
               extract_for: Callable[[str, str], bool] | None = None):
    """Decode the span's trace files (`trace_json.read_traces`) for a reader's trace step.

    The args go to the side file `ARGS_FILE` in the work dir (meta.args_file), or stay in
    memory without one (meta.args_table). Files that are damaged part-way become errors and
    what precedes the damage is kept. Returns the `TraceTables`, or None when no file gave
    any event (each file's reason recorded).
    """
    from .trace_json import read_traces

    paths = [p for p in paths if ctx.readable(p)]  # a symlink out of the logdir is not read
    if not paths:
        return None
    ctx.current = paths[0]
    args_path = os.path.join(ctx.work_dir, ARGS_FILE) if ctx.work_dir else None
    try:
        tt = read_traces(paths, args_path=args_path, tmp_dir=ctx.work_dir,
                         extract_args=extract_args, extract_for=extract_for)
    except InputError as exc:
        for p in paths:
            ctx.error(p, str(exc))
        return None
    for path, reason in tt.errors:
        ctx.error(path, reason)
    if args_path:
        ctx.profile.meta.args_file = ARGS_FILE
    else:
        ctx.profile.meta.args_table = tt.args
    return tt


def run_steps(ctx: ReadContext, steps: Sequence[Step]) -> Profile:
    """Run a reader's steps in order; a step that fails becomes an error, the rest run."""
    for step in steps:
        ctx.current = None
        try:
            step(ctx)
        except Exception as exc:  # a bug or an unforeseen layout must not stop the span
            ctx.error(ctx.current or ctx.base, f"{_step_name(step)}: unexpected error while "
                      f"reading: {type(exc).__name__}: {exc}")
    ctx.current = None
    return ctx.profile


def _step_name(step: Step) -> str:
    return step.__name__.lstrip("_").removeprefix("read_")  # `_read_kernels` -> kernels
