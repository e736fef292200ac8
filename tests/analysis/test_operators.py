"""operators.table / stacks: grouping by name and (name, shapes), ordering, call stacks."""
from collections import defaultdict

import pandas as pd
import pytest

from tb_plugin.analysis import operators
from tb_plugin.model import Profile

# name, input_shapes, call_stack, host_self, host_total, device_self, device_total (ns)
ROWS = [
    ("aten::mm", "[2,3];[3,4]", "a.py(1)\nb.py(2)", 1000, 3000, 5000, 5000),
    ("aten::mm", "[2,3];[3,4]", "a.py(1)\nb.py(2)", 2000, 2000, 7000, 7000),
    ("aten::mm", "[8,8];[8,8]", "c.py(9)", 500, 900, 100, 100),
    ("aten::add", "[2,3];[2,3]", "a.py(1)\nb.py(2)", 4000, 4000, 0, 0),
    ("aten::add", "", "", 300, 300, 10, 10),
    ("aten::linear", "[2,3]", "a.py(5)", 10, 9000, 0, 12100),
]


def _profile(rows=ROWS):
    p = Profile(meta={"device": "npu"})
    p.set("operators", pd.DataFrame({
        "name": [r[0] for r in rows],
        "input_shapes": [r[1] for r in rows],
        "call_stack": [r[2] for r in rows],
        "host_self_ns": [r[3] for r in rows],
        "host_total_ns": [r[4] for r in rows],
        "device_self_ns": [r[5] for r in rows],
        "device_total_ns": [r[6] for r in rows],
    }))
    return p


def _expected(rows, key):
    out = defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in rows:
        acc = out[key(r)]
        acc[0] += 1
        for i in range(4):
            acc[i + 1] += r[3 + i]
    return {k: [v[0]] + [x / 1000 for x in v[1:]] for k, v in out.items()}


TIME_COLS = ["calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us"]


def test_group_by_name():
    df = operators.table(_profile(), "name")
    assert list(df.columns) == ["name"] + TIME_COLS == operators.columns("name")
    exp = _expected(ROWS, lambda r: r[0])
    got = {r["name"]: [r[c] for c in TIME_COLS] for r in df.to_dict("records")}
    assert got.keys() == exp.keys()
    for k in exp:
        assert got[k] == pytest.approx(exp[k])
    # Has device time -> ordered by device_self_us desc.
    assert list(df["name"]) == sorted(exp, key=lambda k: -exp[k][3])


def test_group_by_name_shape():
    df = operators.table(_profile(), "name_shape")
    assert list(df.columns) == ["name", "input_shapes"] + TIME_COLS
    exp = _expected(ROWS, lambda r: (r[0], r[1]))
    got = {(r["name"], r["input_shapes"]): [r[c] for c in TIME_COLS]
           for r in df.to_dict("records")}
    assert got.keys() == exp.keys()
    for k in exp:
        assert got[k] == pytest.approx(exp[k])
    assert ("aten::add", "") in got


def test_sorted_by_host_self_without_device_time():
    rows = [r[:5] + (0, 0) for r in ROWS]
    p = _profile(rows)
    assert operators.default_sort(p) == "-host_self_us"
    df = operators.table(p, "name")
    exp = _expected(rows, lambda r: r[0])
    assert list(df["name"]) == sorted(exp, key=lambda k: -exp[k][1])
    assert operators.default_sort(_profile()) == "-device_self_us"


@pytest.mark.parametrize("device, expected", [
    ((0, 0), False),          # host time only
    ((0, 12100), True),       # only a total (an op whose device time is all in children)
    ((10, 10), True),
])
def test_device_time_read_from_the_cache_file(tmp_path, device, expected):
    """The question is answered from the entry's file (two columns, no frame loaded) the
    same as from the frame it was written from."""
    from tb_plugin.cache import open_profile, write_profile

    rows = [r[:5] + (0, 0) for r in ROWS[:-1]] + [ROWS[-1][:5] + device]
    write_profile(str(tmp_path), _profile(rows))
    on_disk = open_profile(str(tmp_path))
    assert operators.has_device_time(on_disk) is expected
    assert "operators" not in on_disk.tables  # not loaded to answer it
    assert operators.has_device_time(_profile(rows)) is expected


def test_stacks_grouped_most_calls_first():
    got = operators.stacks(_profile(), "aten::mm")
    by_stack = defaultdict(lambda: [0, 0, 0])
    for r in ROWS:
        if r[0] == "aten::mm":
            by_stack[r[2]][0] += 1
            by_stack[r[2]][1] += r[3]
            by_stack[r[2]][2] += r[5]
    assert [g["stack"] for g in got] == ["a.py(1)\nb.py(2)", "c.py(9)"]
    for g in got:
        calls, hs, ds = by_stack[g["stack"]]
        assert g["calls"] == calls
        assert g["host_self_us"] == pytest.approx(hs / 1000)
        assert g["device_self_us"] == pytest.approx(ds / 1000)
    assert set(got[0]) == {"stack", "calls", "host_self_us", "device_self_us"}


def test_stacks_with_shapes_and_missing():
    got = operators.stacks(_profile(), "aten::mm", "[8,8];[8,8]")
    assert [(g["stack"], g["calls"]) for g in got] == [("c.py(9)", 1)]
    got = operators.stacks(_profile(), "aten::add", "")
    assert [(g["stack"], g["calls"]) for g in got] == [("", 1)]
    assert operators.stacks(_profile(), "aten::nothing") == []
    assert operators.stacks(Profile(), "aten::mm") == []


def test_invalid_group_and_empty():
    with pytest.raises(ValueError):
        operators.table(_profile(), "shape")
    df = operators.table(Profile(), "name_shape")
    assert list(df.columns) == ["name", "input_shapes"] + TIME_COLS and len(df) == 0


@pytest.mark.parametrize("fixture", ["torch_npu_dist4", "torch_npu_level1", "kineto_gpu",
                                     "mindspore_2x"])
@pytest.mark.parametrize("group_by", ["name", "name_shape"])
def test_groups_of_real_sized_fixtures_equal_a_pandas_groupby(fixture, group_by):
    """The operator table of every fixture profile equals one made with pandas' groupby
    (the sums, the calls, the labels and the default order)."""
    import os

    from tests.advisor.planted import read_all

    root = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", fixture)
    keys = ["name", "input_shapes"] if group_by == "name_shape" else ["name"]
    profiles = [p for _, p in read_all(root) if p.has("operators")]
    assert profiles
    for prof in profiles:
        ops = prof.table("operators")
        frame = {k: ops[k].astype("string").fillna("") for k in keys}
        frame.update({c: ops[f"{c}_ns"] for c in operators.TIME_COLUMNS})
        frame["calls"] = 1
        g = pd.DataFrame(frame).groupby(keys, sort=False).sum().reset_index()
        want = {k: g[k].astype(str).tolist() for k in keys}
        want["calls"] = g["calls"].tolist()
        want.update({f"{c}_us": (g[c] / 1000.0).tolist() for c in operators.TIME_COLUMNS})
        want = pd.DataFrame(want)
        first = "device_self_us" if operators.has_device_time(prof) else "host_self_us"
        want = want.sort_values([first] + keys, ascending=[False] + [True] * len(keys),
                                kind="stable").reset_index(drop=True)
        got = operators.table(prof, group_by)
        assert got[keys].astype(str).values.tolist() == want[keys].values.tolist()
        assert got["calls"].tolist() == want["calls"].tolist()
        for c in operators.TIME_COLUMNS:
            assert got[f"{c}_us"].tolist() == want[f"{c}_us"].tolist()
