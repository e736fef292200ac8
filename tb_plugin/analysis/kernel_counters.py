"""Kernel hardware counters: what bounds a kernel (AI Core PMU counters of `kernels`).

Input: the `pmu_*` columns of the kernels table (readers/columns.py `PMU_COUNTERS`; ratios
0..1, NaN where the producer wrote N/A) and meta `ai_core_num` / `aiv_num`.

Definitions (docs/http_api.md `kernels`, `kernels/pmu`):
- Per group (kernel name, type or core type) and ratio column: the duration-weighted mean
  over the group's calls, sum(ratio * dur) / sum(dur) over the calls where that ratio is a
  number (a call with N/A is left out of that ratio's weights, not counted as 0).
- Pipe ratio of a call, for each pipe of PipeUtilization (mac = cube, vec, scalar, mte1,
  mte2, mte3, fixpipe): the larger of the AI Core (`aic_*`) and vector core (`aiv_*`) value
  (a MIX kernel has both); a group's pipe ratio is its weighted mean. `dominant_pipe` is the
  pipe with the largest mean.
- `bound`: over = the pipes among mac, vec, scalar, mte1, mte2, mte3 whose mean ratio is above
  `bound_ratio` (0.8, msprof-analyze `operator_bound_ratio`). none over -> "none" (not bound
  by any pipe: latency, launch or synchronisation limits the kernel, msprof-analyze's
  "operator no bound"); else the classes of the pipes over: mac -> cube, vec -> vector,
  mte1 / mte2 -> memory, mte3 -> mte3, scalar -> scalar; more than one class -> "mixed".
  Null when the group has no pipe ratio at all.
- `memory_bound` = mte2 / max(mac, vec) (msprof's metric; above 1 the kernel waits on
  memory more than it computes); null when both are 0 or absent.
- Block Num against the core count: AI_CORE / MIX_AIC tasks run on `ai_core_num` AI Cores,
  AI_VECTOR_CORE / MIX_AIV tasks on `aiv_num` vector cores. waves = ceil(block / cores);
  `tail_waste` = 1 - block / (waves * cores), the share of core slots idle because the last
  wave is partial; `block_dim_mismatch_calls` counts calls whose block % cores != 0
  (msprof-analyze's block dim checker).
- `l2_hit_rate` = sum(hits) / sum(hits + misses) of the L2Cache counters over the group's
  calls, where collected.
"""
from __future__ import annotations

import numpy as np

from ..lazy import pd
from ..model import Profile
from ..readers import columns as C
from . import kernels as kernels_view
from .tables import key_codes

BOUND_RATIO = 0.8        # msprof-analyze advisor config.ini operator_bound_ratio
BOUND_PIPES = C.PIPES    # the pipes msprof-analyze's Operator No Bound looks at
PIPE_CLASS = {"mac": "cube", "vec": "vector", "mte1": "memory", "mte2": "memory",
              "mte3": "mte3", "scalar": "scalar"}
BOUND_CLASSES = ("cube", "vector", "memory", "mte3", "scalar", "mixed", "none")
SUMMARY_PIPES = C.PIPES + ("fixpipe",)
CUBE_CORES = ("AI_CORE", "MIX_AIC")
VECTOR_CORES = ("AI_VECTOR_CORE", "MIX_AIV")
HISTOGRAM_BINS = 10      # per-call distribution: bins of width 0.1 over 0..1
MAX_CALL_ROWS = 1000     # per-call distribution: the longest calls listed


def ratio_columns(k: pd.DataFrame) -> list[str]:
    """The PMU ratio columns (`*_ratio`, `*_rate`, 0..1) the kernels table has."""
    return [c for c in k.columns if c.startswith("pmu_")
            and (c.endswith("_ratio") or c.endswith("_rate"))]


def has_pipe_ratios(k: pd.DataFrame) -> bool:
    """Whether a kernels table has any PipeUtilization pipe ratio column."""
    return any(c in k.columns for p in BOUND_PIPES for c in C.pipe_ratio_columns(p))


