"""The load status of a run, as `/runs` and `/run` report it: a pure function of its spans'
states and facts (no profile is opened)."""
from __future__ import annotations

from .spans import SpanState


def run_status(name: str, states: list[SpanState], run_errors: list[dict] = ()) -> dict:
    """{"name", "state", "progress", "errors", "trace_state", "trace_progress"}.

    `state` is loading while any span's views load, error when every span is done and none
    yielded any data, else ready. `errors` are the file errors of the ready spans plus one
    entry per span whose views or timeline failed, after the run's own errors from
    discovery (e.g. a symlink out of the logdir that was not followed); a run with no span
    but such errors is in error. The timeline is indexed after the
    views are served, so it has its own state and progress: a span counts as done there
    once its timeline and its advice stage (the documents read from the timeline) are."""
    total = len(states)
    done = sum(1 for s in states if s.views_done)
    errors: list[dict] = list(run_errors)
    with_data = 0
    for st in states:
        if st.state == "error":
            errors.append({"path": st.span.rel(st.span.root), "message": st.error or ""})
        elif st.state == "ready":
            if st.facts is not None:
                errors.extend(st.facts.errors)
                with_data += st.facts.has_data
            if st.trace_state == "error":
                errors.append({"path": st.span.rel(st.span.root),
                               "message": st.trace_error or ""})
    if total and done < total:
        state = "loading"
    elif (total and with_data == 0) or (not total and errors):
        state = "error"
    else:
        state = "ready"
    traced = sum(1 for s in states if s.trace_done and s.advice_done)
    return {"name": name, "state": state, "progress": (done / total) if total else 1.0,
            "errors": errors,
            "trace_state": "loading" if traced < total else "ready",
            "trace_progress": (traced / total) if total else 1.0}
