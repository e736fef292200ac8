"""The advisor over what the loader has: one profile, or every profile of a run plus the
run-level rules. Shared by the `/advisor` route and the `npu-profiler` command, so both give
the same numbers from the same cache.
"""
from __future__ import annotations

import math

from ..analysis import distributed as dist
from .core import meta_value
from .engine import advise_profile, advise_ranks, merge
from .store import ADVISOR_VERSION, AdviceStore
from .thresholds import Thresholds

_advice = AdviceStore()
_summaries = dist.SummaryStore()


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
    r = worker.rank if worker.rank is not None else meta_value(prof, "rank")
    try:
        return int(r) if r is not None else None
    except (TypeError, ValueError):
        return None


def _trace_known(prof) -> bool:
    return bool(meta_value(prof, "trace_ready")) or not meta_value(prof, "trace_deferred")


def profile_result(loader, st, worker, span: str, thresholds: Thresholds) -> dict:
    """The advice of one ready profile (cached, see `store`)."""
    prof = loader.profile_for(st)
    if prof is None:
        return {"findings": [], "rules": []}
    rank = _rank(worker, prof)
    variant = f"v{ADVISOR_VERSION}-{thresholds.fingerprint()}-{'t' if _trace_known(prof) else 's'}"

    def compute():
        out = _clean(advise_profile(prof, thresholds, worker.name, span, rank))
        prof.release()
        return out

    return _advice.get(loader.cache.root, st.key, variant, compute)


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
            prof = loader.profile_for(st)
            rank = _rank(w, prof) if prof is not None else None
            if rank is None:
                continue

            def load(st=st):
                return loader.profile_for(st)

            summary = _summaries.get(loader.cache.root, st.key, load)
            if summary is not None:
                ranks.append({**summary, "rank": rank, "worker": w.name, "span": s})
        ranks.sort(key=lambda x: x["rank"])
    profiles = len(results)
    # Run-level rules need one profile per rank (a run whose workers share a rank is not
    # one distributed job).
    if worker is None and len({r["rank"] for r in ranks}) == len(ranks):
        results.append(_clean(advise_ranks(ranks, thresholds)))
    out = merge(results)
    out.update({"run": run.name, "worker": worker, "span": span, "profiles": profiles,
                "failed": failed})
    return out