def has_counters(profile: Profile) -> bool:
    k = profile.table("kernels")
    return len(k) > 0 and any(np.isfinite(k[c].to_numpy(dtype=np.float64)).any()
                              for c in ratio_columns(k))


def _pipe_ratio_arrays(k: pd.DataFrame) -> dict[str, np.ndarray]:
    out = {}
    for pipe in SUMMARY_PIPES:
        cols = [c for c in C.pipe_ratio_columns(pipe) if c in k.columns]
        if not cols:
            out[f"{pipe}_ratio"] = np.full(len(k), np.nan)
            continue
        vals = k[cols[0]].to_numpy(dtype=np.float64)
        for c in cols[1:]:  # fmax: the other value where one is NaN
            vals = np.fmax(vals, k[c].to_numpy(dtype=np.float64))
        out[f"{pipe}_ratio"] = vals
    return out


def pipe_ratios(k: pd.DataFrame) -> pd.DataFrame:
    """Per call, each pipe's ratio (max of its aic / aiv columns; NaN when neither)."""
    return pd.DataFrame(_pipe_ratio_arrays(k), index=k.index)


def classify(ratios: dict[str, float], bound_ratio: float = BOUND_RATIO) -> str | None:
    """The `bound` class of one set of pipe ratios ({pipe: ratio}, NaN/None = absent)."""
    pipes = [p for p in ratios if p in PIPE_CLASS]
    values = np.array([[np.nan if ratios[p] is None else ratios[p] for p in pipes]],
                      dtype=np.float64).reshape(1, len(pipes))
    return classify_rows(values, pipes, bound_ratio)[0]


def classify_rows(values: np.ndarray, pipes: list[str] | tuple[str, ...],
                  bound_ratio: float = BOUND_RATIO) -> list[str | None]:
    """The `bound` class of each row of `values` (rows x pipes, NaN = absent), as
    `classify` defines it (module docstring)."""
    given = ~np.isnan(values)
    with np.errstate(invalid="ignore"):
        over = given & (values > bound_ratio)
    names = sorted({PIPE_CLASS[p] for p in pipes})
    per_class = np.column_stack([over[:, [i for i, p in enumerate(pipes) if PIPE_CLASS[p] == c]]
                                 .any(axis=1) for c in names]) if names else \
        np.zeros((len(values), 0), dtype=bool)
    count = per_class.sum(axis=1)
    first = per_class.argmax(axis=1) if names else np.zeros(len(values), dtype=np.int64)
    has = given.any(axis=1)
    return [None if not h else "none" if n == 0 else names[f] if n == 1 else "mixed"
            for h, n, f in zip(has.tolist(), count.tolist(), first.tolist())]


def core_count(core_type: str, ai_core_num: int | None, aiv_num: int | None) -> int | None:
    if core_type in CUBE_CORES:
        return ai_core_num
    if core_type in VECTOR_CORES:
        return aiv_num
    return None


def core_counts(core_type: pd.Series, ai_core_num: int | None, aiv_num: int | None
                ) -> np.ndarray:
    """Per call, the count of the cores its core type runs on (NaN where unknown)."""
    codes, labels = key_codes(core_type)
    per_label = np.array([core_count(str(c), ai_core_num, aiv_num) or np.nan for c in labels],
                         dtype=np.float64)
    return per_label[codes] if len(per_label) else np.full(len(core_type), np.nan)


