"""A table a reader makes in Arrow (`arrow_tables.conform_arrow`, `Profile.set` of a pyarrow
Table) is stored exactly as the pandas path stores the same values (`schema.conform`, then
`pa.Table.from_pandas` in `write_table`): the same Arrow types, values and pandas metadata,
so the file, and the frame read back from it, do not depend on which path wrote them.

The reference is the pandas path itself, on every table of the model: each column gets
values of its kind with missing cells, as a reader would hand them over.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from tb_plugin import arrow_tables, model, schema
from tb_plugin.table_files import arrow_to_frame, read_table


def _raw_columns(table: str, n: int, rng: np.random.Generator, categories: int = 5) -> dict:
    """Per column of `table`: raw values as a reader has them (Python lists with None)."""
    out = {}
    for col, dtype in schema.SCHEMAS[table].items():
        missing = rng.random(n) < 0.2
        if dtype in ("int64", "int32", "int16", "Int64"):
            vals = rng.integers(-1000, 1000, n).tolist()
        elif dtype == "float64":
            vals = rng.normal(size=n).tolist()
            vals = [float("nan") if i % 7 == 3 else v for i, v in enumerate(vals)]
        elif dtype == "category":
            vals = [f"k{int(v)}" for v in rng.integers(0, categories, n)]
        else:
            vals = [f"name {int(v)} é" for v in rng.integers(0, 50, n)]
        out[col] = [None if m else v for v, m in zip(vals, missing)]
    return out


def _arrow_type(dtype: str):
    return {"int64": pa.int64(), "int32": pa.int64(), "int16": pa.int64(), "Int64": pa.int64(),
            "float64": pa.float64()}.get(dtype, pa.string())


def _pandas_input(table: str, raw: dict) -> pd.DataFrame:
    cols = {}
    for col, values in raw.items():
        dtype = schema.SCHEMAS[table].get(col, "float64")
        if dtype in ("int64", "int32", "int16", "Int64"):
            cols[col] = pd.array(values, dtype="Int64")
        elif dtype == "float64":
            cols[col] = np.array([np.nan if v is None else v for v in values], dtype=float)
        else:
            cols[col] = pd.array(values, dtype="string")
    return pd.DataFrame(cols)


def _arrow_input(table: str, raw: dict) -> pa.Table:
    return pa.table({col: pa.array(values, type=_arrow_type(schema.SCHEMAS[table].get(
        col, "float64")), from_pandas=True) for col, values in raw.items()})


def _reference(table: str, raw: dict, keep_extra: bool = False) -> pa.Table:
    frame = schema.conform(_pandas_input(table, raw), table, keep_extra=keep_extra)
    return pa.Table.from_pandas(frame, preserve_index=False)


@pytest.mark.parametrize("table", schema.TABLES)
def test_every_table_stored_as_the_pandas_path_stores_it(table):
    rng = np.random.default_rng(7)
    for n in (0, 1, 37):
        raw = _raw_columns(table, n, rng)
        got = arrow_tables.conform_arrow(_arrow_input(table, raw), table)
        want = _reference(table, raw)
        assert got.equals(want, check_metadata=True), (table, n, got.schema, want.schema)


@pytest.mark.parametrize("categories", [1, 126, 127, 300])
def test_category_codes_as_wide_as_pandas_makes_them(categories):
    rng = np.random.default_rng(categories)
    raw = _raw_columns("kernels", 2000, rng, categories=categories)
    got = arrow_tables.conform_arrow(_arrow_input("kernels", raw), "kernels")
    want = _reference("kernels", raw)
    assert got.equals(want, check_metadata=True)
    assert got.schema.field("core_type").type == want.schema.field("core_type").type


def test_absent_columns_are_stored_empty_as_the_pandas_path_stores_them():
    raw = _raw_columns("kernels", 12, np.random.default_rng(1))
    raw = {c: v for c, v in raw.items() if c in ("name", "start_ns")}
    got = arrow_tables.conform_arrow(_arrow_input("kernels", raw), "kernels")
    assert got.equals(_reference("kernels", raw), check_metadata=True)


def test_extra_number_columns_are_kept_after_the_schema():
    rng = np.random.default_rng(3)
    raw = _raw_columns("steps", 9, rng)
    raw["bd_Computing"] = rng.normal(size=9).tolist()
    raw["bd_Free"] = [None, *rng.normal(size=8).tolist()]
    got = arrow_tables.conform_arrow(_arrow_input("steps", raw), "steps", keep_extra=True)
    assert got.equals(_reference("steps", raw, keep_extra=True), check_metadata=True)
    assert got.column_names[-2:] == ["bd_Computing", "bd_Free"]


def test_extra_text_and_boolean_columns_are_kept_as_a_frame_of_rows_keeps_them():
    """Extra text and booleans of a reader's rows (the communication matrix's op_name,
    group, kind, aggregate) are stored with the dtype a frame of those Python rows has on
    the installed pandas (`object` on pandas 2, `str` on 3), as the pandas path stores it."""
    rows = [{"step": s, "op": f"allReduce@g{s}", "src_rank": s, "dst_rank": 1,
             "transport": "HCCS", "transit_size_mb": 1.5 * s, "transit_ns": 10 * s,
             "bandwidth_gbps": float("nan") if s == 2 else 3.0, "op_name": "hcom é",
             "group": "" if s == 1 else "g", "kind": "collective", "aggregate": s == 3}
            for s in (1, 2, 3)]
    frame = pd.DataFrame(rows)
    frame["step"] = frame["step"].astype("Int64")
    want = pa.Table.from_pandas(schema.conform(frame, "communication_links", keep_extra=True),
                                preserve_index=False)
    arrow = pa.table({c: pa.array([r[c] for r in rows]) for c in rows[0]})
    got = arrow_tables.conform_arrow(arrow, "communication_links", keep_extra=True)
    assert got.equals(want, check_metadata=True), (got.schema, want.schema)
    assert got.column_names[-4:] == ["op_name", "group", "kind", "aggregate"]
    assert got.column("aggregate").to_pylist() == [False, False, True]


def test_an_extra_int64_column_marked_nullable_is_stored_as_pandas_int64():
    """A reader's nullable integer extra (the steps' device_id) is an int64 Arrow field with
    `arrow_tables.NULLABLE_INT` metadata: stored as the pandas path stores an Int64 column; the
    same column unmarked is a plain int64, missing cells and all."""
    ids = [4, None, 4]
    frame = pd.DataFrame({"step": np.array([1, 2, 3]), "total_ns": np.array([5, 6, 7]),
                          "device_id": pd.array(ids, dtype="Int64")})
    want = pa.Table.from_pandas(schema.conform(frame, "steps", keep_extra=True),
                                preserve_index=False)
    fields = [pa.field("step", pa.int64()), pa.field("total_ns", pa.int64()),
              pa.field("device_id", pa.int64(), metadata=arrow_tables.NULLABLE_INT)]
    arrow = pa.Table.from_arrays([pa.array([1, 2, 3]), pa.array([5, 6, 7]), pa.array(ids)],
                                 schema=pa.schema(fields))
    got = arrow_tables.conform_arrow(arrow, "steps", keep_extra=True)
    assert got.equals(want, check_metadata=True), (got.schema, want.schema)
    assert str(arrow_to_frame(got)["device_id"].dtype) == "Int64"
    plain = arrow_tables.conform_arrow(arrow.cast(pa.schema([f.remove_metadata() for f in fields])),
                                "steps", keep_extra=True)
    assert not plain.equals(want, check_metadata=True)


def test_an_extra_column_of_another_type_is_refused():
    t = pa.table({"name": ["a"], "note": pa.array([[1]])})
    with pytest.raises(TypeError, match="note"):
        arrow_tables.conform_arrow(t, "kernels", keep_extra=True)


def test_floats_as_integers_truncate_and_nan_becomes_zero_as_in_conform():
    t = pa.table({"start_ns": pa.array([1.9, -2.5, float("nan"), None])})
    got = arrow_tables.conform_arrow(t, "kernels").column("start_ns").to_pylist()
    want = schema.conform(pd.DataFrame({"start_ns": [1.9, -2.5, np.nan, None]}),
                         "kernels")["start_ns"].tolist()
    assert got == want == [1, -2, 0, 0]


def test_profile_set_of_an_arrow_table_reads_back_the_frame_the_pandas_path_reads(tmp_path):
    raw = _raw_columns("op_statistic", 25, np.random.default_rng(5))
    by_arrow = model.Profile(directory=str(tmp_path / "a"))
    by_pandas = model.Profile(directory=str(tmp_path / "p"))
    (tmp_path / "a").mkdir()
    (tmp_path / "p").mkdir()
    by_arrow.set("op_statistic", _arrow_input("op_statistic", raw))
    by_pandas.set("op_statistic", _pandas_input("op_statistic", raw))
    assert by_arrow.rows == by_pandas.rows == {"op_statistic": 25}
    kept = by_arrow.table("op_statistic")  # made from the table kept in memory
    from_file = read_table(str(tmp_path / "a" / "op_statistic.arrow"))
    reference = read_table(str(tmp_path / "p" / "op_statistic.arrow"))
    pd.testing.assert_frame_equal(kept, reference)
    pd.testing.assert_frame_equal(from_file, reference)
    assert by_arrow.arrow_column("op_statistic", "calls").to_pylist() == \
        reference["calls"].tolist()


def test_profile_without_a_directory_keeps_the_frame_a_file_would_give():
    raw = _raw_columns("api_statistic", 4, np.random.default_rng(9))
    p = model.Profile(directory=None)
    p.set("api_statistic", _arrow_input("api_statistic", raw))
    pd.testing.assert_frame_equal(p.table("api_statistic"),
                                  arrow_to_frame(_reference("api_statistic", raw)))
