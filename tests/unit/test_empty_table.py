"""`schema.empty_table`: the frame a profile gives for a table it lacks. It is made once per
table and handed out as a new frame each call, so what one caller does to its frame is not
seen by the next."""
import pytest

from tb_plugin import schema


@pytest.mark.parametrize("table", schema.TABLES)
def test_the_schema_columns_in_order_with_their_dtypes_and_no_rows(table):
    df = schema.empty_table(table)
    assert len(df) == 0
    assert list(df.columns) == list(schema.SCHEMAS[table])
    for col, dtype in schema.SCHEMAS[table].items():
        got = str(df[col].dtype)
        # ("string" columns: pandas' string dtype, whichever storage the installed pandas uses)
        assert got == dtype or (dtype == "string" and got in ("string", "str")), (col, got)


def test_what_a_caller_does_to_its_frame_is_not_seen_by_the_next():
    first = schema.empty_table("kernels")
    first["extra"] = 1.0
    first["name"] = first["name"].astype(object)
    first.columns = ["renamed" if c == "start_ns" else c for c in first.columns]
    first.loc[0, "extra"] = 2.0  # a row added by enlargement
    assert len(first) == 1
    second = schema.empty_table("kernels")
    assert second is not first
    assert list(second.columns) == list(schema.SCHEMAS["kernels"])
    assert len(second) == 0
    assert str(second["name"].dtype) == schema.SCHEMAS["kernels"]["name"]
