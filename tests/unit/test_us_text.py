"""µs text -> ns: the vectorized per-shape parser against a plain-Python reference.

The reference reads each text by hand (sign, whole µs, the first four fractional digits,
the fourth rounding to the nearest ns; other forms through float), so it shares nothing
with `us_text.us_spans_to_ns` but the contract.
"""
from __future__ import annotations

import random
import re

import msgspec
import numpy as np
import pyarrow as pa

from tb_plugin.readers import trace_values
from tb_plugin.readers.us_text import us_text_to_ns

_PLAIN = re.compile(r"([-+]?)([0-9]*)(?:\.([0-9]*))?")
_MAX_NS = 2 ** 63 - 1


def reference_ns(text) -> int:
    if text is None:
        return 0
    t = text.strip(' \t\r\n"')
    m = _PLAIN.fullmatch(t)
    if m:
        whole = int(m.group(2) or "0")
        frac4 = int(((m.group(3) or "") + "0000")[:4])
        ns = whole * 1000 + (frac4 + 5) // 10
        if whole * 1000 + 999 <= _MAX_NS:
            return -ns if m.group(1) == "-" else ns
    try:
        v = int(round(float(t) * 1000.0))
    except (ValueError, OverflowError):
        return 0
    return v if -_MAX_NS <= v <= _MAX_NS else 0


def _texts(seed: int, n: int) -> list:
    rng = random.Random(seed)
    fixed = ["1700000000000100.250", "1700000000000100.25\t", '"12.5"', "12", "1.25e3", None,
             "N/A", "", "-3.5", "+7", "0012.5", ".5", "5.", "-", ".", '""', '"', " 42.123456 ",
             "9223372036854775.807", "9223372036854774.999", "99999999999999999", "1.2.3",
             "12a", "1700000000000100.2505", "0.00049", "0.00051", "-0.0005", ' \t"13"\t ',
             "1e-3", "inf", "nan", "123456789012345678901234567890", "-1700000000000100.999"]
    out = list(fixed)
    for _ in range(n):
        k = rng.random()
        if k < 0.35:
            out.append(f"{rng.randint(0, 10 ** 16)}.{rng.randint(0, 999):03d}")
        elif k < 0.55:
            out.append(str(rng.randint(0, 10 ** rng.randint(1, 17))))
        elif k < 0.8:
            out.append(f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 7)}f}")
        else:
            out.append("".join(rng.choice("0123456789.-+e \t\"x") for _ in range(rng.randint(0, 12))))
    return out


def test_every_text_shape_matches_the_reference():
    texts = _texts(20261201, 6000)
    got = us_text_to_ns(pa.array(texts, pa.string()))
    want = np.array([reference_ns(t) for t in texts], np.int64)
    bad = np.flatnonzero(got != want)
    assert not len(bad), [(texts[i], int(got[i]), int(want[i])) for i in bad[:5]]


def test_binary_and_sliced_arrays_read_in_place():
    texts = _texts(7, 500)
    want = np.array([reference_ns(t) for t in texts], np.int64)
    as_bytes = pa.array([t.encode() if t is not None else None for t in texts], pa.binary())
    assert (us_text_to_ns(as_bytes) == want).all()
    assert (us_text_to_ns(pa.array(texts, pa.string()).slice(40, 300)) == want[40:340]).all()


def test_raw_trace_values_numbers_and_strings():
    """A chunk's `ts` values as msgspec.Raw (JSON numbers, JSON strings, absent)."""
    values = [b'"1717200000001224.662"', b"1623143089861.125", b"5", b"", b'"7.5"',
              b"-0.25", b'"1,5"', b"1.5e3"]
    raws = [msgspec.Raw(v) for v in values]
    got = trace_values._raw_us_to_ns(raws)
    want = [reference_ns(v.decode()) for v in values]
    assert got.tolist() == want
    # Without the value with a comma: the comma-split path.
    keep = [i for i, v in enumerate(values) if b"," not in v]
    assert trace_values._raw_us_to_ns([raws[i] for i in keep]).tolist() == [want[i] for i in keep]


def test_raw_args_values_decode_as_json_would():
    """Extracted args (`_raw_values`): every kind of JSON value, absent ones None; columns of
    integers only (ids) take Arrow's integer parse, any other value the per-text decode.
    The reference is the stdlib json module, one value at a time."""
    import json

    rng = random.Random(7)
    ints = [b"0", b"-0", b"7", b"-12", b"9223372036854775807", b"-9223372036854775808"]
    others = [b"9223372036854775808", b"1.5", b"1e3", b'"12"', b'"x"', b"null", b"true",
              b"[1,[2,3]]", b'{"a":1}', b'"\\u00e9t\\u00e9"']
    columns = [
        [rng.choice(ints) for _ in range(300)],                     # ids only
        [rng.choice(ints + [b""]) for _ in range(300)],             # ids, some absent
        [b""] * 50,                                                 # absent everywhere
        [rng.choice(ints + [b""] + [rng.choice(others)]) for _ in range(300)],  # mixed
    ]
    columns += [[v] for v in ints + others]  # each value alone
    for col in columns:
        got = trace_values._raw_values([msgspec.Raw(v) for v in col])
        want = [json.loads(v) if v else None for v in col]
        assert got.dtype == object and len(got) == len(want)
        for g, w in zip(got.tolist(), want):
            assert g == w and type(g) is type(w), (g, w)


def test_without_the_compiled_helper_the_numbers_are_the_same(monkeypatch):
    """`_native.us_to_ns` parses the plain decimals, numpy the rest; numpy alone (an install
    without the compiled helpers) gives the same numbers, and both match the reference."""
    from tb_plugin.readers import us_text

    assert us_text._native_us_to_ns is not None  # CI compiles it: else this compares nothing
    texts = _texts(20261202, 6000)
    texts += ['""""1.5""""', '   7   ', '\t\t\t\t8', "0" * 24, "1" * 25, "+" * 3, "-0", "-0.0"]
    arr = pa.array(texts, pa.string())
    native = us_text_to_ns(arr)
    monkeypatch.setattr(us_text, "_native_us_to_ns", None)
    numpy_only = us_text_to_ns(arr)
    bad = np.flatnonzero(native != numpy_only)
    assert not len(bad), [(texts[i], int(native[i]), int(numpy_only[i])) for i in bad[:5]]
    want = np.array([reference_ns(t) for t in texts[:6000]], np.int64)
    assert (native[:6000] == want).all()
