"""Generic table parameters shared by every table route: sort, search, paging, export.

Every table view (kernels, operators, allocations, ...) is an analysis DataFrame; the HTTP
layer passes it through `apply()` with the request's parameters, then serializes the page
with `to_records()` (JSON) or the whole filtered, sorted table with `to_csv()` (download).

Definitions:
- sort: a column name, optionally prefixed with "-" for descending. The sort is stable, so
  rows that tie keep the analysis' own order; missing values (NaN / null) always go last.
  An unknown column raises `ValueError` naming the valid ones (the HTTP layer answers 400).
- search: case-insensitive *literal* substring match on one key column (regex
  metacharacters such as `.`, `*`, `(` or `[` match themselves). Empty / None = no filter.
- paging: `limit` rows from `offset`. `limit=None` means DEFAULT_LIMIT (1000 rows, enough
  for a screenful of a virtualized table without shipping megabytes of JSON); a page holds
  at most MAX_LIMIT (10000) rows, a larger limit is clipped to it. The HTTP layer accepts
  `limit` up to LIMIT_PARAM_MAX (100000; above: 400), so a client asking for "everything"
  gets the first MAX_LIMIT rows and `total_rows` tells it how many there are.
  `total_rows` counts rows after the search, before paging. `paginate=False` (CSV export)
  returns every filtered, sorted row; the HTTP layer writes at most MAX_CSV_ROWS of them.
- CSV: UTF-8 text, header row, numbers at full precision (shortest round-trip repr), missing
  values empty, RFC 4180 records: CRLF line ends, and cells holding a comma, quote, CR or LF
  quoted (with "\n" line ends a lone CR inside a name would be left bare and split the row). Text cells starting with
  = + - @ (or tab / carriage return) get a leading single quote so spreadsheets do not run
  them as formulas ("CSV injection"); numeric columns are never altered, so -1.5 stays -1.5.
- JSON records: NaN / ±inf / NA -> null, numpy scalars -> Python int / float / bool / str.
"""
from __future__ import annotations

import csv
import io
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..lazy import pd

# The row limits of every table route, here only (docs/http_api.md "Table parameters").
DEFAULT_LIMIT = 1000        # rows of a JSON page when `limit` is not given
MAX_LIMIT = 10_000          # the most rows one JSON page holds (a larger limit is clipped)
LIMIT_PARAM_MAX = 100_000   # the largest `limit` a request may give (above: 400)
MAX_CSV_ROWS = 1_000_000    # the most rows of a `format=csv` download

_INJECTION_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def _parse_sort(sort: str, columns: list[str]) -> tuple[str, bool]:
    sort = sort.strip()
    ascending = True
    col = sort
    if sort.startswith("-"):
        ascending = False
        col = sort[1:]
    elif sort.startswith("+"):
        col = sort[1:]
    if col not in columns:
        raise ValueError(
            f"unknown sort column {col!r}; valid columns: {', '.join(columns)} "
            f"(prefix with '-' for descending)"
        )
    return col, ascending


def _as_int(value: Any, what: str) -> int:
    try:
        result = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be an integer, got {value!r}") from None
    if result < 0:
        raise ValueError(f"{what} must be >= 0, got {result}")
    return result


