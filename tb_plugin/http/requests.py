"""The request helpers every route module shares: find the profile a request names
(`profile_from`), answer a table (`_table_response`), the analysis-results LRU. A handler
parses and validates parameters, finds the profile, calls one analysis and serializes; no
analysis logic lives here.

Every handler takes (request, loader) and returns a werkzeug Response; `ApiError`s become
JSON errors (404 unknown run/worker/span, 400 bad parameter, 503 still loading).
"""
from __future__ import annotations

from ..analysis import tables
from ..lazy import pd
from ..loading import Loader
from ..lru import LRU
from ..model import Profile
from . import params
from .responses import ApiError, csv_response, json_response

# Analysis results (a table is computed once per profile and parameters).
_results: LRU = LRU(128)


def profile_result(prof: Profile, key: str, fn, **kwargs):
    """`fn(prof, **kwargs)` for the profile of cache entry `key`: from the results LRU, else
    read from the entry when it is a stored analysis (analysis/stored.py: the views' first
    answers, made at load time), else computed."""
    from ..analysis import stored

    return _results.get_or_compute(_memo_key(prof, key, fn, kwargs),
                                   lambda: stored.result(prof, fn, **kwargs))


def profile_raw_result(prof: Profile, key: str, fn, **kwargs):
    """`profile_result` for a route that sends the result on: a stored result as stored
    (`stored.raw_read`: JSON text, which `json_response` writes out unchanged, or an Arrow
    table, paged by `arrow_table_page`), else `profile_result`'s value."""
    from ..analysis import stored

    raw = _results.get_or_compute(_memo_key(prof, key, fn, kwargs, "raw"),
                                  lambda: stored.raw_read(prof, fn, **kwargs))
    return raw if raw is not None else profile_result(prof, key, fn, **kwargs)


def _memo_key(prof: Profile, key: str, fn, kwargs: dict, *form) -> tuple:
    # (trace_ready: the timeline stage may rewrite tables of the entry, e.g. the steps)
    return (key, prof.meta.trace_ready, fn.__module__, fn.__qualname__,
            tuple(sorted(kwargs.items())), *form)


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

def arrow_table_page(tp: dict, raw, default_sort: str) -> dict | None:
    """The JSON page of a stored table still in Arrow (`profile_raw_result`), cut there
    (`tables.arrow_page`) for the table parameters `tp` (`params.table_params`):
    {"total_rows", "offset", "rows"} as `_table_response` makes them; None when the
    request needs the frame (a computed frame, a search, a CSV download, a sort Arrow
    cannot order as pandas does)."""
    import pyarrow as pa

    if not isinstance(raw, pa.Table):
        return None
    if tp["format"] == "csv" or tp["search"]:
        return None
    try:
        page = tables.arrow_page(raw, tp["sort"], default_sort, tp["limit"], tp["offset"])
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    if page is None:
        return None
    rows, total = page
    return {"total_rows": total, "offset": tp["offset"], "rows": rows}


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
