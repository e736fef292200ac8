"""The checks behind the HTTP answers, directly: parameter ranges (http/params.py), the
regular-expression limits (analysis/trace.py) and response encoding and size caps
(http/responses.py)."""
from __future__ import annotations

import json
import time

import pytest
from werkzeug.datastructures import MultiDict

from tb_plugin.analysis import trace
from tb_plugin.http import params, responses
from tb_plugin.http.responses import ApiError


def _err(fn, *args, **kw) -> ApiError:
    with pytest.raises(ApiError) as info:
        fn(*args, **kw)
    assert info.value.status == 400
    return info.value


@pytest.mark.parametrize("value", ["1e308", "-1e308", "inf", "nan", "9000000000000001",
                                   "1e16", "x", "0x1"])
def test_number_is_finite_and_in_range(value):
    err = _err(params.number, MultiDict({"start_us": value}), "start_us")
    assert "'start_us'" in err.message


def test_number_bounds():
    args = MultiDict({"t": "9e15", "d": "-1"})
    assert params.number(args, "t") == 9e15
    assert params.number(args, "absent", default=2.5) == 2.5
    err = _err(params.number, args, "d", lo=0)
    assert "between 0 and" in err.message and "'d'" in err.message


@pytest.mark.parametrize("value", ["9007199254740993", "-9007199254740993",
                                   "9" * 30, "1" * 4400, "1.5", ""])
def test_integer_range(value):
    args = MultiDict({"n": value})
    if value == "":
        assert params.integer(args, "n", default=7) == 7
        return
    assert "'n'" in _err(params.integer, args, "n").message


def test_integer_list():
    assert params.integers(MultiDict({"t": "1,2,,3"}), "t", lo=0, hi=5) == {1, 2, 3}
    assert params.integers(MultiDict(), "t", lo=0, hi=5) is None
    for v in ("1,6", "-1", "a", "1," * 11):
        assert "'t'" in _err(params.integers, MultiDict({"t": v}), "t", lo=0, hi=5,
                             max_items=10).message


@pytest.mark.parametrize("pattern, size", [("abc", 3), ("a{3}", 3), ("x{2,7}", 7),
                                           ("(ab|cd){10}", 50), ("[{}]{5}", 5),
                                           ("(a{1000}){1000}", 1_000_000)])
def test_expanded_size(pattern, size):
    assert trace._expanded_size(pattern) == size


def test_compile_refuses_huge_and_invalid_patterns_quickly():
    for pattern in ("a{4294967294}", "(((a{1000}){1000}){1000})", "(a", "[b-a]", "a**"):
        t0 = time.monotonic()
        with pytest.raises(ValueError):
            trace.compile_search(pattern)
        assert time.monotonic() - t0 < 1.0
    assert trace.compile_search("ATEN::mm").search("aten::mm")  # case-insensitive


def test_json_text_that_is_not_unicode_is_escaped():
    bad = "node01\udcff"  # how Python hands over a file name byte 0xff
    resp = responses.json_response({"name": bad, bad: [bad, "\ud800"]})
    assert resp.status_code == 200
    assert json.loads(resp.get_data().decode("utf-8")) == \
        {"name": "node01\\xff", "node01\\xff": ["node01\\xff", "\\ud800"]}
    err = responses.error_response(ApiError(404, f"unknown run {bad!r}"))
    assert err.status_code == 404 and err.get_data().decode("utf-8")


def test_json_answers_are_capped():
    big = {"rows": ["x" * 1000] * (responses.MAX_JSON_BYTES // 1000 + 10)}
    resp = responses.json_response(big)
    assert resp.status_code == 413
    assert len(resp.get_data()) < 1000


def test_csv_answers_are_capped(monkeypatch):
    monkeypatch.setattr(responses, "MAX_CSV_BYTES", 100)
    assert responses.csv_response("a,b\r\n" * 10, "t.csv").status_code == 200
    assert responses.csv_response("a,b\r\n" * 30, "t.csv").status_code == 413


def test_json_answers_hold_what_the_payload_holds():
    """NaN and inf are null, numpy values are their Python values, the rest as json would
    write it (the reference: the payload converted by hand, then json's own round trip)."""
    import numpy as np

    payload = {"f": [1.5, float("nan"), float("inf"), -float("inf"), -0.0, 1e16, 0.1],
               "n": [np.int64(7), np.float64(2.5), np.float64("nan"), np.bool_(True),
                     np.int32(-3)], "a": np.array([1, 2, 3]), "t": (1, "x"), 2: None,
               "big": 2 ** 70, "u": "été"}
    want = {"f": [1.5, None, None, None, -0.0, 1e16, 0.1], "n": [7, 2.5, None, True, -3],
            "a": [1, 2, 3], "t": [1, "x"], "2": None, "big": 2 ** 70, "u": "été"}
    got = json.loads(responses.json_response(payload).get_data().decode("utf-8"))
    assert got == json.loads(json.dumps(want))
    assert [type(v) for v in got["n"]] == [int, float, type(None), bool, int]
