"""Route of the host dispatch path: `/dispatch?run&worker&span` (docs/http_api.md).

Thin: the document is `analysis.dispatch` (computed once per cache entry after the timeline
stage and kept as a derived document); the table parameters apply to its `ops`.
"""
from __future__ import annotations

from ..analysis import dispatch as dispatch_view
from ..analysis import tables
from ..lazy import pd
from ..loading import Loader
from . import params
from .requests import _resolve, profile_from
from .responses import ApiError, csv_response, json_response

OPS_DEFAULT_SORT = "-queue_wait_us"


def _document(loader: Loader, args) -> dict:
    prof, key = profile_from(loader, args)
    run, worker, span = _resolve(loader, args)
    st = loader.span_state(run.name, worker.name, span)
    tstate = getattr(st, "trace_state", "ready")
    if tstate == "ready" and not dispatch_view.applies(prof) and st is not None:
        prof = loader.reopen(st) or prof  # opened before the timeline stage finished
    if not dispatch_view.applies(prof):
        if tstate == "error":
            raise ApiError(422, getattr(st, "trace_error", None) or "the timeline could not "
                                                                     "be read", state="error")
        raise ApiError(503, "the timeline is still being read", state="loading", progress=0.5)
    if not prof.has("slices"):
        raise ApiError(404, "this profile has no timeline data")
    if st is not None and st.advice_state == "loading":
        # a reader is making the document right now (loading/build.py: build_advice)
        raise ApiError(503, "the dispatch path is being analysed", state="loading",
                       progress=0.9)
    return dispatch_view.cached_document(prof, loader.cache.root, key)


def dispatch(request, loader: Loader):
    tp = params.table_params(request.args)
    doc = _document(loader, request.args)
    ops = pd.DataFrame(doc["ops"], columns=list(doc["ops"][0]) if doc["ops"] else
                       list(dispatch_view.ops_table(pd.DataFrame()).columns))
    try:
        if tp["format"] == "csv":
            page, _ = tables.apply(ops, tp["sort"], OPS_DEFAULT_SORT, tp["search"], "name",
                                   paginate=False)
            return csv_response(tables.to_csv(page.head(tables.MAX_CSV_ROWS)), "dispatch_ops.csv")
        page, total = tables.apply(ops, tp["sort"], OPS_DEFAULT_SORT, tp["search"], "name",
                                   tp["limit"], tp["offset"])
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    return json_response({"total_rows": total, "offset": tp["offset"],
                          "ops": tables.to_records(page), "steps": doc["steps"],
                          "worst_gaps": doc["worst_gaps"], "summary": doc["summary"]})


ROUTES = {"/dispatch": dispatch}
