"""tables.apply / to_csv / to_records: sort, search, paging and safe serialization."""
import csv
import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from tb_plugin.analysis import tables


def _df():
    return pd.DataFrame({
        "name": pd.array(["MatMul", "add.(x)", "ADDX", "conv[1]", "Cast", "addXYZ"], dtype="string"),
        "calls": np.array([3, 1, 2, 2, 5, 4], dtype=np.int64),
        "total_us": np.array([10.0, 30.0, np.nan, 30.0, 1.5, 2.0]),
    })


def test_default_sort_descending_with_ties_stable_and_nan_last():
    page, total = tables.apply(_df(), None, "-total_us", None, "name", None, 0)
    assert total == 6
    # 30.0 ties keep the input order (add.(x) before conv[1]); NaN goes last.
    assert list(page["name"]) == ["add.(x)", "conv[1]", "MatMul", "addXYZ", "Cast", "ADDX"]


def test_sort_ascending_and_explicit_overrides_default():
    page, _ = tables.apply(_df(), "calls", "-total_us", None, "name", None, 0)
    assert list(page["calls"]) == sorted(_df()["calls"])
    page, _ = tables.apply(_df(), "total_us", "-calls", None, "name", None, 0)
    assert list(page["name"]) == ["Cast", "addXYZ", "MatMul", "add.(x)", "conv[1]", "ADDX"]
    page, _ = tables.apply(_df(), "-name", "calls", None, "name", None, 0)
    assert list(page["name"]) == sorted(_df()["name"], reverse=True)


@pytest.mark.parametrize("bad", ["nope", "-nope", "-", "name "[:-1] + "x"])
def test_sort_unknown_column_lists_valid_columns(bad):
    with pytest.raises(ValueError) as err:
        tables.apply(_df(), bad, "-total_us", None, "name", None, 0)
    msg = str(err.value)
    for col in ("name", "calls", "total_us"):
        assert col in msg


def test_search_case_insensitive_literal():
    df = _df()
    page, total = tables.apply(df, None, "calls", "aDd", "name", None, 0)
    expected = [n for n in df["name"] if "add" in n.lower()]
    assert total == len(expected) == 3
    assert sorted(page["name"]) == sorted(expected)
    # "." is a literal dot, not "any character": matches "add.(x)" only, not "ADDX".
    page, total = tables.apply(df, None, "calls", "d.(", "name", None, 0)
    assert list(page["name"]) == ["add.(x)"] and total == 1
    page, total = tables.apply(df, None, "calls", "[1]", "name", None, 0)
    assert list(page["name"]) == ["conv[1]"]
    page, total = tables.apply(df, None, "calls", ".*", "name", None, 0)
    assert total == 0
    page, total = tables.apply(df, None, "calls", "", "name", None, 0)
    assert total == 6


def test_search_categorical_column():
    df = _df()
    df["name"] = df["name"].astype("category")
    page, total = tables.apply(df, None, "calls", "ADD", "name", None, 0)
    assert total == 3
    assert set(page["name"]) == {"add.(x)", "ADDX", "addXYZ"}


def test_search_unknown_column_raises():
    with pytest.raises(ValueError):
        tables.apply(_df(), None, "calls", "x", "missing", None, 0)


def test_paging_total_counted_after_search_before_paging():
    df = pd.DataFrame({"name": [f"k{i}" for i in range(50)], "v": np.arange(50)})
    page, total = tables.apply(df, "v", "v", "k1", "name", 3, 2)
    matching = [i for i in range(50) if "k1" in f"k{i}"]  # k1, k10..k19
    assert total == len(matching) == 11
    assert list(page["v"]) == matching[2:5]
    page, total = tables.apply(df, "v", "v", None, "name", 10, 45)
    assert list(page["v"]) == [45, 46, 47, 48, 49] and total == 50
    page, _ = tables.apply(df, "v", "v", None, "name", 0, 0)
    assert len(page) == 0


def test_limit_default_and_cap():
    df = pd.DataFrame({"name": ["x"] * 20000, "v": np.arange(20000)})
    page, total = tables.apply(df, None, "v", None, "name", None, 0)
    assert len(page) == tables.DEFAULT_LIMIT and total == 20000
    page, _ = tables.apply(df, None, "v", None, "name", 50000, 0)
    assert len(page) == tables.MAX_LIMIT
    page, _ = tables.apply(df, None, "v", None, "name", 5, 0, paginate=False)
    assert len(page) == 20000


@pytest.mark.parametrize("limit,offset", [(-1, 0), (10, -1), ("abc", 0)])
def test_bad_paging_raises(limit, offset):
    with pytest.raises(ValueError):
        tables.apply(_df(), None, "calls", None, "name", limit, offset)


def _parse(text):
    return list(csv.reader(io.StringIO(text)))


def test_csv_quoting_round_trips():
    names = ['a,b', 'say "hi"', 'line1\nline2', 'plain', 'ünïcode']
    df = pd.DataFrame({"name": pd.array(names, dtype="string"),
                       "total_us": [1.0, 2.5, 0.1 + 0.2, np.nan, 1e-7]})
    rows = _parse(tables.to_csv(df))
    assert rows[0] == ["name", "total_us"]
    assert [r[0] for r in rows[1:]] == names
    values = [r[1] for r in rows[1:]]
    assert float(values[2]) == 0.1 + 0.2  # full precision
    assert values[3] == ""
    assert float(values[4]) == 1e-7


def test_csv_injection_prefix_only_on_text():
    df = pd.DataFrame({
        "name": pd.array(["=SUM(A1)", "+1", "-x", "@cmd", "ok=1", "\tTAB"], dtype="string"),
        "cat": pd.Categorical(["=a", "b", "c", "d", "e", "f"]),
        "delta": [-1.5, -2.0, 3.0, -4.0, 5.0, 6.0],
        "n": np.array([-1, 2, 3, 4, 5, 6], dtype=np.int64),
    })
    rows = _parse(tables.to_csv(df))
    assert [r[0] for r in rows[1:]] == ["'=SUM(A1)", "'+1", "'-x", "'@cmd", "ok=1", "'\tTAB"]
    assert rows[1][1] == "'=a" and rows[2][1] == "b"
    assert [float(r[2]) for r in rows[1:]] == list(df["delta"])
    assert rows[1][3] == "-1"


def test_to_records_json_safe():
    df = pd.DataFrame({
        "name": pd.array(["a", None], dtype="string"),
        "f": [np.nan, np.inf],
        "i": np.array([1, 2], dtype=np.int64),
        "ni": pd.array([pd.NA, 7], dtype="Int64"),
        "c": pd.Categorical(["x", "y"]),
        "b": [True, False],
    })
    recs = tables.to_records(df)
    assert recs == [
        {"name": "a", "f": None, "i": 1, "ni": None, "c": "x", "b": True},
        {"name": None, "f": None, "i": 2, "ni": 7, "c": "y", "b": False},
    ]
    assert type(recs[0]["i"]) is int and type(recs[1]["ni"]) is int
    json.dumps(recs, allow_nan=False)


def test_to_records_empty_and_float_values():
    assert tables.to_records(pd.DataFrame({"a": []})) == []
    recs = tables.to_records(pd.DataFrame({"a": np.array([1.25], dtype=np.float32)}))
    assert recs == [{"a": 1.25}] and type(recs[0]["a"]) is float
    assert not math.isnan(recs[0]["a"])
