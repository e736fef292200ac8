"""What a rule is, what it returns, and the per-profile facts rules share.

A rule is a module in `rules/` exposing `RULE = Rule(...)`; `registry.RULES` lists them.
`check(ctx)` returns a list of `Finding`s (empty: the rule applies and found nothing) or
raises `NotApplicable(reason)` when the profile lacks what the rule needs ("no trace",
"not an Ascend profile"). Run-level rules (straggler, slow_link) get a `RunContext`.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any, Callable

import numpy as np

from ..analysis import name_text
from ..analysis.kernels import is_gpu, view_rows
from ..lazy import pd
from ..model import Profile
from .thresholds import Thresholds

SEVERITIES = ("high", "medium", "low", "info")


class NotApplicable(Exception):
    """The rule cannot judge this profile; the message says why (shown as `why_not`)."""


@dataclasses.dataclass
class Finding:
    rule: str
    key: str                      # unique within (rule, worker, span): what the finding is about
    severity: str
    title: str
    message: str
    advice: str
    impact_us: float | None
    impact_pct: float | None
    evidence: dict
    links: list[dict]
    worker: str | None = None
    span: str | None = None
    rank: int | None = None

    def to_json(self) -> dict:
        ident = ":".join(str(x) for x in (self.rule, self.worker or "", self.span or "", self.key))
        return {"id": ident, "rule": self.rule, "severity": self.severity, "title": self.title,
                "message": self.message, "advice": self.advice, "impact_us": self.impact_us,
                "impact_pct": self.impact_pct, "worker": self.worker, "span": self.span,
                "rank": self.rank, "evidence": self.evidence, "links": self.links}


@dataclasses.dataclass(frozen=True)
class Rule:
    id: str
    title: str
    check: Callable[[Any], list[Finding]]
    scope: str = "profile"        # profile | run


def link(view: str, **params) -> dict:
    return {"view": view, "params": {k: v for k, v in params.items() if v is not None}}


def meta_value(profile: Profile, key: str, default=None):
    """The one place the advisor reads profile metadata (a declared `ProfileMeta` field;
    a misspelt key raises KeyError)."""
    return profile.meta.get(key, default)


def severity_for(pct: float | None, t: Thresholds) -> str:
    if pct is None:
        return "low"
    if pct >= t["severity_high_pct"]:
        return "high"
    if pct >= t["severity_medium_pct"]:
        return "medium"
    return "low"


def us(ns) -> float:
    return float(ns) / 1000.0


def matching_codes(series: pd.Series, pattern: str, flags=re.I) -> np.ndarray:
    """Row mask of a (categorical) name column matching `pattern` (`re.search`), tested once
    per name (analysis/name_text.py: the names' text converted once per column)."""
    return name_text.regex_mask(series, pattern, flags)


class ProfileContext:
    """One profile plus the facts several rules need, each computed at most once."""

    def __init__(self, profile: Profile, thresholds: Thresholds, worker: str | None = None,
                 span: str | None = None, rank: int | None = None):
        self.profile = profile
        self.t = thresholds
        self.worker = worker
        self.span = span
        r = rank if rank is not None else meta_value(profile, "rank")
        try:
            self.rank = int(r) if r is not None else None
        except (TypeError, ValueError):
            self.rank = None

    # ---- what kind of profile --------------------------------------------------------
    def meta(self, key: str, default=None):
        return meta_value(self.profile, key, default)

    @functools.cached_property
    def is_gpu(self) -> bool:
        return is_gpu(self.profile)

    @functools.cached_property
    def is_npu(self) -> bool:
        return self.meta("device") == "npu" or self.meta("producer") in (
            "torch_npu", "mindspore", "msprof", "mindspore_legacy")

    def require_npu(self) -> None:
        if not self.is_npu:
            raise NotApplicable("not an Ascend profile")

    def require_gpu(self) -> None:
        if not self.is_gpu:
            raise NotApplicable("not a GPU (kineto) profile")

    @property
    def trace_pending(self) -> bool:
        return bool(self.meta("trace_deferred")) and not self.meta("trace_ready")

    def require_trace(self) -> None:
        if self.trace_pending:
            raise NotApplicable("the timeline is still being read")
        if not self.profile.has("slices"):
            raise NotApplicable("no trace (timeline) in this profile")

    def require_kernels(self) -> None:
        if not self.profile.has("kernels"):
            raise NotApplicable("no device kernels (tasks) in this profile")

    # ---- steps -----------------------------------------------------------------------
    @functools.cached_property
    def steps(self) -> pd.DataFrame:
        s = self.profile.table("steps")
        return s.sort_values("step", kind="stable").reset_index(drop=True) if len(s) else s

    @functools.cached_property
    def step_count(self) -> int:
        return int(len(self.steps))

    @functools.cached_property
    def avg_step_us(self) -> float | None:
        if self.step_count == 0:
            return None
        v = float(self.steps["total_ns"].to_numpy(dtype=np.float64).mean()) / 1000.0
        return v if v > 0 else None

    def per_step(self, total_us: float) -> float:
        """A whole-profile total turned into a per-step value (the profile is one step when
        it has no steps)."""
        return total_us / max(self.step_count, 1)

    def category_ns(self, category: str) -> np.ndarray | None:
        col = f"bd_{category}"
        if self.step_count == 0 or col not in self.steps.columns:
            return None
        return np.nan_to_num(pd.to_numeric(self.steps[col], errors="coerce")
                             .to_numpy(dtype=np.float64), nan=0.0)

    def category_pct(self, category: str) -> float | None:
        """Mean share of the step time (%) of a breakdown category."""
        v = self.category_ns(category)
        if v is None or not self.avg_step_us:
            return None
        return float(v.mean() / 1000.0 / self.avg_step_us * 100.0)

    # ---- kernels ---------------------------------------------------------------------
    @functools.cached_property
    def kernels(self) -> pd.DataFrame:
        return view_rows(self.profile)

    @functools.cached_property
    def comm_mask(self) -> np.ndarray:
        k = self.kernels
        core = matching_codes(k["core_type"], r"^(COMMUNICATION|HCCL)$")
        name = matching_codes(k["name"], r"^hcom_|nccl|hccl|gloo")
        return core | name

    @functools.cached_property
    def compute_kernels(self) -> pd.DataFrame:
        """Device kernels without communication tasks."""
        m = self.comm_mask
        return self.kernels[~m] if m.any() else self.kernels

    @functools.cached_property
    def device_ns(self) -> int:
        """Total device compute time (sum of the compute kernels' durations)."""
        return int(self.compute_kernels["dur_ns"].to_numpy(dtype=np.int64).sum())

    # ---- trace -----------------------------------------------------------------------
    @functools.cached_property
    def slices(self) -> pd.DataFrame:
        return self.profile.table("slices")

    @functools.cached_property
    def tracks(self) -> pd.DataFrame:
        return self.profile.table("tracks")

    def track_ids(self, *kinds: str) -> np.ndarray:
        t = self.tracks
        if len(t) == 0:
            return np.zeros(0, dtype=np.int64)
        return t.loc[t["kind"].astype(str).isin(kinds), "track_id"].to_numpy(dtype=np.int64)

    def slices_matching(self, pattern: str, kinds: tuple[str, ...] | None = None) -> pd.DataFrame:
        s = self.slices
        mask = matching_codes(s["name"], pattern)
        if kinds is not None and mask.any():
            mask &= np.isin(s["track_id"].to_numpy(), self.track_ids(*kinds))
        return s[mask]

    # ---- findings --------------------------------------------------------------------
    def finding(self, rule: str, key: str, title: str, message: str, advice: str,
                impact_us: float | None, evidence: dict, links: list[dict],
                severity: str | None = None) -> Finding:
        pct = None
        if impact_us is not None and self.avg_step_us:
            pct = impact_us / self.avg_step_us * 100.0
        return Finding(rule=rule, key=key, severity=severity or severity_for(pct, self.t),
                       title=title, message=message, advice=advice,
                       impact_us=None if impact_us is None else float(impact_us),
                       impact_pct=pct, evidence=evidence, links=links,
                       worker=self.worker, span=self.span, rank=self.rank)

    def link(self, view: str, **params) -> dict:
        return link(view, **{"worker": self.worker, "span": self.span, **params})
