"""Routes of the distributed (multi-rank) view and of the comparison of two profiles.

Distributed: a run whose workers are ranks (a rank from discovery, or `meta.rank` of the
profile). Per-rank summaries come from `analysis.rank_summary.SummaryStore` (memory, then a
JSON file per cache entry, then computed once from the rank's tables), and the whole-run
result is kept in an LRU keyed by the ranks' cache keys, so a request never reloads every
rank's tables. Compare: two profiles named by `base_*` and `exp_*` parameters.
"""
from __future__ import annotations

import threading

from ..advisor import thresholds as advisor_thresholds
from ..analysis import compare as compare_view
from ..analysis import distributed as dist
from ..analysis import rank_summary
from ..loading import Loader
from ..lru import LRU
from . import params
from .requests import _table_response, profile_from
from .responses import ApiError, json_response

_summaries = rank_summary.SummaryStore()
_run_results: LRU = LRU(16)
_compare_results: LRU = LRU(64)
_build_lock = threading.Lock()


# ---- which spans make up the distributed view ------------------------------------------------

def _rank_of(worker, st) -> int | None:
    """The worker's rank from discovery, else the one its loaded profile names."""
    if worker.rank is not None:
        return int(worker.rank)
    facts = st.facts if st is not None and st.state == "ready" else None
    return facts.rank if facts is not None else None


def _rank_spans(loader: Loader, run, span_name: str | None, span_index: int):
    """[(rank, worker, span, SpanState)] sorted by rank, one span per ranked worker."""
    out = []
    for w in run.sorted_workers():
        spans = w.sorted_spans()
        if span_name is not None:
            if span_name not in w.spans:
                continue
            span = span_name
        elif span_index < len(spans):
            span = spans[span_index]
        else:
            continue
        st = loader.span_state(run.name, w.name, span)
        out.append((w, span, st))
    ranked = []
    for w, span, st in out:
        rank = _rank_of(w, st)
        if rank is not None:
            ranked.append((rank, w, span, st))
    ranked.sort(key=lambda x: x[0])
    return ranked


def distributed_view_available(loader: Loader, run) -> bool:
    """A run has the distributed view when at least two of its workers have distinct ranks."""
    ranks = set()
    for w in run.workers.values():
        if w.rank is not None:
            ranks.add(w.rank)
        else:
            for s in w.sorted_spans()[:1]:
                st = loader.span_state(run.name, w.name, s)
                r = _rank_of(w, st)
                if r is not None:
                    ranks.add(r)
        if len(ranks) >= 2:
            return True
    return False


def _collect(loader: Loader, args):
    name = params.text(args, "run", required=True)
    run = loader.run(name)
    if run is None:
        raise ApiError(404, f"unknown run {name!r}")
    span_name = params.text(args, "span")
    span_index = params.integer(args, "span_index", default=0, lo=0, hi=1 << 20)
    ranked = _rank_spans(loader, run, span_name, span_index)
    if span_name is not None and not ranked:
        raise ApiError(404, f"no ranked worker of run {name!r} has span {span_name!r}")
    if len(ranked) < 1:
        raise ApiError(404, f"run {name!r} has no ranked workers (not a distributed job)")
    pending = [x for x in ranked if x[3] is None or x[3].state in ("pending", "loading")]
    if pending:
        done = len(ranked) - len(pending)
        raise ApiError(503, "ranks are still loading", state="loading",
                       progress=done / len(ranked))
    keys = tuple((r, w.name, s, st.key) for r, w, s, st in ranked if st.state == "ready")
    failed = [{"rank": r, "worker": w.name, "span": s, "error": st.error}
              for r, w, s, st in ranked if st.state != "ready"]
    return run, keys, failed, max((len(w.spans) for w in run.workers.values()), default=0)


def _summaries_for(loader: Loader, run, keys) -> list[dict]:
    # From a shared cache, every rank's summary in one batch of requests.
    loader.cache.prefetch([k for *_, k in keys], "distributed", rank_summary.SUMMARY_SUFFIX)
    out = []
    for rank, worker, span, key in keys:
        def load(worker=worker, span=span):
            st = loader.span_state(run.name, worker, span)
            return loader.profile_for(st) if st is not None else None

        s = _summaries.get(loader.cache.root, key, load)
        if s is None:
            continue
        out.append({**s, "rank": rank, "worker": worker, "span": span})
    return out


