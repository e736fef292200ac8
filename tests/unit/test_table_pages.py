"""A page cut from a table still in Arrow (`tables.arrow_page`, the first pages of stored
tables) is the page the frame gives (`apply` + `to_records` on `arrow_to_frame`'s frame):
on every table of every fixture's cache entries and on tables made to hold every case
(missing values, ties, nullable integers, categories), for every orderable column, both
directions, several pages; where Arrow cannot give the frame's order it declines."""
import math
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from tb_plugin import discovery
from tb_plugin.analysis import tables
from tb_plugin.cache import ProfileCache, entry_key
from tb_plugin.loading import build_entry
from tb_plugin.table_files import arrow_to_frame
from tests.tb_server import FIXTURES


def _frame_page(frame, sort, default, limit, offset):
    page, total = tables.apply(frame, sort, default, None, "name", limit, offset)
    return tables.to_records(page), total


def _same(a, b) -> bool:
    """Equal rows, NaN never present (both give None), floats and ints told apart."""
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        if list(ra) != list(rb):
            return False
        for k in ra:
            va, vb = ra[k], rb[k]
            if type(va) is not type(vb) or va != vb:
                if not (isinstance(va, float) and isinstance(vb, float) and math.isnan(va)
                        and math.isnan(vb)):
                    return False
    return True


def _check_every_sort(table, pages=((None, 0), (5, 0), (3, 2), (50, 7), (0, 0))):
    """Compare both ways of paging `table` for each orderable column; the number of sorts
    Arrow answered."""
    answered = 0
    frame = arrow_to_frame(table)
    for field in table.schema:
        for sort in (field.name, "-" + field.name):
            for limit, offset in pages:
                got = tables.arrow_page(table, sort, "unused", limit, offset)
                orderable = (pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
                             or pa.types.is_boolean(field.type))
                if got is None:
                    assert not orderable or tables._record_kinds(table) is None, \
                        (field.name, field.type)
                    continue
                answered += 1
                want = _frame_page(frame, sort, "unused", limit, offset)
                assert got[1] == want[1]
                assert _same(got[0], want[0]), (sort, limit, offset, got[0][:3], want[0][:3])
    return answered


@pytest.fixture(scope="module")
def entry_tables(tmp_path_factory):
    """Every Arrow table of the fixtures' cache entries (views stage), by file."""
    cache = ProfileCache(str(tmp_path_factory.mktemp("pages-cache")))
    runs, _ = discovery.discover(FIXTURES)
    out = {}
    for run in sorted(runs.values(), key=lambda r: r.name):
        for span in run.spans():
            key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
            build_entry(span, cache.root, key)
            directory = cache.entry_dir(key)
            for name in sorted(os.listdir(directory)):
                if name.endswith(".arrow"):
                    path = os.path.join(directory, name)
                    out[f"{run.name}/{span.worker}/{name}"] = \
                        pa.ipc.open_file(pa.memory_map(path)).read_all()
    return out


def test_pages_of_every_fixture_table_are_the_frames_pages(entry_tables):
    stored = [k for k in entry_tables if "stored-" in k]
    assert len(stored) >= 10, "the fixtures store the kernel and operator first answers"
    answered = 0
    for name, table in entry_tables.items():
        if table.num_rows > 5_000:  # (the biggest tables: the same code paths)
            table = table.slice(0, 5_000)
        pages = ((None, 0), (7, 3)) if "stored-" in name else ((7, 3),)
        answered += _check_every_sort(table, pages=pages)
    assert answered > 200  # not vacuous: most tables are paged in Arrow


def _with_pandas_metadata(df: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(df, preserve_index=False)


def test_pages_of_tables_with_every_case_are_the_frames_pages():
    nan, inf = float("nan"), float("inf")
    n = 40
    rng = np.random.default_rng(7)
    ties = rng.integers(0, 4, n)
    arrow_made = pa.table({
        "name": pa.array([f"k{i % 7}" for i in range(n)]),
        "ties": pa.array(ties, pa.int64()),
        "ints_missing": pa.array([None if i % 5 == 0 else int(v) for i, v in enumerate(ties)],
                                 pa.int64()),
        "big": pa.array([(1 << 60) + i * 3 for i in range(n)], pa.uint64()),
        "floats": pa.array([[1.5, nan, -0.0, 0.0, inf, -inf, None, 2.25][i % 8]
                            for i in range(n)], pa.float64()),
        "small": pa.array(rng.random(n), pa.float32()),
        "flag": pa.array([None if i % 6 == 0 else bool(i % 2) for i in range(n)]),
        "text": pa.array([None if i % 9 == 0 else f"t{i}" for i in range(n)]),
        "cat": pa.array([f"c{i % 3}" for i in range(n)]).dictionary_encode(),
    })
    assert _check_every_sort(arrow_made) > 50
    from_pandas = _with_pandas_metadata(pd.DataFrame({
        "name": pd.array([f"k{i % 7}" for i in range(n)], dtype="string"),
        "nullable": pd.array([None if i % 4 == 0 else int(v) for i, v in enumerate(ties)],
                             dtype="Int64"),
        "plain": ties.astype(np.int32),
        "ratio": np.where(ties == 0, np.nan, ties / 3),
        "on": pd.array([None if i % 7 == 0 else i % 2 == 0 for i in range(n)], dtype="boolean"),
        "kind": pd.Categorical([f"c{i % 3}" for i in range(n)]),
    }))
    assert _check_every_sort(from_pandas) == 4 * 2 * 5  # every orderable column, both ways
    one = pa.table({"name": ["a"], "v": [1.0]})
    assert _check_every_sort(one) > 0
    empty = pa.table({"name": pa.array([], pa.string()), "v": pa.array([], pa.float64())})
    assert tables.arrow_page(empty, "-v", "v") == ([], 0)


def test_it_declines_where_the_frame_is_needed_and_rejects_what_apply_rejects():
    t = pa.table({"name": ["b", "a"], "v": [1, 2],
                  "when": pa.array([1, 2], pa.timestamp("us"))})
    assert tables.arrow_page(t.select(["name", "v"]), "name", "-v") is None  # text order
    assert tables.arrow_page(t, "-v", "-v") is None  # a column type it does not write
    dup = pa.table([pa.array([1, 2]), pa.array([3, 4])], names=["v", "v"])
    assert tables.arrow_page(dup, "v", "v") is None
    plain = t.select(["name", "v"])
    for bad in ({"sort": "nope"}, {"limit": -1}, {"offset": "x"}):
        args = {"sort": None, "limit": None, "offset": 0, **bad}
        with pytest.raises(ValueError) as ours:
            tables.arrow_page(plain, args["sort"], "-v", args["limit"], args["offset"])
        with pytest.raises(ValueError) as theirs:
            tables.apply(arrow_to_frame(plain), args["sort"], "-v", None, "name",
                         args["limit"], args["offset"])
        assert str(ours.value) == str(theirs.value)
