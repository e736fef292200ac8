"""The view registry: every view of the UI declared once, as data.

A view is listed by `/run` when it is available for the run:
- a profile view (`tables` / `when_span`) when at least one ready span of the run has rows
  in one of `tables`, or `when_span(facts)` holds for it;
- a run-level view (`when_run`) when `when_run(loader, run)` holds;
- a view with `listed=False` never (the UI opens it from another view, e.g. compare).

The routes a view needs are in its route module (`routes`, a module with a `ROUTES` table);
`plugin.py` serves the routes of every module named here plus the run listing.
Adding a view: its analysis module, its route module, one line in `VIEWS` (and its
component in the frontend's own registry). Availability is decided from the facts kept
when a span's build finished (`loading.SpanFacts`), never by opening profiles.
"""
from __future__ import annotations

import dataclasses
from types import ModuleType
from typing import Callable

from ..discovery import Run
from ..loading import Loader, SpanFacts
from . import (api_advisor, api_data_pipeline, api_dispatch, api_distributed, api_kernels,
               api_memory, api_operators, api_overview, api_trace)


@dataclasses.dataclass(frozen=True)
class View:
    id: str
    title: str
    routes: ModuleType
    tables: tuple[str, ...] = ()
    when_span: Callable[[SpanFacts], bool] | None = None
    when_run: Callable[[Loader, Run], bool] | None = None
    listed: bool = True

    def available_for_span(self, facts: SpanFacts) -> bool:
        return (any(facts.has(t) for t in self.tables)
                or (self.when_span is not None and self.when_span(facts)))

    @property
    def per_profile(self) -> bool:
        return bool(self.tables) or self.when_span is not None


VIEWS: list[View] = [
    View("overview", "Overview", api_overview, tables=("steps",)),
    # Every ready profile can be advised (a rule that lacks its input says why not).
    View("advisor", "Advisor", api_advisor, when_span=lambda facts: True),
    View("operators", "Operators", api_operators, tables=("operators",)),
    View("kernels", "Kernels", api_kernels, tables=("kernels",)),
    View("memory", "Memory", api_memory,
         tables=("memory_records", "memory_allocations", "module_memory")),
    # A trace the views stage deferred has no slices yet, but will.
    View("trace", "Trace", api_trace, tables=("slices", "counters"),
         when_span=lambda facts: facts.trace_deferred),
    View("data_pipeline", "Data pipeline", api_data_pipeline,
         tables=("pipeline_ops", "pipeline_queues", "pipeline_summary")),
    # The host dispatch path is read from the trace (listed as soon as the span has one).
    View("dispatch", "Dispatch", api_dispatch, tables=("slices",),
         when_span=lambda facts: facts.trace_deferred),
    View("distributed", "Distributed", api_distributed,
         when_run=api_distributed.distributed_view_available),
    View("compare", "Compare", api_distributed, listed=False),
]


def available(loader: Loader, run: Run) -> list[View]:
    """The listed views of a run, in registry order."""
    facts = []
    for st in loader.span_states(run.name):
        if st.state == "ready" and st.facts is not None:
            facts.append(st.facts)
    out = []
    for view in VIEWS:
        if not view.listed:
            continue
        if view.per_profile and any(view.available_for_span(f) for f in facts):
            out.append(view)
        elif view.when_run is not None and view.when_run(loader, run):
            out.append(view)
    return out


def route_modules() -> list[ModuleType]:
    """The distinct route modules of the registered views, in registry order."""
    out: list[ModuleType] = []
    for view in VIEWS:
        if view.routes not in out:
            out.append(view.routes)
    return out
