"""Route of the advisor: `/advisor?run=[&worker=&span=]` (documented in docs/http_api.md).

Thin: parameters are validated here, the work is `advisor.runs.run_result` (advice computed
once per profile and cached). Thresholds are the table's defaults with the overrides of
$NPU_PROFILER_ADVISOR_THRESHOLDS, read once per process.
"""
from __future__ import annotations

import functools

from ..advisor import runs as advisor_runs
from ..advisor import thresholds as advisor_thresholds
from ..loading import Loader
from . import params
from .responses import ApiError, json_response


@functools.lru_cache(maxsize=1)
def _thresholds():
    return advisor_thresholds.load()


def advisor(request, loader: Loader):
    name = params.text(request.args, "run", required=True)
    run = loader.run(name)
    if run is None:
        raise ApiError(404, f"unknown run {name!r}")
    worker = params.text(request.args, "worker")
    span = params.text(request.args, "span")
    if worker is not None and worker not in run.workers:
        raise ApiError(404, f"unknown worker {worker!r} of run {name!r}")
    if span is not None:
        owners = [run.workers[worker]] if worker is not None else list(run.workers.values())
        if not any(span in w.spans for w in owners):
            raise ApiError(404, f"unknown span {span!r} of run {name!r}")
    try:
        thresholds = _thresholds()
    except ValueError as exc:
        raise ApiError(500, str(exc)) from None
    try:
        data = advisor_runs.run_result(loader, run, thresholds, worker, span)
    except advisor_runs.StillLoading as exc:
        raise ApiError(503, "profiles are still loading", state="loading",
                       progress=exc.progress) from None
    return json_response(data)


ROUTES = {"/advisor": advisor}
