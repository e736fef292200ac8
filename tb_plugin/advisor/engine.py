"""Run the rules: one profile (`advise_profile`) or a whole run (`advise_run`).

Results are plain JSON-able dicts, the shape of the `/advisor` route:
{"findings": [finding...], "rules": [{"rule", "title", "applies", "fired", "why_not"}]}.
Findings are sorted by impact (largest `impact_us` first; findings without an estimate after
them, by severity). A rule that raises an unexpected error is reported as not applying, with
the error as its `why_not`: one broken rule never hides the others.
"""
from __future__ import annotations

import logging

import numpy as np

from ..analysis import distributed as dist
from ..model import Profile
from .core import SEVERITIES, Finding, NotApplicable, ProfileContext, link, severity_for
from .registry import PROFILE_RULES, RUN_RULES
from .thresholds import Thresholds

log = logging.getLogger(__name__)


def _run_rule(rule, ctx) -> tuple[list[Finding], dict]:
    try:
        found = list(rule.check(ctx))
        status = {"applies": True, "why_not": None}
    except NotApplicable as exc:
        found, status = [], {"applies": False, "why_not": str(exc)}
    except Exception as exc:  # a rule bug must not hide the other rules
        log.exception("advisor rule %s failed", rule.id)
        found, status = [], {"applies": False,
                             "why_not": f"the rule failed: {type(exc).__name__}: {exc}"}
    return found, {"rule": rule.id, "title": rule.title, "fired": len(found), **status}


def sort_findings(findings: list[dict]) -> list[dict]:
    sev = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: (f["impact_us"] is None, -(f["impact_us"] or 0.0),
                                           sev.get(f["severity"], 9), f["id"]))


def advise_profile(profile: Profile, thresholds: Thresholds, worker: str | None = None,
                   span: str | None = None, rank: int | None = None) -> dict:
    ctx = ProfileContext(profile, thresholds, worker, span, rank)
    findings, rules = [], []
    for rule in PROFILE_RULES:
        found, status = _run_rule(rule, ctx)
        findings += [f.to_json() for f in found]
        rules.append(status)
    return {"findings": sort_findings(findings), "rules": rules}


class RunContext:
    """The ranks of a run, as the distributed view's per-rank summaries."""

    def __init__(self, summaries: list[dict], thresholds: Thresholds, avg_step_us: float | None):
        self.summaries = summaries
        self.t = thresholds
        self.stats = [dist.rank_stats(s) for s in summaries]
        self.links = dist.links_table(summaries)
        self.step_count = max([len(s.get("steps") or []) for s in summaries] + [1])
        self.avg_step_us = avg_step_us

    def finding(self, rule, key, title, message, advice, impact_us, evidence, links, rank=None,
                worker=None, span=None, severity=None) -> Finding:
        pct = impact_us / self.avg_step_us * 100.0 if impact_us is not None and self.avg_step_us \
            else None
        return Finding(rule=rule, key=key, severity=severity or severity_for(pct, self.t),
                       title=title, message=message, advice=advice,
                       impact_us=None if impact_us is None else float(impact_us),
                       impact_pct=pct, evidence=evidence, links=links, worker=worker, span=span,
                       rank=rank)

    def link(self, view, **params):
        return link(view, **params)


def advise_ranks(summaries: list[dict], thresholds: Thresholds) -> dict:
    """The run-level rules over per-rank summaries (each with rank, worker, span)."""
    totals = [x["total_us"] for s in summaries for x in s.get("steps") or []]
    ctx = RunContext(summaries, thresholds, float(np.mean(totals)) if totals else None)
    findings, rules = [], []
    for rule in RUN_RULES:
        if len(summaries) < 2:
            found, status = [], {"rule": rule.id, "title": rule.title, "fired": 0,
                                 "applies": False, "why_not": "not a multi-rank run"}
        else:
            found, status = _run_rule(rule, ctx)
        findings += [f.to_json() for f in found]
        rules.append(status)
    return {"findings": findings, "rules": rules}


def merge(results: list[dict]) -> dict:
    """Several profiles' (and the run's) results as one: findings sorted by impact; a rule
    applies when it applies to any profile, `why_not` is the first reason otherwise."""
    findings = [f for r in results for f in r["findings"]]
    rules: dict[str, dict] = {}
    for r in results:
        for st in r["rules"]:
            cur = rules.get(st["rule"])
            if cur is None:
                rules[st["rule"]] = dict(st)
                continue
            cur["fired"] += st["fired"]
            if st["applies"] and not cur["applies"]:
                cur["applies"], cur["why_not"] = True, None
    return {"findings": sort_findings(findings), "rules": list(rules.values())}
