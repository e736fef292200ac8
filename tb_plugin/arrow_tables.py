"""A table a reader made in Arrow, conformed to its schema (`conform_arrow`).

Readers that stay in Arrow from the CSV to the cache file make no pandas frame, conversion
or from_pandas per small table (which were most of a small profile's views stage). Such a
table is stored exactly as `write_table(conform(frame))` would store the same values: the
same Arrow types and the same pandas metadata, so a frame read back from the file has the
same dtypes whichever path wrote it (tests/unit/test_conform_arrow.py).
"""
from __future__ import annotations

import functools

import numpy as np

from .lazy import pd
from .schema import SCHEMAS, empty_table


# pandas' codes for a categorical of n categories: int8 below 127, then int16, int32, int64
# (pandas.core.dtypes.cast.coerce_indexer_dtype), as Arrow's dictionary indices.
_CATEGORY_CODES = ((127, "int8"), (32767, "int16"), (2147483647, "int32"))


def _category_codes_type(n: int) -> str:
    return next((t for limit, t in _CATEGORY_CODES if n < limit), "int64")


@functools.cache
def _arrow_types() -> dict:
    import pyarrow as pa

    return {"int64": pa.int64(), "int32": pa.int32(), "int16": pa.int16(),
            "float64": pa.float64(), "Int64": pa.int64(), "string": pa.large_string()}


# Extra columns kept as they are, by Arrow type: a value of each as a reader's Python rows
# hold it, from which a one-row frame gives the dtype `conform` keeps (text: the installed
# pandas' default, `object` or `str`) and the Arrow type `write_table` stores it as. An
# int64 extra whose field says so (`NULLABLE_INT`) stands for pandas' nullable Int64.
_EXTRA_SAMPLES = {"double": 0.0, "int64": 0, "string": "", "large_string": "", "bool": False,
                  "Int64": None}
NULLABLE_INT = {b"pandas_dtype": b"Int64"}  # field metadata of an Int64 extra column


def _extra_sample(kind: str):
    """A one-row column of `kind` (`_EXTRA_SAMPLES`) as a reader's rows would make it."""
    return pd.array([0], dtype="Int64") if kind == "Int64" else [_EXTRA_SAMPLES[kind]]


# The pandas metadata a table's file carries, as `pa.Table.from_pandas` of the conformed
# frame writes it, is made of pieces that each cost ~1 ms of pandas / Arrow work the first
# time: the schema's part per table (`_schema_metadata`) and one column entry per kind of
# extra column (`_extra_entry`: an extra's entry differs from its kind's only by the
# column's name). `warm_metadata` makes them all in the fork server, so that a reader's
# first span does not make them again for every table.
@functools.cache
def _schema_metadata(name: str) -> dict:
    import json

    import pyarrow as pa

    return json.loads(pa.Schema.from_pandas(empty_table(name), preserve_index=False)
                      .metadata[b"pandas"])


@functools.cache
def _extra_entry(kind: str) -> tuple[dict, object]:
    """(the pandas metadata entry of an extra column of `kind`, named "x"; its Arrow
    type). From a one-row frame: from no rows, pandas 2 would call an `object` column of
    text "empty"."""
    import json

    import pyarrow as pa

    schema = pa.Schema.from_pandas(pd.DataFrame({"x": _extra_sample(kind)}),
                                   preserve_index=False)
    (entry,) = json.loads(schema.metadata[b"pandas"])["columns"]
    if not entry["name"] == entry["field_name"] == "x":  # (only the name may vary)
        raise AssertionError(f"unexpected pandas metadata entry {entry}")
    return entry, schema.field("x").type


def warm_metadata() -> None:
    """Make every table's and every extra kind's metadata piece now (see above)."""
    for name in SCHEMAS:
        _schema_metadata(name)
    for kind in _EXTRA_SAMPLES:
        _extra_entry(kind)


def _metadata_template(name: str, extras: tuple[tuple[str, str], ...]) -> dict:
    """The pandas metadata of a conformed frame of table `name` with the `extras`
    ((column, kind) kept after the schema's), as `pa.Table.from_pandas` writes it."""
    meta = _schema_metadata(name)
    if not extras:
        return meta
    return dict(meta, columns=[*meta["columns"],
                               *(dict(_extra_entry(kind)[0], name=col, field_name=col)
                                 for col, kind in extras)])


