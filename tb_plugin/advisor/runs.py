"""The advisor over what the loader has: one profile, or every profile of a run plus the
run-level rules. Shared by the `/advisor` route and the `npu-profiler` command, so both give
the same numbers from the same cache.
"""
from __future__ import annotations

import math

from ..analysis import rank_summary
from .core import meta_value
from .engine import advise_profile, advise_ranks, merge
from .registry import RUN_RULES
from .store import ADVISOR_VERSION, AdviceStore
from .thresholds import Thresholds, load

_advice = AdviceStore()
_summaries = rank_summary.SummaryStore()


class StillLoading(Exception):
    def __init__(self, progress: float):
        super().__init__("profiles are still loading")
        self.progress = progress


def _clean(o):
    if isinstance(o, float):
        return None if math.isnan(o) or math.isinf(o) else o
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def _rank(worker, prof) -> int | None:
    r = worker.rank if worker.rank is not None or prof is None else meta_value(prof, "rank")
    try:
        return int(r) if r is not None else None
    except (TypeError, ValueError):
        return None


def variant(thresholds: Thresholds, trace_ready: bool) -> str:
    """What the stored advice depends on besides the profile: the advisor version, the
    thresholds and whether the timeline had been read."""
    return f"v{ADVISOR_VERSION}-{thresholds.fingerprint()}-{'t' if trace_ready else 's'}"


def compute_profile(prof, thresholds: Thresholds, worker: str, span: str,
                    rank: int | None) -> dict:
    out = _clean(advise_profile(prof, thresholds, worker, span, rank))
    prof.release()
    return out


def profile_result(loader, st, worker, span: str, thresholds: Thresholds) -> dict:
    """The advice of one ready profile: from the store, else computed once."""
    # The stored advice with the timeline is there once the advice stage ran (until then
    # the views' tables are advised, as while the timeline is read).
    trace_ready = getattr(st, "advice_done", True)

    def compute():
        prof = loader.profile_for(st)
        if prof is None:
            return {"findings": [], "rules": []}
        return compute_profile(prof, thresholds, worker.name, span, _rank(worker, prof))

    return _advice.get(loader.cache.root, st.key, variant(thresholds, trace_ready), compute)


def precompute(profile, span_source, cache_root: str, key: str,
               thresholds: Thresholds | None = None) -> None:
    """Store a profile's advice from the reader process (after the timeline stage), so the
    first request finds it: `loading.build_trace` may call this with the profile it wrote."""
    t = thresholds or load()
    _advice.get(cache_root, key, variant(t, True),
                lambda: compute_profile(profile, t, span_source.worker, span_source.span,
                                        span_source.rank if span_source.rank is not None
                                        else meta_value(profile, "rank")))


def _states(loader, run, worker_name, span_name):
    out = []
    for w in run.sorted_workers():
        if worker_name is not None and w.name != worker_name:
            continue
        for s in w.sorted_spans():
            if span_name is not None and s != span_name:
                continue
            out.append((w, s, loader.span_state(run.name, w.name, s)))
    return out


def run_result(loader, run, thresholds: Thresholds, worker: str | None = None,
               span: str | None = None) -> dict:
    """Advice for `run` (every profile and the run-level rules) or for one worker / span.

    Raises StillLoading while a profile it needs is being read."""
    states = _states(loader, run, worker, span)
    pending = [x for x in states if x[2] is None or x[2].state in ("pending", "loading")]
    if pending:
        raise StillLoading((len(states) - len(pending)) / max(len(states), 1))
    results, failed, ranks = [], [], []
    first_span = {}
    for w, s, st in states:
        if st.state != "ready":
            failed.append({"worker": w.name, "span": s, "error": st.error})
            continue
        results.append(profile_result(loader, st, w, s, thresholds))
        if w.name not in first_span:
            first_span[w.name] = (w, s, st)
    if worker is None:
        for w, s, st in first_span.values():
            # the worker's rank from discovery; only workers without one open their profile
            rank = w.rank if w.rank is not None else _rank(w, loader.profile_for(st))
            if rank is None:
                continue

            def open_profile(st=st):
                return loader.profile_for(st)

            summary = _summaries.get(loader.cache.root, st.key, open_profile)
            if summary is not None:
                ranks.append({**summary, "rank": rank, "worker": w.name, "span": s})
        ranks.sort(key=lambda x: x["rank"])
    profiles = len(results)
    # Run-level rules need one profile per rank (a run whose workers share a rank is not
    # one distributed job).
    if worker is None and len({r["rank"] for r in ranks}) == len(ranks):
        results.append(_clean(advise_ranks(ranks, thresholds)))
    elif worker is not None:
        results.append({"findings": [], "rules": [
            {"rule": r.id, "title": r.title, "applies": False, "fired": 0,
             "why_not": "a run-level rule: ask for the whole run (without worker)"}
            for r in RUN_RULES]})
    out = merge(results)
    out.update({"run": run.name, "worker": worker, "span": span, "profiles": profiles,
                "failed": failed})
    return out
