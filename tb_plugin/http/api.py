"""Routes of the profile views (overview, operators, memory, trace download), and
the request helpers every route module shares: find the profile a request names
(`profile_from`), answer a table (`_table_response`), the analysis-results LRU. A handler
parses and validates parameters, finds the profile, calls one analysis and serializes; no
analysis logic lives here.

Every handler takes (request, loader) and returns a werkzeug Response; `ApiError`s become
JSON errors (404 unknown run/worker/span, 400 bad parameter, 503 still loading).
"""
from __future__ import annotations

import os
import re

import pandas as pd

from .. import discovery, storage
from ..analysis import memory as memory_view
from ..analysis import operators as operators_view
from ..analysis import overview as overview_view
from ..analysis import tables
from ..loading import Loader
from ..lru import LRU
from ..model import Profile
from . import params
from .responses import ApiError, csv_response, file_response, json_response

# Analysis results (a table is computed once per profile and parameters).
_results: LRU = LRU(128)


# ---- profile lookup --------------------------------------------------------------------

def _resolve(loader: Loader, args, prefix: str = ""):
    run_name = params.text(args, prefix + "run", required=True)
    run = loader.run(run_name)
    if run is None:
        raise ApiError(404, f"unknown run {run_name!r}")
    worker_name = _member(args, prefix + "worker", run.workers, "worker", f"run {run_name!r}")
    worker = run.workers[worker_name]
    span_name = _member(args, prefix + "span", worker.spans, "span", f"worker {worker_name!r}")
    return run, worker, span_name


def _member(args, param: str, members: dict, what: str, owner: str) -> str:
    """The member named by `param`, or the only one when the parameter is left out."""
    name = params.text(args, param)
    if name is None:
        if len(members) != 1:
            raise ApiError(400, f"parameter '{param}' is required: {owner} has"
                                f" {len(members)} {what}s")
        return next(iter(members))
    if name not in members:
        raise ApiError(404, f"unknown {what} {name!r} of {owner}")
    return name


def profile_from(loader: Loader, args, prefix: str = "") -> tuple[Profile, str]:
    """The profile named by the request (`prefix` for compare's base_/exp_ parameters)."""
    run, worker, span = _resolve(loader, args, prefix)
    st = loader.span_state(run.name, worker.name, span)
    if st is None or st.state in ("pending", "loading"):
        status = loader.run_status(run.name)
        raise ApiError(503, "profile is still loading", state="loading",
                       progress=status["progress"])
    if st.state == "error":
        raise ApiError(422, st.error or "profile could not be read", state="error")
    prof = loader.profile_for(st)
    if prof is None:
        raise ApiError(422, st.error or "profile could not be read", state="error")
    return prof, st.key


# ---- table helper ------------------------------------------------------------------------

def _table_response(args, df: pd.DataFrame, default_sort: str, key_column: str,
                    filename: str, extra: dict | None = None):
    tp = params.table_params(args)
    try:
        if tp["format"] == "csv":
            page, total = tables.apply(df, tp["sort"], default_sort, tp["search"], key_column,
                                       paginate=False)
            return csv_response(tables.to_csv(page.head(tables.MAX_CSV_ROWS)), filename)
        page, total = tables.apply(df, tp["sort"], default_sort, tp["search"], key_column,
                                   tp["limit"], tp["offset"])
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    payload = {"total_rows": total, "offset": tp["offset"], "rows": tables.to_records(page)}
    if extra:
        payload.update(extra)
    return json_response(payload)


# ---- routes --------------------------------------------------------------------------------

def steps(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    data = _results.get_or_compute((key, "steps"), lambda: overview_view.steps(prof))
    return json_response(data)


def summary(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    data = _results.get_or_compute((key, "summary"), lambda: overview_view.summary(prof))
    return json_response(data)


def operators(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    group_by = params.choice(request.args, "group_by", ("name", "name_shape"), "name")
    df = _results.get_or_compute((key, "operators", group_by),
                      lambda: operators_view.table(prof, group_by))
    default = "-" + operators_view.default_sort(prof).lstrip("-")
    return _table_response(request.args, df, default, "name", f"operators_by_{group_by}.csv")


def operator_stack(request, loader: Loader):
    prof, _ = profile_from(loader, request.args)
    name = params.text(request.args, "name", required=True)
    shapes = params.text(request.args, "input_shapes")
    return json_response({"name": name, "input_shapes": shapes,
                          "stacks": operators_view.stacks(prof, name, shapes)})


def memory(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    max_points = params.integer(request.args, "max_points", default=2000, lo=10, hi=20000)
    data = _results.get_or_compute((key, "memory", max_points),
                        lambda: memory_view.summary(prof, max_points=max_points))
    return json_response(data)


def memory_allocations(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    start = params.number(request.args, "start_us")
    end = params.number(request.args, "end_us")
    if start is not None and end is not None and end < start:
        raise ApiError(400, "end_us must not be before start_us")
    df = memory_view.allocations(prof, start, end)
    return _table_response(request.args, df, "-size_kb", "name", "memory_allocations.csv")


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
    "/summary": summary,
    "/steps": steps,
    "/operators": operators,
    "/operators/stack": operator_stack,
    "/memory": memory,
    "/memory/allocations": memory_allocations,
    "/trace/download": trace_download,
}
