"""Run-level routes: the run list with load status (`/runs`) and one run's workers, spans and
views (`/run`). Both answer from the loader's span states and the facts kept when each
build finished, so they never open a profile."""
from __future__ import annotations

from ..loading import Loader
from . import holding, params, views
from .responses import ApiError, json_response


def runs(request, loader: Loader):
    holding.hold_while_unchanged(loader, request.args)  # `since` + `wait_ms`
    generation = loader.generation  # read first: a change while answering shows next time
    out = [loader.run_status(r.name) for r in loader.runs()]
    return json_response({"runs": out, "scanned": loader.wait_scanned(0),
                          "notes": loader.notes(), "generation": generation})


def run(request, loader: Loader):
    name = params.text(request.args, "run", required=True)
    r = loader.run(name)
    if r is None:
        raise ApiError(404, f"unknown run {name!r}")
    workers = []
    for w in r.sorted_workers():
        device = w.device
        for span in w.sorted_spans():
            st = loader.span_state(r.name, w.name, span)
            if st is not None and st.state == "ready" and st.facts is not None \
                    and st.facts.device is not None:
                device = st.facts.device
        workers.append({"name": w.name, "rank": w.rank, "device": device,
                        "producer": w.producer, "spans": w.sorted_spans()})
    listed = views.available(loader, r)
    status = loader.run_status(r.name)
    return json_response({"name": r.name, "views": [v.id for v in listed],
                          "titles": {v.id: v.title for v in listed}, "workers": workers,
                          "state": status["state"], "progress": status["progress"],
                          "errors": status["errors"]})


ROUTES = {
    "/runs": runs,
    "/run": run,
}