def conform_arrow(table, name: str, keep_extra: bool = False):
    """`conform` for a pyarrow Table: the schema's columns in order (missing ones empty),
    each as `write_table(conform(frame))` stores it — integers with missing cells as 0,
    floats with NaN as missing (as from_pandas stores NaN), text as given (other values as
    text, missing ones as ""), categories as a dictionary of their sorted values (pandas' categories) — and the pandas
    metadata that restores the model's dtypes. Extra columns (`keep_extra`) must be float64,
    int64 (pandas' nullable Int64 when the field's metadata is `NULLABLE_INT`), text or
    boolean and are kept as they are, after the schema's (text as the installed pandas'
    default text dtype stores it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = SCHEMAS[name]
    types = _arrow_types()
    table = table.combine_chunks()  # (one chunk per column: a single record batch)
    n = table.num_rows
    arrays, fields, categories = [], [], {}
    for col, dtype in schema.items():
        have = col in table.column_names
        # (Each cast and fill only where it changes something: a call costs microseconds
        # even when it has nothing to do, and a small table has dozens of columns.)
        if dtype == "category":
            values = _as_type(_one_chunk(table.column(col), pa), types["string"]) if have \
                else pa.repeat("", n).cast(types["string"])
            if values.null_count:
                values = pc.fill_null(values, "")
            arr = _sorted_dictionary(values, pa, pc)
            categories[col] = len(arr.dictionary)
        elif not have:
            arr = _empty_arrow(dtype, n, pa)
        else:
            arr = _one_chunk(table.column(col), pa)
            if dtype in ("int64", "int32", "int16"):
                if pa.types.is_floating(arr.type):  # (NaN is no number: 0, as in `conform`)
                    arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type), arr)
                arr = _as_type(arr, types[dtype], safe=False)
                if arr.null_count:
                    arr = pc.fill_null(arr, 0)
            elif dtype == "float64":
                arr = _as_type(arr, types[dtype])
                if arr.null_count < len(arr) and pc.any(pc.is_nan(arr)).as_py():
                    arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, pa.float64()), arr)
            elif dtype == "string":  # (text stays as given, missing cells too: `conform`
                is_text = pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
                arr = _as_type(arr, types[dtype])  # converts only columns of another dtype)
                if not is_text and arr.null_count:
                    arr = pc.fill_null(arr, "")
            else:  # Int64: missing cells stay missing
                arr = _as_type(arr, types[dtype])
        arrays.append(arr)
        fields.append(col)
    extras = []
    if keep_extra:
        for col in table.column_names:
            if col in schema:
                continue
            arr = _one_chunk(table.column(col), pa)
            kind = str(arr.type)
            if kind == "int64" and table.schema.field(col).metadata == NULLABLE_INT:
                kind = "Int64"
            if kind not in _EXTRA_SAMPLES:
                raise TypeError(f"extra column {col!r} of {name} is {arr.type}: not a number,"
                                " text or boolean")
            arrays.append(arr)
            fields.append(col)
            extras.append((col, kind))
    for i, (_, kind) in enumerate(extras, start=len(arrays) - len(extras)):
        arrays[i] = _as_type(arrays[i], _extra_entry(kind)[1])  # (text as pandas stores it)
    return pa.Table.from_arrays(arrays, names=fields).replace_schema_metadata(
        {b"pandas": _metadata_bytes((name, tuple(extras)), tuple(categories.items()))})


def _as_type(arr, arrow_type, safe: bool = True):
    return arr if arr.type == arrow_type else arr.cast(arrow_type, safe=safe)


_metadata_encoded: dict[tuple, bytes] = {}


def _metadata_bytes(layout: tuple, categories: tuple) -> bytes:
    """The pandas metadata of a table of this layout ((table, extras):
    `_metadata_template`) as stored (JSON), with each category column's count of
    categories (`categories`: (column, count) pairs) and the width of its codes; made and
    encoded once per layout and counts."""
    key = (layout, categories)
    data = _metadata_encoded.get(key)
    if data is None:
        import json

        meta = _metadata_template(*layout)
        if categories:
            counts = dict(categories)
            meta = dict(meta, columns=[dict(c) for c in meta["columns"]])
            for c in meta["columns"]:
                if c["name"] in counts:
                    k = counts[c["name"]]
                    c["numpy_type"] = _category_codes_type(k)
                    c["metadata"] = dict(c["metadata"], num_categories=k)
        data = json.dumps(meta).encode("utf8")
        if len(_metadata_encoded) < _METADATA_KEPT:
            _metadata_encoded[key] = data
    return data


_METADATA_KEPT = 4096  # layouts x category counts remembered (a reader meets a few dozen)


def _one_chunk(col, pa):
    """A column of a combined table as one Array (an empty table's has no chunk)."""
    return col.chunk(0) if col.num_chunks == 1 else pa.concat_arrays(col.chunks) \
        if col.num_chunks else pa.array([], col.type)


def _sorted_dictionary(values, pa, pc):
    """`values` (text, no missing cell) as pandas' categorical stores it in Arrow: the
    dictionary is the sorted distinct values, the indices as wide as pandas' codes."""
    distinct = pc.unique(values)
    if len(distinct) == 0:  # (pandas' empty categorical: a dictionary of null type)
        return pa.DictionaryArray.from_arrays(pa.array([], pa.int8()), pa.array([], pa.null()))
    distinct = distinct.take(pc.sort_indices(distinct))
    codes = pc.index_in(values, value_set=distinct)
    index_type = getattr(pa, _category_codes_type(len(distinct)))()
    return pa.DictionaryArray.from_arrays(codes.cast(index_type), distinct)


def _empty_arrow(dtype: str, n: int, pa):
    """An absent column of `conform_arrow`: what `_empty_column` stores."""
    if dtype in ("int64", "int32", "int16"):
        return pa.array(np.zeros(n, dtype=dtype)) if n else pa.array([], _arrow_types()[dtype])
    if dtype == "float64":
        return pa.nulls(n, pa.float64())
    if dtype == "Int64":
        return pa.nulls(n, pa.int64())
    return pa.repeat("", n).cast(pa.large_string())
