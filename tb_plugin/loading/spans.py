"""The state of one span (a worker's profile): its two load stages and the facts kept when a
stage finishes.

    views:    pending -> loading -> ready | error
    timeline: pending -> loading -> ready | error      (starts once the views are ready)

`SpanFacts` is what a finished build left in the cache entry that the run-level routes need
(row count per table, file errors, device, rank, whether there is a trace): it is read once
from the entry's meta when a stage finishes, so `/runs` and `/run` never open profiles.
"""
from __future__ import annotations

import dataclasses

from ..model import Profile
from ..readers import SpanSource
from .pool import BrokenReader


@dataclasses.dataclass(frozen=True)
class SpanFacts:
    rows: dict[str, int]
    errors: list[dict]
    device: str | None = None
    rank: int | None = None
    trace_deferred: bool = False  # the views stage left the trace for the timeline stage
    trace_ready: bool = False   # the timeline stage has run on this entry
    has_data: bool = False      # some table has rows

    @classmethod
    def of(cls, profile: Profile) -> "SpanFacts":
        meta = profile.meta  # the only place here that reads profile metadata
        try:
            rank = int(meta.rank) if meta.rank is not None else None
        except (TypeError, ValueError):
            rank = None
        rows = {k: int(v) for k, v in profile.rows.items()}
        return cls(rows=rows, errors=[e.to_json() for e in profile.errors],
                   device=meta.device, rank=rank,
                   trace_deferred=bool(meta.trace_deferred),
                   trace_ready=bool(meta.trace_ready),
                   has_data=any(n > 0 for n in rows.values()))

    def has(self, table: str) -> bool:
        """Like `Profile.has`: the table exists and has rows."""
        return self.rows.get(table, 0) > 0


@dataclasses.dataclass(eq=False)
class SpanState:
    span: SpanSource
    key: str
    state: str = "pending"  # the views: pending | loading | ready | error
    error: str | None = None
    trace_state: str = "pending"  # the timeline: pending | loading | ready | error
    trace_error: str | None = None
    facts: SpanFacts | None = None  # set when the views are ready, renewed after the timeline

    @property
    def views_done(self) -> bool:
        return self.state in ("ready", "error")

    @property
    def trace_done(self) -> bool:
        """The timeline stage has finished, or will never run (the views failed)."""
        return self.trace_state in ("ready", "error") or self.state == "error"

    # ---- transitions -------------------------------------------------------------------
    def views_loading(self) -> None:
        self.state = "loading"

    def views_ready(self, facts: SpanFacts) -> None:
        self.facts = facts
        self.state = "ready"
        if facts.trace_ready:
            self.trace_state = "ready"

    def views_failed(self, exc: BaseException | str) -> None:
        self.state = "error"
        self.error = exc if isinstance(exc, str) else _failure(exc, "reading this profile",
                                                               "could not read this profile")

    def trace_loading(self) -> None:
        self.trace_state = "loading"

    def trace_finished(self, facts: SpanFacts | None) -> None:
        if facts is not None:
            self.facts = facts
        self.trace_state = "ready"

    def trace_failed(self, exc: BaseException | str) -> None:
        self.trace_state = "error"
        self.trace_error = exc if isinstance(exc, str) else _failure(
            exc, "indexing the trace", "could not index the trace")


def _failure(exc: BaseException, doing: str, prefix: str) -> str:
    if isinstance(exc, BrokenReader):
        return f"the reader process stopped unexpectedly (out of memory?) while {doing}"
    return f"{prefix}: {exc!r}"
