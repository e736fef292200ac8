"""Comparison of two profiles (base vs experiment), from any producers.

Pure functions over the views' own tables (`overview.steps`, `operators.table`,
`kernels.table`, `rank_summary.step_breakdown`), so a compare row always equals what the
single-profile views show for each side.

Definitions:
- Steps: the mean step time of each side and the mean of each breakdown category, for the
  producer categories (union of both sides; a category one side lacks is null there) and
  for the common categories of `analysis.rank_summary` (computing,
  communication_not_overlapped, overlapped, free), which exist for NPU and GPU alike.
- delta_us = exp_us - base_us; delta_pct = delta_us / base_us * 100 (null when base_us is
  0 or missing). Only-in rows have the missing side null, delta_us = the present side's
  time (positive when only in exp, negative when only in base), delta_pct null.
- Operators are joined by name ("name") or by (name, input shapes) ("name_shape"). The
  time of a side is its device self time when that profile has device time, else its host
  self time (`time_basis` says which per side). host / device columns of both sides are
  included.
- Kernels are joined by name, type or core type; the time is the total kernel time.
- `presence`: "both" | "base" | "exp". impact_us = |delta_us|; default order impact_us
  descending (biggest changes first).
All times in microseconds.
"""
from __future__ import annotations

import numpy as np

from ..lazy import pd
from ..model import Profile
from ..step_categories import step_category_label
from . import kernels, operators, overview, rank_summary


def _delta(base, exp):
    if base is None and exp is None:
        return None, None
    d = (exp or 0.0) - (base or 0.0)
    pct = d / base * 100.0 if base not in (None, 0) and exp is not None else None
    return d, pct


def _avg(values):
    return float(np.mean(values)) if values else None


def steps(base: Profile, exp: Profile) -> dict:
    b, e = overview.steps(base), overview.steps(exp)

    def side(data, cat):
        if cat not in data["categories"] or not data["steps"]:
            return None
        return _avg([s["breakdown"].get(cat, 0.0) for s in data["steps"]])

    rows = []
    bt = _avg([s["total_us"] for s in b["steps"]])
    et = _avg([s["total_us"] for s in e["steps"]])
    d, p = _delta(bt, et)
    rows.append({"category": "step_time", "base_us": bt, "exp_us": et, "delta_us": d,
                 "delta_pct": p})
    cats = list(b["categories"]) + [c for c in e["categories"] if c not in b["categories"]]
    for c in cats:
        bv, ev = side(b, c), side(e, c)
        d, p = _delta(bv, ev)
        rows.append({"category": c, "base_us": bv, "exp_us": ev, "delta_us": d, "delta_pct": p})
    bc, ec = rank_summary.step_breakdown(base), rank_summary.step_breakdown(exp)
    common = []
    for c in rank_summary.CATEGORIES:
        bv = _avg([s["breakdown"][c] for s in bc if c in s["breakdown"]])
        ev = _avg([s["breakdown"][c] for s in ec if c in s["breakdown"]])
        d, p = _delta(bv, ev)
        common.append({"category": c, "base_us": bv, "exp_us": ev, "delta_us": d,
                       "delta_pct": p})
    return {
        "base": {"producer": base.meta.producer, "device": base.meta.device,
                 "step_count": len(b["steps"]), "categories": b["categories"],
                 "steps": b["steps"]},
        "exp": {"producer": exp.meta.producer, "device": exp.meta.device,
                "step_count": len(e["steps"]), "categories": e["categories"],
                "steps": e["steps"]},
        "rows": rows,
        "common": common,
        "category_labels": {c: step_category_label(c)
                            for c in dict.fromkeys(cats + list(rank_summary.CATEGORIES))},
    }


def _join(bt: pd.DataFrame, et: pd.DataFrame, keys: list[str], bcol: str, ecol: str,
          extra: dict[str, str]) -> pd.DataFrame:
    """Outer join of two view tables on `keys`; `extra` maps output suffix -> source column."""
    def prep(t, col, side):
        out = {k: t[k].astype("string").fillna("").astype(object) for k in keys}
        out[f"{side}_calls"] = t["calls"].astype("int64")
        out[f"{side}_us"] = t[col].astype("float64")
        for name, src in extra.items():
            out[f"{side}_{name}"] = t[src].astype("float64")
        return pd.DataFrame(out)

    b, e = prep(bt, bcol, "base"), prep(et, ecol, "exp")
    b["_b"] = True
    e["_e"] = True
    m = b.merge(e, on=keys, how="outer", sort=False)
    inb = m["_b"].eq(True).to_numpy(dtype=bool)
    ine = m["_e"].eq(True).to_numpy(dtype=bool)
    presence = np.where(inb & ine, "both", np.where(inb, "base", "exp"))
    base_us = m["base_us"].to_numpy(dtype=np.float64)
    exp_us = m["exp_us"].to_numpy(dtype=np.float64)
    delta = np.nan_to_num(exp_us, nan=0.0) - np.nan_to_num(base_us, nan=0.0)
    with np.errstate(all="ignore"):
        pct = np.where(inb & ine & (base_us != 0), delta / base_us * 100.0, np.nan)
    out = {k: pd.array(m[k].astype(str), dtype="string") for k in keys}
    out["presence"] = pd.array(presence, dtype="string")
    out["base_calls"] = m["base_calls"].astype("Int64")
    out["exp_calls"] = m["exp_calls"].astype("Int64")
    out["base_us"] = base_us
    out["exp_us"] = exp_us
    out["delta_us"] = delta
    out["delta_pct"] = pct
    out["impact_us"] = np.abs(delta)
    for name in extra:
        out[f"base_{name}"] = m[f"base_{name}"].to_numpy(dtype=np.float64)
        out[f"exp_{name}"] = m[f"exp_{name}"].to_numpy(dtype=np.float64)
    df = pd.DataFrame(out)
    return df.sort_values(["impact_us"] + keys, ascending=[False] + [True] * len(keys),
                          kind="stable").reset_index(drop=True)


def time_basis(profile: Profile) -> str:
    return "device_self" if operators.has_device_time(profile) else "host_self"


def operators_table(base: Profile, exp: Profile, group_by: str = "name") -> pd.DataFrame:
    keys = ["name", "input_shapes"] if group_by == "name_shape" else ["name"]
    bt = operators.table(base, group_by)
    et = operators.table(exp, group_by)
    return _join(bt, et, keys, f"{time_basis(base)}_us", f"{time_basis(exp)}_us",
                 {"host_us": "host_self_us", "device_us": "device_self_us"})


def kernels_table(base: Profile, exp: Profile, group_by: str = "name") -> pd.DataFrame:
    bt = kernels.table(base, group_by)
    et = kernels.table(exp, group_by)
    return _join(bt, et, [group_by], "total_us", "total_us", {"avg_us": "avg_us"})


def summary_of(df: pd.DataFrame) -> dict:
    """Totals of a joined table: base / exp / delta sums and counts per presence."""
    pres = df["presence"].astype(str) if len(df) else pd.Series([], dtype=str)
    return {
        "base_total_us": float(np.nansum(df["base_us"].to_numpy())) if len(df) else 0.0,
        "exp_total_us": float(np.nansum(df["exp_us"].to_numpy())) if len(df) else 0.0,
        "both": int((pres == "both").sum()),
        "only_base": int((pres == "base").sum()),
        "only_exp": int((pres == "exp").sum()),
    }
