"""Route of the data pipeline view: `/data_pipeline?run=[&worker=&span=]` (docs/http_api.md).

Thin: the profile lookup is `requests.profile_from`, the work `analysis.data_pipeline.analyse`
with the advisor's thresholds (defaults plus $NPU_PROFILER_ADVISOR_THRESHOLDS), so the view
and the advisor rule judge the pipeline by the same numbers.
"""
from __future__ import annotations

from ..analysis import data_pipeline
from ..loading import Loader
from . import api_advisor
from .requests import _results, profile_from
from .responses import ApiError, json_response


def pipeline(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    try:
        t = api_advisor._thresholds()
    except ValueError as exc:
        raise ApiError(500, str(exc)) from None
    if not data_pipeline.available(prof):
        raise ApiError(404, "this profile has no data pipeline (MindData) files")
    data = _results.get_or_compute((key, "data_pipeline", t.fingerprint()),
                                   lambda: data_pipeline.analyse(prof, t))
    return json_response(data)


ROUTES = {"/data_pipeline": pipeline}
