"""What every reader does with a span's files: find them, read CSVs tolerantly, and turn
every failure into a `FileError` naming the file (a reader never raises for bad input)."""
from __future__ import annotations

import os

import pandas as pd

from ..discovery import EXTERNAL_SYMLINK, inside_logdir
from ..model import FileError, Profile
from . import SpanSource
from .tolerant import InputError, read_csv


class ReadContext:
    """A span being read into `profile`; `base` is the folder its file names are under."""

    def __init__(self, span: SpanSource, profile: Profile, base: str | None = None):
        self.span = span
        self.profile = profile
        self.base = base or span.root

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

    def read_csv_file(self, path: str, required: tuple[str, ...] = ()) -> pd.DataFrame | None:
        if not self.readable(path):
            return None
        rel = self.span.rel(path)
        try:
            df, warnings = read_csv(path, rel, required=required)
        except InputError as exc:
            self.error(path, str(exc))
            return None
        except Exception as exc:  # never raise for bad input
            self.error(path, f"cannot read file: {exc}")
            return None
        for w in warnings:
            self.error(path, w[len(rel) + 2:] if w.startswith(rel + ": ") else w)
        return df
