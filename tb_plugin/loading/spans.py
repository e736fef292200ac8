"""The state of one span (a worker's profile): its load stages and the facts kept when a
stage finishes.

    views:    pending -> loading -> ready | error
    timeline: pending -> loading -> ready | error      (starts once the views are ready)
    advice:   pending -> loading -> ready | error      (starts once the timeline is served)

The advice stage makes the documents that read every table, the timeline's included (the
advisor's findings, the dispatch path): it follows the timeline instead of preceding it, so
the timeline is served as soon as its index is written.

`SpanFacts` is what a finished build left in the cache entry that the run-level routes need
(row count per table, file errors, device, rank, whether there is a trace): it is read once
from the entry's meta when a stage finishes, so `/runs` and `/run` never open profiles.
"""
from __future__ import annotations

import dataclasses

from ..model import Profile
from ..span_source import SpanSource
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
    advice_state: str = "pending"  # the advice and dispatch documents: same states
    facts: SpanFacts | None = None  # set when the views are ready, renewed after the timeline

    @property
    def views_done(self) -> bool:
        return self.state in ("ready", "error")

    @property
    def trace_done(self) -> bool:
        """The timeline stage has finished, or will never run (the views failed)."""
        return self.trace_state in ("ready", "error") or self.state == "error"

    @property
    def advice_done(self) -> bool:
        """The advice stage has finished, or will never run (the timeline or views failed:
        the documents are then made on request from what there is)."""
        return self.advice_state in ("ready", "error") or self.trace_state == "error" \
            or self.state == "error"

    @property
    def all_done(self) -> bool:
        """Every load stage of this span has finished (or will never run)."""
        return self.views_done and self.trace_done and self.advice_done

    # ---- transitions -------------------------------------------------------------------
    def views_loading(self) -> None:
        self.state = "loading"

    def views_ready(self, facts: SpanFacts) -> None:
        self.facts = facts
        self.state = "ready"
        if facts.trace_ready:
            # From an earlier process: its advice stage ran after the timeline's (if it was
            # cut off, the documents are made on the first request instead).
            self.trace_state = "ready"
            self.advice_state = "ready"

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


    def advice_loading(self) -> None:
        self.advice_state = "loading"

    def advice_finished(self) -> None:
        self.advice_state = "ready"

    def advice_failed(self) -> None:
        # Not an error of the profile: the documents are made again on request.
        self.advice_state = "error"


def _failure(exc: BaseException, doing: str, prefix: str) -> str:
    if isinstance(exc, BrokenReader):
        return f"the reader process stopped unexpectedly (out of memory?) while {doing}"
    return f"{prefix}: {exc!r}"