def key_codes(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(int64 codes, object array of labels) of a text key column, without converting every
    row to text: categoricals use their codes, other dtypes are factorized. Missing values
    become the label "" (merged with an existing "" label)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy().astype(np.int64)
        labels = np.asarray(series.cat.categories.astype(str), dtype=object)
    else:
        c, uniques = pd.factorize(series, sort=False, use_na_sentinel=True)
        codes = np.asarray(c, dtype=np.int64)
        labels = np.asarray([str(u) for u in uniques], dtype=object)
    if (codes < 0).any():
        empty = np.flatnonzero(labels == "")
        if len(empty):
            codes = np.where(codes < 0, empty[0], codes)
        else:
            codes = np.where(codes < 0, len(labels), codes)
            labels = np.append(labels, "")
    return codes, labels


def search_mask(series: pd.Series, search: str) -> np.ndarray:
    """Boolean mask: case-insensitive literal substring `search` in `series` (NA -> False)."""
    needle = search.casefold()
    if isinstance(series.dtype, pd.CategoricalDtype):
        cats = pd.Series(series.cat.categories.astype(str), dtype=object)
        hit = np.fromiter((needle in c.casefold() for c in cats), dtype=bool, count=len(cats))
        codes = series.cat.codes.to_numpy()
        return np.where(codes >= 0, hit[np.maximum(codes, 0)] if len(hit) else False, False)
    s = series.astype("string")
    return s.str.casefold().str.contains(needle, regex=False).fillna(False).to_numpy(dtype=bool)


def apply(
    df: pd.DataFrame,
    sort: str | None,
    default_sort: str,
    search: str | None,
    search_column: str,
    limit: int | None = None,
    offset: int = 0,
    *,
    paginate: bool = True,
) -> tuple[pd.DataFrame, int]:
    """Search, sort and page `df`; returns (page, total_rows after search).

    Raises ValueError for an unknown sort column, an unknown search column, or a negative /
    non-integer limit or offset.
    """
    columns = [str(c) for c in df.columns]
    col, ascending = _parse_sort(sort if sort else default_sort, columns)
    out = df
    if search:
        if search_column not in columns:
            raise ValueError(
                f"unknown search column {search_column!r}; valid columns: {', '.join(columns)}"
            )
        out = out[search_mask(out[search_column], search)]
    total = len(out)
    if len(out) > 1:
        out = out.sort_values(col, ascending=ascending, kind="stable", na_position="last")
    if paginate:
        lim = DEFAULT_LIMIT if limit is None else _as_int(limit, "limit")
        lim = min(lim, MAX_LIMIT)
        off = _as_int(offset if offset is not None else 0, "offset")
        out = out.iloc[off:off + lim]
    return out.reset_index(drop=True), total


def arrow_page(table, sort: str | None, default_sort: str, limit: int | None = None,
               offset: int = 0) -> tuple[list[dict], int] | None:
    """A page of a table still in Arrow (a stored first answer, memory-mapped) without a
    search: `(to_records(page), total_rows)` of `apply(frame, sort, default_sort, None, ...,
    limit, offset)` on the frame `table_files.arrow_to_frame` makes of it, without making
    the frame (or importing pandas: lazy.py). None where the frame is needed: a sort column
    that is not a number or a boolean (text sorts by pandas' own rules), or a column of
    another type than numbers, booleans and text. Raises ValueError as `apply` does.
    The same rows as the frame's: tests/unit/test_table_pages.py."""
    columns = [str(c) for c in table.column_names]
    col, ascending = _parse_sort(sort if sort else default_sort, columns)
    lim = min(DEFAULT_LIMIT if limit is None else _as_int(limit, "limit"), MAX_LIMIT)
    off = _as_int(offset if offset is not None else 0, "offset")
    if not columns or len(set(columns)) != len(columns):
        return None
    kinds = _record_kinds(table)
    if kinds is None or not _orderable(table.schema.field(col).type):
        return None
    total = table.num_rows
    if total > 1:
        page = table.take(_stable_order(table.column(col), ascending).slice(off, lim))
    else:
        page = table.slice(min(off, total), lim)
    lists = [_page_values(page.column(i), kind) for i, kind in enumerate(kinds)]
    return [dict(zip(columns, row)) for row in zip(*lists)], total


def _orderable(t) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _record_kinds(table) -> list[str] | None:
    """How each column's values come out of `to_records` on the frame of `table` (pyarrow's
    `to_pandas` with the table's pandas metadata): "float" (a float column, or an integer
    one with a missing value and no nullable integer dtype: floats, non-finite -> None), or
    "as is" (ints, booleans, text: Arrow's Python values, null -> None); None if a column
    is of another type."""
    meta = table.schema.pandas_metadata or {}
    numpy_types = {c.get("field_name", c.get("name")): str(c.get("numpy_type", ""))
                   for c in meta.get("columns", [])}
    kinds = []
    for field, column in zip(table.schema, table.columns):
        t = field.type
        if pa.types.is_dictionary(t):
            t = t.value_type
            if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
                return None
            kinds.append("as is")
        elif pa.types.is_floating(t):
            kinds.append("float")
        elif pa.types.is_integer(t):
            nullable = numpy_types.get(field.name, "").startswith(("Int", "UInt"))
            kinds.append("float" if column.null_count and not nullable else "as is")
        elif (pa.types.is_boolean(t) or pa.types.is_string(t) or pa.types.is_large_string(t)):
            kinds.append("as is")
        else:
            return None
    return kinds


def _stable_order(column, ascending: bool):
    """Row order (an Arrow index array) of pandas' `sort_values(kind="stable",
    na_position="last")` on a number or boolean column: present values stably sorted (ties
    keep their order, also when descending), then the missing ones (null, NaN) in their
    order. (Arrow arrays only: pyarrow imports pandas to make an array of Python or NumPy
    values, or NumPy values of an array.)"""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    missing = pc.is_null(arr, nan_is_null=pa.types.is_floating(arr.type))
    order = "ascending" if ascending else "descending"
    if not pc.any(missing).as_py():
        return pc.array_sort_indices(arr, order=order)
    present = pc.indices_nonzero(pc.invert(missing))
    ranked = pc.array_sort_indices(arr.take(present), order=order)
    return pa.concat_arrays([present.take(ranked), pc.indices_nonzero(missing)])


def _page_values(column, kind: str) -> list:
    values = column.to_pylist()
    if kind == "float":
        return [None if v is None or not math.isfinite(v) else float(v) for v in values]
    return values


def _is_text(series: pd.Series) -> bool:
    dt = series.dtype
    return (
        isinstance(dt, (pd.CategoricalDtype, pd.StringDtype))
        or dt == object
        or pd.api.types.is_string_dtype(dt)
    )


def _defuse(series: pd.Series) -> pd.Series:
    s = series.astype("string")
    first = s.str.slice(0, 1)
    mask = first.isin(_INJECTION_PREFIXES).fillna(False).to_numpy(dtype=bool)
    if mask.any():
        s = s.copy()
        s[mask] = "'" + s[mask]
    return s


def to_csv(df: pd.DataFrame) -> str:
    """The table as CSV text (UTF-8 when encoded), see the module docstring."""
    out = {}
    for col in df.columns:
        s = df[col]
        out[col] = _defuse(s) if _is_text(s) and not pd.api.types.is_bool_dtype(s.dtype) else s
    safe = pd.DataFrame(out, index=df.index)
    buf = io.StringIO()
    safe.to_csv(buf, index=False, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    return buf.getvalue()


def _column_values(series: pd.Series) -> list:
    dt = series.dtype
    if isinstance(dt, np.dtype) and dt.kind == "f":
        arr = series.to_numpy()
        values = arr.tolist()
        bad = np.flatnonzero(~np.isfinite(arr))
        for i in bad:
            values[i] = None
        return values
    if isinstance(dt, np.dtype) and dt.kind in "iub":
        return series.to_numpy().tolist()
    if not isinstance(dt, np.dtype) and hasattr(series.array, "__arrow_array__"):
        # Nullable numbers, Arrow text, categoricals: Arrow gives Python values with NA as
        # None in one call (through object dtype: ~0.5 ms a column, for a page of 50 rows).
        arr = pa.array(series.array)
        values = arr.to_pylist()
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if pa.types.is_floating(arr.type):
            finite = pc.fill_null(pc.is_finite(arr), True).to_numpy(zero_copy_only=False)
            for i in np.flatnonzero(~finite):
                values[i] = None  # NaN / inf (null cells are None already)
        return values
    # Object (and anything else): go through object with NA -> None.
    obj = series.astype(object)
    values = obj.tolist()
    na = np.flatnonzero(pd.isna(obj).to_numpy())
    for i in na:
        values[i] = None
    for i, v in enumerate(values):
        if v is None or isinstance(v, (str, bool, int)):
            continue
        if isinstance(v, float):
            if not math.isfinite(v):
                values[i] = None
        elif isinstance(v, np.generic):
            v = v.item()
            values[i] = None if isinstance(v, float) and not math.isfinite(v) else v
        elif not isinstance(v, (list, dict)):
            values[i] = str(v)
    return values


def to_records(df: pd.DataFrame) -> list[dict]:
    """JSON-safe list of row dicts (NaN/inf/NA -> None, numpy types -> Python types)."""
    cols = [str(c) for c in df.columns]
    if not cols:
        return [{} for _ in range(len(df))]
    # (`items` gives each column by position, duplicate names included, at a fifth of the
    # cost of `iloc[:, i]`'s indexing checks: ~2 ms of a 36-column page)
    lists = [_column_values(series) for _, series in df.items()]
    return [dict(zip(cols, row)) for row in zip(*lists)]