def _run_data(loader: Loader, run, keys):
    def build():
        summaries = _summaries_for(loader, run, keys)
        return summaries, dist.run_view(summaries, advisor_thresholds.load())

    with _build_lock:  # one build per run at a time; concurrent callers wait for it
        return _run_results.get_or_compute(("distributed", run.name, keys), build)


# ---- routes ----------------------------------------------------------------------------------

def distributed(request, loader: Loader):
    run, keys, failed, span_count = _collect(loader, request.args)
    rank_sort = params.text(request.args, "rank_sort", default="rank")
    offset = params.integer(request.args, "rank_offset", default=0, lo=0, hi=1 << 40)
    limit = params.integer(request.args, "rank_limit", default=64, lo=0, hi=4096)
    summaries, view = _run_data(loader, run, keys)
    try:
        ranks, total = dist.page_ranks(summaries, rank_sort, offset, limit)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    return json_response({
        "run": run.name, "span_index": params.integer(request.args, "span_index", default=0),
        "span": params.text(request.args, "span"), "span_count": span_count,
        "total_ranks": total, "rank_offset": offset, "rank_sort": rank_sort,
        "ranks": ranks, "failed": failed, **view,
    })


def distributed_comm_ops(request, loader: Loader):
    run, keys, _, _ = _collect(loader, request.args)
    group_by = params.choice(request.args, "group_by", ("op", "rank"), "op")
    summaries, _ = _run_data(loader, run, keys)
    df = _run_results.get_or_compute(("distributed-comm", run.name, keys, group_by),
                          lambda: dist.comm_table(summaries, by_rank=group_by == "rank"))
    return _table_response(request.args, df, "-total_us", "name",
                           f"communication_by_{group_by}.csv")


def distributed_links(request, loader: Loader):
    run, keys, _, _ = _collect(loader, request.args)
    summaries, _ = _run_data(loader, run, keys)
    df = _run_results.get_or_compute(("distributed-links", run.name, keys),
                          lambda: dist.links_table(summaries))
    return _table_response(request.args, df, "bandwidth_gbps", "link",
                           "communication_links.csv")


def _pair(loader: Loader, args):
    base, bkey = profile_from(loader, args, prefix="base_")
    exp, ekey = profile_from(loader, args, prefix="exp_")
    return base, bkey, exp, ekey


def compare_steps(request, loader: Loader):
    base, bkey, exp, ekey = _pair(loader, request.args)
    data = _compare_results.get_or_compute(("steps", bkey, ekey), lambda: compare_view.steps(base, exp))
    return json_response(data)


def compare_operators(request, loader: Loader):
    base, bkey, exp, ekey = _pair(loader, request.args)
    group_by = params.choice(request.args, "group_by", ("name", "name_shape"), "name")
    presence = params.choice(request.args, "presence", ("all", "both", "base", "exp"), "all")
    df = _compare_results.get_or_compute(("operators", bkey, ekey, group_by),
                              lambda: compare_view.operators_table(base, exp, group_by))
    extra = {"summary": compare_view.summary_of(df),
             "time_basis": {"base": compare_view.time_basis(base),
                            "exp": compare_view.time_basis(exp)}}
    if presence != "all":
        df = df[df["presence"].astype(str).to_numpy() == presence]
    return _table_response(request.args, df, "-impact_us", "name",
                           f"compare_operators_by_{group_by}.csv", extra)


def compare_kernels(request, loader: Loader):
    base, bkey, exp, ekey = _pair(loader, request.args)
    group_by = params.choice(request.args, "group_by", ("name", "type", "core"), "name")
    presence = params.choice(request.args, "presence", ("all", "both", "base", "exp"), "all")
    df = _compare_results.get_or_compute(("kernels", bkey, ekey, group_by),
                              lambda: compare_view.kernels_table(base, exp, group_by))
    extra = {"summary": compare_view.summary_of(df)}
    if presence != "all":
        df = df[df["presence"].astype(str).to_numpy() == presence]
    return _table_response(request.args, df, "-impact_us", group_by,
                           f"compare_kernels_by_{group_by}.csv", extra)


ROUTES = {
    "/distributed": distributed,
    "/distributed/comm_ops": distributed_comm_ops,
    "/distributed/links": distributed_links,
    "/compare/steps": compare_steps,
    "/compare/operators": compare_operators,
    "/compare/kernels": compare_kernels,
}
