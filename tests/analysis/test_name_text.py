"""analysis/name_text.py against a plain Python `re` loop over the names (the reference the
Arrow path must equal), and the advisor's matching_codes / the index's name table built on
it."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from tb_plugin.advisor.core import matching_codes
from tb_plugin.analysis import name_text, step_phases, trace_index

NAMES = [
    "Enqueue@aten::mm", "Dequeue@aten::mm", "Node@launch", "AscendCL@aclnnMm",
    "AscendCL@aclopCompileAndExecute", "hcom_allReduce__123", "HCCL", "ncclKernel_AllReduce",
    "aclnnAdd_AddAiCore_Add", "ProfilerStep#12", "Iteration 3", "FP_BP Time 3",
    "Iteration Refresh 3", "Reduce_3_1", "Iteration 3\n",          # `$` before a final newline
    "ITERATION 3", "optimizer.step#SGD.step", "Optimizer.step#Adam.step", "GC", "gc",
    "", " ", "a\tb", "x\x1fy", "x\x0by",                              # \s differs on these
    "算子@aten::mm", "Ｉteration 1", "straße", "STRASSE", "ſtep",       # non-ASCII, case folding
    "K", "k", "Kernel", "İstanbul", "ǅ", "Iteration ٣",                  # Kelvin sign, Arabic digit
    "trans_TransData_1", "TransData", "aclopCompile", "opCompile", "matmul_fp16",
    "MatMulV2", "BatchMatMul", "conv2d_bf16", "cast_fp32", "word_1 word", "a{,2}b",
]
PATTERNS = [
    (r"^Enqueue@", 0), (r"^(COMMUNICATION|HCCL)$", re.I), (r"^hcom_|nccl|hccl|gloo", re.I),
    (r"^AI_CPU$", re.I), (r"aclopCompileAndExecute|opCompile", re.I), (r"^GC$", 0),
    (r"^(torch|mindspore)_to_npu$", re.I), (r"^Node@launch$", re.I), (r"compile", re.I),
    (step_phases._TRACE_NAME.pattern, 0), (r"\d+$", 0), (r"\s", 0), (r"\w+ \w+", 0),
    (r"\bword\b", re.I), (r"step", re.I), (r"strasse", re.I), (r"k", re.I), (r"i", re.I),
    (r"x{,2}", 0), (r"a{,2}b", 0), (r"(?=Iter)Iteration", 0), (r"(a)\1", 0), (r"^$", 0),
    (r".*", 0), (r"Iteration \d\Z", 0),
    # In Python's re this is the set '[', ':', 'a', 'l', 'p', 'h' then ']+' (RE2 would read
    # a POSIX class): the case checks that re's meaning is kept. re warns about such a set
    # (FutureWarning "Possible nested set"); here the pattern is meant, so it is filtered.
    pytest.param(r"[[:alpha:]]+", 0, marks=pytest.mark.filterwarnings(
        "ignore:Possible nested set:FutureWarning")),
    (r"fp16|bf16", re.I | re.M),
    (r"(?i)transdata", 0), (r"算子", 0),
]


def reference(names, pattern, flags):
    rx = re.compile(pattern, flags)
    return np.array([rx.search(str(n)) is not None for n in names], dtype=bool)


@pytest.mark.parametrize("pattern,flags", PATTERNS)
def test_categorical_matches_python_re(pattern, flags):
    rows = NAMES + NAMES[::-1] + [None, None]
    col = pd.Series(pd.Categorical(rows))
    want = np.array([False if n is None else bool(re.search(pattern, n, flags)) for n in rows])
    got = name_text.regex_mask(col, pattern, flags)
    assert got.dtype == bool and np.array_equal(got, want)
    assert np.array_equal(matching_codes(col, pattern, flags), want)


@pytest.mark.parametrize("pattern,flags", PATTERNS)
def test_plain_string_column_matches_python_re(pattern, flags):
    # A non-categorical column: a missing name is tested as "" (as pandas' str.contains of
    # the filled column did).
    rows = NAMES + [None]
    for col in (pd.Series(rows, dtype="string"), pd.Series(rows, dtype=object)):
        want = reference(["" if n is None else n for n in rows], pattern, flags)
        assert np.array_equal(name_text.regex_mask(col, pattern, flags), want)


def test_arrow_backed_categories_are_converted_once_and_shared():
    col = pd.Series(pd.Categorical(NAMES * 3))
    cats = col.cat.categories
    first = name_text.text(cats)
    assert name_text.text(col[:5].cat.categories) is first     # row subsets share it
    assert first.to_pylist() == [str(c) for c in cats]
    codes, labels = name_text.codes_text(pd.Series(pd.Categorical(["a", None, "b"])))
    assert labels.to_pylist()[codes[1]] == ""


def test_non_string_categories_and_empty_columns():
    col = pd.Series(pd.Categorical([1, 22, 3, 22]))
    assert np.array_equal(name_text.regex_mask(col, r"^2", 0), [False, True, False, True])
    assert name_text.regex_mask(pd.Series([], dtype="category"), "x").shape == (0,)
    empty_cats = pd.Series(pd.Categorical([None, None], categories=[]))
    assert not name_text.regex_mask(empty_cats, "").any()


def test_bad_pattern_raises_pythons_error():
    with pytest.raises(re.error):
        name_text.regex_mask(pd.Series(pd.Categorical(["a"])), "(")


def test_index_name_table_equals_the_python_conversion():
    names = pd.Categorical(["b", None, "a", "算子", "b"])
    codes, table = trace_index._codes(pd.Series(names))
    want = [str(c) for c in names.categories] + [""]
    assert pa.array(trace_index._string_column(table)).to_pylist() == want
    assert [want[c] for c in codes] == ["b", "", "a", "算子", "b"]
    plain = pd.Series(["x", None, "y", "x"], dtype=object)
    codes, table = trace_index._codes(plain)
    got = pa.array(trace_index._string_column(table)).to_pylist()
    assert [got[c] for c in codes] == ["x", "", "y", "x"]


def test_the_advisors_patterns_take_the_arrow_path(monkeypatch):
    # The speed of the advisor on large traces rests on RE2 taking these; Python's `re` then
    # only sees the names that are not printable ASCII (none here).
    col = pd.Series(pd.Categorical([n for n in NAMES if n.isascii() and n.isprintable()]))
    calls = []
    real = name_text.text_mask

    def counting(labels, plain, pattern, flags=0):
        out = real(labels, plain, pattern, flags)
        calls.append((name_text._re2_usable(pattern, flags), bool(plain.all())))
        return out

    monkeypatch.setattr(name_text, "text_mask", counting)
    for pattern, flags in PATTERNS[:10]:
        name_text.regex_mask(col, pattern, flags)
    assert calls == [(True, True)] * 10


def test_a_column_used_by_codes_text_and_regex_mask_alike():
    # One categories object serves both (the dispatch path and the advisor share a table).
    col = pd.Series(pd.Categorical(["Enqueue@a", None, "Dequeue@a"]))
    codes, labels = name_text.codes_text(col)
    assert [labels.to_pylist()[c] for c in codes] == ["Enqueue@a", "", "Dequeue@a"]
    assert list(name_text.regex_mask(col, "^Enqueue")) == [True, False, False]
    assert name_text.codes_text(col[1:])[1] is labels
