"""Op-type statistics (MindInsight's AI Core / AI CPU type tables, msprof op_statistic) and
the CANN API statistics (api_statistic).

Definitions:
- One row per (op type, core type): calls, total / avg / min / max of the device time, and
  ratio_pct, the type's share of device time in percent.
- When the producer wrote the aggregate (`op_statistic` table: op_statistic.csv, msprof
  op_statistic_*.csv, MindSpore <= 2.3 aicore_intermediate_{id}_type.csv) its numbers are
  used as written, Ratio included (`source` "file"). Otherwise they are computed from the
  kernels table (`source` "kernels"): a kernel's type is its `type` (its name when the
  producer gave none), ratio_pct = total / the total of every kernel the kernel view counts.
- `core` keeps one core type (AI_CORE, AI_CPU, ...).
- CANN API rows (api_statistic): level, name, calls, total / avg / min / max.
All times in microseconds.
"""
from __future__ import annotations

import numpy as np

from ..lazy import pd
from ..model import Profile
from .kernels import view_rows

COLUMNS = ["type", "core_type", "calls", "total_us", "avg_us", "min_us", "max_us",
           "ratio_pct"]
API_COLUMNS = ["level", "name", "calls", "total_us", "avg_us", "min_us", "max_us"]


def source(profile: Profile) -> str:
    """"file" when the producer's aggregate exists, else "kernels"."""
    return "file" if profile.has("op_statistic") else "kernels"


def table(profile: Profile, core: str | None = None) -> pd.DataFrame:
    """Op-type rows (COLUMNS) by total_us descending (ties by type)."""
    if profile.has("op_statistic"):
        s = profile.table("op_statistic")
        out = pd.DataFrame({
            "type": s["type"].astype(str).to_numpy(),
            "core_type": s["core_type"].astype(str).to_numpy(),
            "calls": s["calls"].to_numpy(np.int64),
            "total_us": s["total_ns"].to_numpy(np.int64) / 1000.0,
            "avg_us": s["avg_ns"].to_numpy(np.int64) / 1000.0,
            "min_us": s["min_ns"].to_numpy(np.int64) / 1000.0,
            "max_us": s["max_ns"].to_numpy(np.int64) / 1000.0,
            "ratio_pct": s["ratio_pct"].to_numpy(np.float64),
        })
    else:
        out = _from_kernels(profile)
    if core is not None:
        out = out[out["core_type"] == core]
    out["type"] = out["type"].astype("string")
    out["core_type"] = out["core_type"].astype("string")
    return out.sort_values(["total_us", "type"], ascending=[False, True],
                           kind="stable").reset_index(drop=True)[COLUMNS]


def _from_kernels(profile: Profile) -> pd.DataFrame:
    k = view_rows(profile)
    if len(k) == 0:
        return pd.DataFrame({c: pd.Series([], dtype="float64") for c in COLUMNS})
    typ = k["type"].astype(str)
    typ = typ.where(typ != "", k["name"].astype(str))
    df = pd.DataFrame({"type": typ.to_numpy(), "core_type": k["core_type"].astype(str).to_numpy(),
                       "dur": k["dur_ns"].to_numpy(np.int64)})
    g = df.groupby(["type", "core_type"], sort=False)["dur"]
    out = pd.DataFrame({"calls": g.size(), "total": g.sum(), "min": g.min(),
                        "max": g.max()}).reset_index()
    all_ns = float(df["dur"].sum())
    return pd.DataFrame({
        "type": out["type"], "core_type": out["core_type"],
        "calls": out["calls"].astype(np.int64),
        "total_us": out["total"] / 1000.0,
        "avg_us": out["total"] / 1000.0 / out["calls"],
        "min_us": out["min"] / 1000.0, "max_us": out["max"] / 1000.0,
        "ratio_pct": out["total"] / all_ns * 100.0 if all_ns > 0 else np.nan,
    })


def api_table(profile: Profile) -> pd.DataFrame:
    """CANN API rows (API_COLUMNS) by total_us descending; empty without api_statistic."""
    a = profile.table("api_statistic")
    out = pd.DataFrame({
        "level": a["level"].astype(str).astype("string").to_numpy(),
        "name": a["name"].astype("string").to_numpy(),
        "calls": a["calls"].to_numpy(np.int64),
        **{f"{c}_us": a[f"{c}_ns"].to_numpy(np.int64) / 1000.0
           for c in ("total", "avg", "min", "max")},
    })
    return out.sort_values(["total_us", "name"], ascending=[False, True],
                           kind="stable").reset_index(drop=True)
