"""Trace timeline routes: tracks, viewport, slice, search, summary (measure), counters; and
the download of the profile's trace file itself (`/trace/download`, the file as written).

The timeline is served from the backend's index (`analysis/trace.py`), level of detail
included, so the browser never holds the trace. Documented in docs/http_api.md.
"""
from __future__ import annotations

import os
import re

from .. import discovery, storage
from ..analysis import trace as trace_view
from ..analysis import trace_index as ti
from ..loading import Loader
from . import params
from .requests import _resolve, profile_from
from .responses import ApiError, file_response, json_response

MAX_WIDTH_PX = ti.MAX_WIDTH_PX  # the index keeps the LOD rows viewports this wide can read
MAX_TRACKS_PARAM = 4096
MAX_TRACK_ID = 1 << 31


def _index(loader: Loader, args):
    prof, key = profile_from(loader, args)
    run, worker, span = _resolve(loader, args)
    st = loader.span_state(run.name, worker.name, span)
    tstate = getattr(st, "trace_state", "ready")
    if tstate == "ready" and not ti.has_index(prof) and prof.directory and st is not None:
        # Opened before the second stage wrote the index: read the entry again rather than
        # building the index here.
        prof = loader.reopen(st) or prof
    if tstate in ("pending", "loading") and not ti.has_index(prof):
        raise ApiError(503, "the timeline is still being indexed", state="loading",
                       progress=0.5)
    if tstate == "error" and not ti.has_index(prof):
        raise ApiError(422, getattr(st, "trace_error", None) or "the timeline could not be"
                                                                " indexed", state="error")
    if not prof.has("slices") and not prof.has("counters"):
        raise ApiError(404, "this profile has no timeline data")
    return trace_view.index_for(prof, key), prof


def _window(args, idx, required: bool = True) -> tuple[int, int]:
    start = params.number(args, "start_us")
    end = params.number(args, "end_us")
    if start is None or end is None:
        if required:
            raise ApiError(400, "parameters 'start_us' and 'end_us' are required")
        return int(idx.meta["start_ns"]), int(idx.meta["end_ns"]) + 1
    if end <= start:
        raise ApiError(400, "end_us must be after start_us")
    return int(round(start * 1000)), int(round(end * 1000))


def _tracks(args) -> set[int] | None:
    return params.integers(args, "tracks", lo=0, hi=MAX_TRACK_ID, max_items=MAX_TRACKS_PARAM)


def tracks(request, loader: Loader):
    idx, _ = _index(loader, request.args)
    return json_response(idx.tracks())


def viewport(request, loader: Loader):
    idx, _ = _index(loader, request.args)
    t0, t1 = _window(request.args, idx)
    width = params.integer(request.args, "width_px", default=None, lo=1, hi=MAX_WIDTH_PX)
    if width is None:
        raise ApiError(400, "missing parameter 'width_px'")
    return json_response(idx.viewport(t0, t1, width, _tracks(request.args)))


def slice_details(request, loader: Loader):
    idx, prof = _index(loader, request.args)
    i = params.integer(request.args, "id", lo=0, hi=(1 << 62))
    if i is None:
        raise ApiError(400, "missing parameter 'id'")
    if i >= len(idx.start):
        raise ApiError(404, f"no slice with id {i}")
    return json_response(idx.slice(i, trace_view.args_reader(prof)))


def search(request, loader: Loader):
    idx, _ = _index(loader, request.args)
    a = request.args
    q = params.text(a, "q")
    regex = params.choice(a, "regex", ("0", "1", "false", "true"), "0") in ("1", "true")
    if q and regex:
        try:
            trace_view.compile_search(q)
        except ValueError as exc:
            raise ApiError(400, f"parameter 'q': invalid regular expression: {exc}") from None
    cat = params.text(a, "cat")
    lo = params.number(a, "min_dur_us", lo=0)
    hi = params.number(a, "max_dur_us", lo=0)
    if lo is not None and hi is not None and hi < lo:
        raise ApiError(400, "max_dur_us must not be below min_dur_us")
    track = params.integer(a, "track", lo=0, hi=MAX_TRACK_ID)
    if not (q or cat or lo is not None or hi is not None or track is not None):
        raise ApiError(400, "give at least one of q, cat, min_dur_us, max_dur_us, track")
    offset = params.integer(a, "offset", default=0, lo=0, hi=1 << 40)
    limit = params.integer(a, "limit", default=100, lo=1, hi=1000)
    after = params.number(a, "after_us")
    try:
        hits = idx.search(q, regex, cat, None if lo is None else int(lo * 1000),
                          None if hi is None else int(hi * 1000), track)
    except trace_view.SearchTimeout as exc:
        raise ApiError(400, f"parameter 'q': {exc}") from None
    if after is not None:  # page that starts at the first hit at or after a time
        import numpy as np
        offset = int(np.searchsorted(idx.start[hits], int(round(after * 1000)), side="left"))
    page = hits[offset:offset + limit]
    return json_response({"total": int(len(hits)), "offset": offset,
                          "hits": [idx._slice_brief(int(i)) for i in page]})


def summary(request, loader: Loader):
    idx, _ = _index(loader, request.args)
    t0, t1 = _window(request.args, idx)
    limit = params.integer(request.args, "limit", default=50, lo=1, hi=1000)
    return json_response(idx.summarize(t0, t1, _tracks(request.args), limit))


def counters(request, loader: Loader):
    idx, _ = _index(loader, request.args)
    t0, t1 = _window(request.args, idx, required=False)
    width = params.integer(request.args, "width_px", default=1000, lo=1, hi=MAX_WIDTH_PX)
    return json_response(idx.counters(t0, t1, width, _tracks(request.args)))


TRACE_FILES = [re.compile(p) for p in (
    r"^trace_view\.json(\.gz)?$", r"^msprof_\d+\.json$", r"^msprof_slice_\d+_\d+\.json$",
    r"^msprof_[\d_]+\.json$", r".*\.pt\.trace\.json(\.gz)?$", r".*_trace\.json(\.gz)?$")]


def trace_file(loader: Loader, args) -> str | None:
    run_, worker, span = _resolve(loader, args)
    src = worker.spans[span]
    for rx in TRACE_FILES:
        for f in src.files:
            if rx.match(os.path.basename(f)):
                return f
    return None


def trace_download(request, loader: Loader):
    path = trace_file(loader, request.args)
    if path is None or not os.path.isfile(path):
        raise ApiError(404, "this profile has no trace file")
    if not discovery.inside_logdir(path, loader.logdir):  # e.g. replaced by a symlink since
        raise ApiError(404, "this profile's trace file is outside the logdir")
    try:
        storage.materialize(loader.logdir, [path])  # a remote logdir's object not fetched yet
    except storage.StorageError as exc:
        raise ApiError(502, str(exc)) from exc
    name = os.path.basename(path)
    ctype = "application/gzip" if name.endswith(".gz") else "application/json"
    return file_response(request.environ, path, name, ctype)


ROUTES = {
    "/trace/tracks": tracks,
    "/trace/viewport": viewport,
    "/trace/slice": slice_details,
    "/trace/search": search,
    "/trace/summary": summary,
    "/trace/counters": counters,
    "/trace/download": trace_download,
}
