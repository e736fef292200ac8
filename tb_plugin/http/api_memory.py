"""Routes of the memory view: curves and peaks (`/memory`) and the allocations in a window
(`/memory/allocations`) of one profile, from analysis/memory.py. Documented in
docs/http_api.md.
"""
from __future__ import annotations

from ..analysis import memory as memory_view
from ..loading import Loader
from . import params
from .requests import _table_response, profile_raw_result, profile_from
from .responses import ApiError, json_response


def memory(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    max_points = params.integer(request.args, "max_points", default=2000, lo=10, hi=20000)
    data = profile_raw_result(prof, key, memory_view.summary, max_points=max_points)
    return json_response(data)


def memory_allocations(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    start = params.number(request.args, "start_us")
    end = params.number(request.args, "end_us")
    if start is not None and end is not None and end < start:
        raise ApiError(400, "end_us must not be before start_us")
    df = memory_view.allocations(prof, start, end)
    return _table_response(request.args, df, "-size_kb", "name", "memory_allocations.csv")


ROUTES = {
    "/memory": memory,
    "/memory/allocations": memory_allocations,
}
