"""Routes of the overview: the step breakdown (`/steps`) and the key figures (`/summary`) of
one profile, from analysis/overview.py. Documented in docs/http_api.md.
"""
from __future__ import annotations

from ..analysis import overview as overview_view
from ..loading import Loader
from .requests import profile_raw_result, profile_from
from .responses import json_response


def steps(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    data = profile_raw_result(prof, key, overview_view.steps)
    return json_response(data)


def summary(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    data = profile_raw_result(prof, key, overview_view.summary)
    return json_response(data)


ROUTES = {
    "/summary": summary,
    "/steps": steps,
}