def _weighted(values: np.ndarray, dur: np.ndarray, codes: np.ndarray, n: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """(weighted mean per group, calls with a number per group)."""
    ok = np.isfinite(values)
    v0 = np.where(ok, values, 0.0)
    w = np.where(ok, dur, 0.0)
    num = np.bincount(codes, weights=v0 * w, minlength=n)
    den = np.bincount(codes, weights=w, minlength=n)
    cnt = np.bincount(codes, weights=ok, minlength=n)
    with np.errstate(all="ignore"):
        mean = np.where(den > 0, num / den, np.nan)
        zero = (den == 0) & (cnt > 0)
        if zero.any():  # a group whose calls with numbers all last 0 ns: the plain mean
            plain = np.bincount(codes, weights=v0, minlength=n)
            mean = np.where(zero, plain / np.maximum(cnt, 1), mean)
    return mean, cnt.astype(np.int64)


def _mode(values: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    """Most frequent value per group (smallest on ties); NaN where the group has none."""
    out = np.full(n, np.nan)
    ok = np.isfinite(values)
    if not ok.any():
        return out
    vals, vcodes = np.unique(values[ok], return_inverse=True)
    key = codes[ok].astype(np.int64) * len(vals) + vcodes
    uniq, counts = np.unique(key, return_counts=True)
    g, vi = uniq // len(vals), uniq % len(vals)
    # per group: the highest count, then the smallest value (lexsort: last key first)
    order = np.lexsort((vi, -counts, g))
    first = order[np.r_[True, g[order][1:] != g[order][:-1]]]
    out[g[first]] = vals[vi[first]]
    return out


def table(profile: Profile, group_by: str = "name", step: int | None = None,
          bound_ratio: float = BOUND_RATIO) -> pd.DataFrame:
    """Counters per group: [<group_by>, pmu_calls, <weighted mean of each ratio column>,
    <pipe>_ratio for mac vec scalar mte1 mte2 mte3 fixpipe, dominant_pipe, bound,
    memory_bound, block_dim, core_num, waves, tail_waste, block_dim_mismatch_calls,
    l2_hit_rate]. Empty (no rows) when the profile has no counters."""
    if group_by not in kernels_view.GROUP_KEYS:
        raise ValueError(f"unknown group_by {group_by!r}")
    k = kernels_view.view_rows(profile, step)
    ratio_cols = ratio_columns(k)
    if len(k) == 0 or not ratio_cols:
        return pd.DataFrame({group_by: pd.array([], dtype="string")})
    codes, labels = key_codes(k[kernels_view.GROUP_KEYS[group_by]])
    out: dict = {group_by: pd.array(labels.astype(str), dtype="string")}
    out.update(_per_group(profile, k, ratio_cols, codes, len(labels), bound_ratio))
    keep = out["pmu_calls"] > 0
    return pd.DataFrame({c: v[keep] for c, v in out.items()})


def _per_group(profile: Profile, k: pd.DataFrame, ratio_cols: list[str], codes: np.ndarray,
               n: int, bound_ratio: float) -> dict:
    """`table`'s counter columns for each of the n group codes (groups without counters
    included: pmu_calls 0), as arrays."""
    dur = k["dur_ns"].to_numpy(dtype=np.float64)
    # Columns as arrays, one frame at the end: a profile's kernel view has a few hundred
    # groups, where pandas' per-column costs were most of the time.
    out: dict = {}
    pipes = _pipe_ratio_arrays(k)
    counted = np.zeros(len(k), dtype=bool)
    for c in ratio_cols:
        v = k[c].to_numpy(dtype=np.float64)
        counted |= np.isfinite(v)
        out[c], _ = _weighted(v, dur, codes, n)
    out["pmu_calls"] = np.bincount(codes, weights=counted.astype(np.float64),
                                   minlength=n).astype(np.int64)
    for pipe in SUMMARY_PIPES:
        out[f"{pipe}_ratio"], _ = _weighted(pipes[f"{pipe}_ratio"], dur, codes, n)
    pipe_means = np.column_stack([out[f"{p}_ratio"] for p in SUMMARY_PIPES])
    with np.errstate(all="ignore"):
        has_any = np.isfinite(pipe_means).any(axis=1)
        dom = np.nanargmax(np.where(np.isfinite(pipe_means), pipe_means, -1.0), axis=1)
    out["dominant_pipe"] = pd.array([SUMMARY_PIPES[d] if a else None
                                     for d, a in zip(dom.tolist(), has_any.tolist())],
                                    dtype="string")
    out["bound"] = pd.array(classify_rows(np.column_stack([out[f"{p}_ratio"]
                                                           for p in BOUND_PIPES]),
                                          BOUND_PIPES, bound_ratio), dtype="string")
    denom = np.fmax(out["mac_ratio"], out["vec_ratio"])
    with np.errstate(all="ignore"):
        out["memory_bound"] = np.where(denom > 0, out["mte2_ratio"] / denom, np.nan)
    _block_dims(out, k, codes, n, profile)
    out["l2_hit_rate"] = _l2_hit_rate(k, codes, n)
    return out


def _block_dims(out: dict, k: pd.DataFrame, codes: np.ndarray, n: int,
                profile: Profile) -> None:
    meta = profile.meta
    block = k["block_dim"].to_numpy(dtype=np.float64, na_value=np.nan)
    cores = core_counts(k["core_type"], meta.ai_core_num, meta.aiv_num)
    # per call: block % cores != 0 (only where both are known and block > 0)
    known = np.isfinite(block) & np.isfinite(cores) & (block > 0)
    with np.errstate(all="ignore"):
        mismatch = known & (np.fmod(block, np.where(known, cores, 1)) != 0)
    b = _mode(block, codes, n)
    out["block_dim"] = _whole_numbers(b)
    core_mode = _mode(cores, codes, n)
    out["core_num"] = _whole_numbers(core_mode)
    with np.errstate(all="ignore"):
        waves = np.where((b > 0) & (core_mode > 0), np.ceil(b / core_mode), np.nan)
        out["waves"] = _whole_numbers(waves)
        out["tail_waste"] = np.where(waves > 0, 1.0 - b / (waves * core_mode), np.nan)
    out["block_dim_mismatch_calls"] = np.bincount(
        codes, weights=mismatch.astype(np.float64), minlength=n).astype(np.int64)


def _whole_numbers(values: np.ndarray) -> pd.arrays.IntegerArray:
    """Whole numbers held as floats (NaN: none) as a nullable Int64 array."""
    missing = np.isnan(values)
    return pd.arrays.IntegerArray(np.where(missing, 0, values).astype(np.int64), missing)


def _l2_hit_rate(k: pd.DataFrame, codes: np.ndarray, n: int) -> np.ndarray:
    def total(stems):
        cols = [f"pmu_{core}_{s}" for s in stems for core in C.PMU_CORES
                if f"pmu_{core}_{s}" in k.columns]
        if not cols:
            return None
        v = np.nansum(np.vstack([k[c].to_numpy(dtype=np.float64) for c in cols]), axis=0)
        return np.bincount(codes, weights=v, minlength=n)

    hits, misses = total(C.L2_HIT_STEMS), total(C.L2_MISS_STEMS)
    if hits is None or misses is None:
        return np.full(n, np.nan)
    with np.errstate(all="ignore"):
        return np.where(hits + misses > 0, hits / (hits + misses), np.nan)


# --------------------------------------------------------------------------- one kernel

def call_rows(profile: Profile, name: str, step: int | None = None) -> pd.DataFrame:
    """The calls of kernel `name`: [start_us, dur_us, step, core_type, block_dim, <pipe>_ratio
    ..., <ratio columns>], longest first."""
    k = kernels_view.view_rows(profile, step)
    k = k[k["name"].eq(name).fillna(False).to_numpy(dtype=bool)] if len(k) else k
    cols = ratio_columns(k)
    out = pd.DataFrame({
        "start_us": k["start_ns"].to_numpy(dtype=np.int64) / 1000.0,
        "dur_us": k["dur_ns"].to_numpy(dtype=np.int64) / 1000.0,
        "step": k["step"].to_numpy(),
        "core_type": k["core_type"].astype(str).to_numpy(),
        "block_dim": k["block_dim"].to_numpy(),
    })
    pipes = pipe_ratios(k)
    for c in pipes.columns:
        out[c] = pipes[c].to_numpy()
    for c in cols:
        out[c] = k[c].to_numpy(dtype=np.float64)
    return out.sort_values(["dur_us", "start_us"], ascending=[False, True],
                           kind="stable").reset_index(drop=True)


def distribution(calls: pd.DataFrame) -> pd.DataFrame:
    """Per ratio column of `call_rows`: [ratio, calls, na_calls, mean (duration-weighted),
    min, p25, p50, p75, p95, max, hist] where hist is a list of HISTOGRAM_BINS counts of the
    values over [0, 1] (bin i = [i/10, (i+1)/10), the last bin includes 1; values outside
    0..1 go to the nearest end bin)."""
    ratio_cols = [c for c in calls.columns if c.endswith("_ratio") or c.endswith("_rate")]
    dur = calls["dur_us"].to_numpy(dtype=np.float64) if len(calls) else np.zeros(0)
    rows = []
    for c in ratio_cols:
        v = calls[c].to_numpy(dtype=np.float64)
        ok = np.isfinite(v)
        if not ok.any():
            continue
        x, w = v[ok], dur[ok]
        q = np.quantile(x, [0.25, 0.5, 0.75, 0.95])
        bins = np.clip(np.floor(x * HISTOGRAM_BINS), 0, HISTOGRAM_BINS - 1).astype(np.int64)
        rows.append({
            "ratio": c, "calls": int(ok.sum()), "na_calls": int((~ok).sum()),
            "mean": float((x * w).sum() / w.sum()) if w.sum() > 0 else float(x.mean()),
            "min": float(x.min()), "p25": float(q[0]), "p50": float(q[1]),
            "p75": float(q[2]), "p95": float(q[3]), "max": float(x.max()),
            "hist": np.bincount(bins, minlength=HISTOGRAM_BINS).tolist(),
        })
    return pd.DataFrame(rows, columns=["ratio", "calls", "na_calls", "mean", "min", "p25",
                                       "p50", "p75", "p95", "max", "hist"])


_COUNT_COLUMNS = ("pmu_calls", "block_dim_mismatch_calls")  # counts: integers, NA = none


def table_with_counters(profile: Profile, group_by: str = "name", step: int | None = None,
                        bound_ratio: float | None = None) -> pd.DataFrame:
    """`kernels.table` plus the groups' PMU counter columns (`table`; empty cells for
    groups without counters); `kernels.table` unchanged when the profile has none."""
    t, row_codes, k, codes, labels = kernels_view.grouped(profile, group_by, step)
    ratio_cols = ratio_columns(k)
    if len(k) == 0 or not ratio_cols:
        return t
    per = _per_group(profile, k, ratio_cols, codes, len(labels),
                     BOUND_RATIO if bound_ratio is None else bound_ratio)
    if not (per["pmu_calls"] > 0).any():
        return t
    # (each group code has its own label: key_codes of a model column, whose categories
    # are distinct text; so the code is the label the text join used to match)
    return _joined_by_code(t, per, row_codes)


def _joined_by_code(t: pd.DataFrame, per: dict, row_codes: np.ndarray) -> pd.DataFrame:
    """`t` plus each row's group's counter columns (`_per_group`), empty where the group has
    no counters, with the types a left join of `table`'s frame gives them (floats with NaN,
    counts as nullable Int64, other columns taken with NA), without that frame and join."""
    has = per["pmu_calls"][row_codes] > 0
    missing = ~has
    safe = np.where(has, row_codes, 0)
    at = np.where(has, row_codes, -1)
    cols = {c: t[c].array for c in t.columns}
    for c, values in per.items():
        if c in cols:
            continue
        if isinstance(values, np.ndarray) and values.dtype.kind == "f":
            cols[c] = np.where(missing, np.nan, values[safe])
        elif isinstance(values, np.ndarray) and c in _COUNT_COLUMNS:
            cols[c] = pd.arrays.IntegerArray(values.astype(np.int64)[safe], missing.copy())
        else:
            if isinstance(values, np.ndarray):  # (what a frame's column of it holds)
                values = pd.arrays.NumpyExtensionArray(values)
            cols[c] = pd.api.extensions.take(values, at, allow_fill=True)
    return pd.DataFrame(cols)
