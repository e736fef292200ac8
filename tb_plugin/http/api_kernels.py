"""Routes of the kernel view: the kernel table (with AI Core PMU counters when the profile has
them) and one kernel's per-call counter distribution. Parameters are validated here, the
numbers come from analysis/kernels.py and analysis/kernel_counters.py.
"""
from __future__ import annotations

from ..analysis import kernel_counters
from ..analysis import op_types as op_types_view
from ..analysis import tables
from ..lazy import pd
from ..loading import Loader
from . import params
from .requests import (_results, _table_response, arrow_table_page, profile_from,
                       profile_raw_result, profile_result)
from .responses import ApiError, csv_response, json_response

# Columns of a counters row that stay at the top level of a JSON row (the ratios go to "pmu").
_COUNTER_FIELDS = ("pmu_calls", "dominant_pipe", "bound", "memory_bound", "block_dim",
                   "core_num", "waves", "tail_waste", "block_dim_mismatch_calls",
                   "l2_hit_rate")


def _is_ratio(col: str) -> bool:
    return col.endswith("_ratio") or col.endswith("_rate")


def _nest_counters(records: list[dict], ratio_cols: list[str]) -> list[dict]:
    """Flat table rows -> rows with `"pmu": {ratio: mean}` (ratios without a value left out)."""
    out = []
    for r in records:
        pmu = {c: r.pop(c) for c in ratio_cols if c in r}
        r["pmu"] = {c: v for c, v in pmu.items() if v is not None}
        out.append(r)
    return out


def kernels(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    group_by = params.choice(request.args, "group_by", ("name", "type", "core"), "name")
    step = params.integer(request.args, "step")
    bound = params.text(request.args, "bound")
    if bound is not None:
        bound = params.choice(request.args, "bound", kernel_counters.BOUND_CLASSES, "none")
    tp = params.table_params(request.args)
    raw = profile_raw_result(prof, key, kernel_counters.table_with_counters,
                             group_by=group_by, step=step)
    # A stored table's first pages are cut in Arrow (no frame); the rest from the frame.
    page = arrow_table_page(tp, raw, "-total_us") if bound is None else None
    if page is not None:
        columns, rows, total = raw.column_names, page["rows"], page["total_rows"]
    else:
        df = profile_result(prof, key, kernel_counters.table_with_counters,
                            group_by=group_by, step=step)
        columns = [str(c) for c in df.columns]
        if bound is not None:
            df = df[df["bound"].eq(bound).fillna(False).to_numpy(dtype=bool)] \
                if "bound" in columns else df.iloc[0:0]
        try:
            if tp["format"] == "csv":
                sorted_df, _ = tables.apply(df, tp["sort"], "-total_us", tp["search"],
                                            group_by, paginate=False)
                return csv_response(tables.to_csv(sorted_df.head(tables.MAX_CSV_ROWS)),
                                    f"kernels_by_{group_by}.csv")
            page_df, total = tables.apply(df, tp["sort"], "-total_us", tp["search"], group_by,
                                          tp["limit"], tp["offset"])
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None
        rows = tables.to_records(page_df)
    has_counters = "bound" in columns
    payload = {"total_rows": total, "offset": tp["offset"]}
    if has_counters:
        ratio_cols = [c for c in columns if _is_ratio(c)]
        rows = _nest_counters(rows, ratio_cols)
        meta = prof.meta
        payload["counters"] = {
            "pipes": [f"{p}_ratio" for p in kernel_counters.SUMMARY_PIPES],
            "ratios": [c for c in ratio_cols if c.startswith("pmu_")],
            "bound_classes": list(kernel_counters.BOUND_CLASSES),
            "bound_ratio": kernel_counters.BOUND_RATIO,
            "ai_core_num": meta.ai_core_num, "aiv_num": meta.aiv_num,
            "na_cells": sum((meta.pmu_na_cells or {}).values()),
        }
    payload["rows"] = rows
    return json_response(payload)


def kernel_pmu(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    name = params.text(request.args, "name", required=True)
    step = params.integer(request.args, "step")
    max_rows = params.integer(request.args, "max_rows", default=kernel_counters.MAX_CALL_ROWS,
                              lo=0, hi=tables.MAX_LIMIT)

    def compute():
        calls = kernel_counters.call_rows(prof, name, step)
        return calls, kernel_counters.distribution(calls)

    calls, dist = _results.get_or_compute((key, "kernels/pmu", name, step), compute)
    if len(calls) == 0:
        raise ApiError(404, f"no kernel named {name!r} in this profile"
                            + ("" if step is None else f" in step {step}"))
    counted = int(pd.DataFrame({c: calls[c].notna() for c in calls.columns if _is_ratio(c)})
                  .any(axis=1).sum()) if any(_is_ratio(c) for c in calls.columns) else 0
    return json_response({
        "name": name, "calls": len(calls), "counted_calls": counted,
        "histogram_bins": kernel_counters.HISTOGRAM_BINS,
        "ratios": tables.to_records(dist),
        "rows_total": len(calls), "rows": tables.to_records(calls.head(max_rows)),
    })


def kernel_op_types(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    core = params.text(request.args, "core")
    df = profile_result(prof, key, op_types_view.table, core=core)
    return _table_response(request.args, df, "-total_us", "type", "op_types.csv",
                           extra={"source": op_types_view.source(prof)})


def kernel_api_statistic(request, loader: Loader):
    prof, key = profile_from(loader, request.args)
    df = profile_result(prof, key, op_types_view.api_table)
    return _table_response(request.args, df, "-total_us", "name", "api_statistic.csv")


ROUTES = {
    "/kernels": kernels,
    "/kernels/pmu": kernel_pmu,
    "/kernels/op_types": kernel_op_types,
    "/kernels/api_statistic": kernel_api_statistic,
}
