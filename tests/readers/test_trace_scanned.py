"""The compiled field scanner (`_native.scan`, `trace_scanned`) against msgspec.

Two claims, each tested against the general path (every chunk decoded by msgspec into
`_Event` structs, as an install without the compiled scanner does):
- the tables are the same: every trace of the fixtures, a generated trace with every kind
  of event and field shape, damaged and repaired inputs: value for value, in order;
- the scanner takes a chunk only where msgspec decodes it, and then finds what msgspec
  finds: seeded random mutations of event JSON (bytes deleted, inserted, duplicated), and
  the grammar's edge cases one by one.
"""
from __future__ import annotations

import glob
import gzip
import json
import os
import random

import msgspec
import pandas as pd
import pytest

from tb_plugin.readers import kineto, trace_json, trace_scanned
from tb_plugin.readers.tolerant import InputError
from tb_plugin.readers.trace_chunks import _EVENTS
from tests.readers.test_trace_parallel import _assert_same, _every_kind_trace

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
SMALL_CHUNK = 16 << 10


def _trace_fixtures() -> list[str]:
    out = []
    for path in sorted(glob.glob(os.path.join(FIXTURES, "**", "*.json*"), recursive=True)):
        opener = gzip.open if path.endswith(".gz") else open
        try:
            with opener(path, "rb") as fh:
                head = fh.read(1 << 16)
        except OSError:
            continue
        if b'"ph"' in head:
            out.append(path)
    return out


def _general(monkeypatch):
    """Every chunk through msgspec's structs, as without the compiled scanner."""
    monkeypatch.setattr(trace_scanned, "_scan", None)


def _read(path, **kw):
    try:
        return trace_json.read_trace(path, decode_workers=1, **kw)
    except InputError as exc:  # no event at all: the same reason both ways
        return str(exc)


def _both(monkeypatch, path, **kw):
    kw.setdefault("chunk_bytes", SMALL_CHUNK)
    scanned = _read(path, **kw)
    with monkeypatch.context() as m:
        _general(m)
        general = _read(path, **kw)
    return scanned, general


def _assert_same_or_same_error(a, b):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
    else:
        _assert_same(a, b)


def test_the_scanner_is_built():
    """CI compiles it (setup.py's optional extension): without it every test below would
    compare the general path with itself."""
    assert trace_scanned.AVAILABLE
    assert trace_scanned.FIELDS == ("ph", "name", "cat", "pid", "tid", "ts", "dur", "id",
                                    "id2", "s", "args")


TRACES = _trace_fixtures()


def test_every_kind_of_fixture_trace_is_there():
    names = " ".join(TRACES)
    for kind in ("trace_view.json", ".pt.trace.json", "msprof_", ".json.gz", "hccl_"):
        assert kind in names, kind


@pytest.mark.parametrize("path", TRACES, ids=[os.path.relpath(p, FIXTURES) for p in TRACES])
def test_fixture_traces_read_the_same_both_ways(monkeypatch, path):
    kw = {}
    if ".pt.trace.json" in path:
        kw = dict(extract_args=kineto.EXTRACT, extract_for=kineto._extract_for)
    scanned, general = _both(monkeypatch, path, **kw)
    _assert_same_or_same_error(scanned, general)


def test_the_scanner_takes_the_chunks_of_real_traces(monkeypatch):
    """Not vacuous: on clean traces the scanned path is the one that ran."""
    taken = []
    real_scan = trace_scanned.scan

    def counting(data):
        chunk = real_scan(data)
        taken.append(chunk is not None)
        return chunk

    monkeypatch.setattr(trace_scanned, "scan", counting)
    trace_json.read_trace(_fixture_named("advisor_planted"), chunk_bytes=SMALL_CHUNK,
                          decode_workers=1)
    assert len(taken) > 3 and all(taken)


def _fixture_named(part: str) -> str:
    return next(p for p in TRACES if part in p)


def _odd_fields_trace(path: str) -> None:
    """Every shape a field takes in the wild or in a fuzzer, in one file."""
    rows = ['{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"H"}}',
            '{"ph":"X","name":"a\\u00e9\\"q\\"","cat":"c","pid":1,"tid":2,"ts":1,"dur":2}',
            '{"ph":"X","name":7,"pid":"1","tid":2,"ts":"3.5","dur":"1.25"}',  # text pid
            '{"ph":"X","name":["l",1],"pid":1.0,"tid":2,"ts":4}',              # list name
            '{"ph":"X","pid":1,"tid":2,"ts":5,"dur":1,"ph":"i","s":"g"}',      # repeated key
            '{ "ph" : "X" , "name" : "sp" , "pid" : 1 , "tid" : 3 , "ts" : 6 , "dur" : 1 }',
            '{"ph":"X","name":"big","pid":123456789012345678901234,"tid":1,"ts":1e3,"dur":0}',
            '{"ph":"X","name":"neg","pid":-1,"tid":true,"ts":-5,"dur":-1,"cat":null}',
            '{"ph":"X","name":"","cat":"","pid":1,"tid":2}',                   # no ts
            '{"ph":"s","id":5,"pid":1,"tid":2,"ts":7,"name":"f","cat":"x"}',
            '{"ph":"f","id":"0x5","pid":1,"tid":2,"ts":8,"bp":"e"}',
            '{"ph":"t","id2":{"local":"0x1"},"pid":1,"tid":2,"ts":9}',
            '{"ph":"s","id":123456789012345678901234567890,"pid":1,"tid":2,"ts":10}',
            '{"ph":"f","id":1.5,"pid":1,"tid":2,"ts":11}',
            '{"ph":"C","name":"mem","pid":2,"tid":0,"ts":12,"args":{"a":1,"b":"2.5","c":true}}',
            '{"ph":"i","name":"mark","pid":1,"tid":2,"ts":13,"s":3}',
            '{"ph":"I","name":"mark","pid":1,"tid":2,"ts":14}',
            '{"ph":"B","name":"b","pid":3,"tid":1,"ts":15,"args":{"x":[1,{"y":null}]}}',
            '{"ph":"E","pid":3,"tid":1,"ts":16}',
            '{"ph":"Z","name":"unknown phase","pid":1,"tid":2,"ts":17}',
            '{}',
            '{"ph":"X","name":"nested","pid":1,"tid":2,"ts":18,"dur":1,'
            '"args":{"Input Dims":[[1,2],[3]],"Call stack":"a;\\nb","deep":{"k":[{"v":[]}]}}}',
            '{"ph":"X","name":"名前","cat":"cpu_op","pid":1,"tid":2,"ts":"1700000000000019.125",'
            '"dur":"2.500","args":{"External id":9,"Sequence number":3}}']
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[\n" + ",\n".join(rows) + "\n]\n")


def test_odd_field_shapes_read_the_same_both_ways(monkeypatch, tmp_path):
    path = str(tmp_path / "odd.json")
    _odd_fields_trace(path)
    kw = dict(extract_args=kineto.EXTRACT, extract_for=kineto._extract_for)
    for chunk in (64, 1 << 20):  # one event per chunk, and one chunk
        scanned, general = _both(monkeypatch, path, chunk_bytes=chunk, **kw)
        _assert_same(scanned, general)
    assert len(scanned.slices) >= 8 and len(scanned.flows) >= 4


def test_every_kind_of_event_with_args_extracted_from_all_reads_the_same(monkeypatch,
                                                                         tmp_path):
    path = str(tmp_path / "trace_view.json")
    _every_kind_trace(path)
    kw = dict(extract_args=kineto.EXTRACT, extract_for=None)
    scanned, general = _both(monkeypatch, path, **kw)
    _assert_same(scanned, general)


@pytest.mark.parametrize("damage", ["truncated", "bare N/A", "invalid utf-8", "control char"])
def test_damaged_and_repaired_inputs_read_the_same(monkeypatch, tmp_path, damage):
    src = str(tmp_path / "whole.json")
    _every_kind_trace(src)
    data = open(src, "rb").read()
    if damage == "truncated":
        data = data[: int(len(data) * 0.6)]
    elif damage == "bare N/A":
        data = data.replace(b'"dur": "3.5"', b'"dur": N/A', 5)
    elif damage == "invalid utf-8":
        data = data.replace("名".encode(), b"\xff\xfe", 7)
    else:
        at = data.index(b'"op1', len(data) // 2)
        data = data[:at + 2] + b"\x01" + data[at + 2:]
    path = str(tmp_path / "damaged.json")
    with open(path, "wb") as fh:
        fh.write(data)
    scanned, general = _both(monkeypatch, path)
    _assert_same(scanned, general)
    if damage in ("truncated", "control char"):
        assert scanned.errors
    if damage != "truncated":
        assert len(scanned.slices) > 0


# The grammar: the scanner takes a chunk only where msgspec decodes it, and finds its values.

def _check_agrees(data: bytes) -> bool:
    """Whether the scanner took `data`; if it did, msgspec must decode it to the same."""
    chunk = trace_scanned.scan(data)
    if chunk is None:
        return False
    events = _EVENTS.decode(data)  # raises if the scanner took what msgspec refuses
    assert len(events) == len(chunk)
    for i, e in enumerate(events):
        for field in ("ts", "dur", "args"):
            a, b = chunk.bounds(getattr(trace_scanned, field.upper()))
            assert bytes(getattr(e, field)) == data[a[i]:b[i]], (field, data)
        for field in ("ph", "name", "cat", "pid", "tid", "id", "id2", "s"):
            values, index = chunk.values(getattr(trace_scanned, field.upper()))
            assert values[index[i]] == getattr(e, field), (field, data)
        a, b = chunk.bounds(trace_scanned.OBJECT)
        assert _EVENTS.decode(b"[" + data[a[i]:b[i]] + b"]")[0] == e
    return True


EDGE_CASES = [
    (b'[]', True), (b' [ ] ', True), (b'[{}]', True),
    (b'[{"ph":"X","ts":1}]', True),
    (b'[{"ph":"X","ts":01}]', False), (b'[{"ts":1.}]', False), (b'[{"ts":-}]', False),
    (b'[{"ts":.5}]', False), (b'[{"ts":1e}]', False), (b'[{"ts":1E+5}]', True),
    (b'[{"ts":-0.0e-0}]', True), (b'[{"ts":NaN}]', False), (b'[{"ts":Infinity}]', False),
    (b'[{"ts":1,}]', False), (b'[{"ts":1},]', False), (b'[{"ts":1}', False),
    (b'[{"ts" 1}]', False), (b'[{ts:1}]', False), (b"[{'ts':1}]", False),
    (b'[{"name":"a\x01b"}]', False), (b'[{"name":"a\x7fb"}]', True),
    (b'[{"name":"a\\x"}]', False), (b'[{"name":"\\u00e9\\n\\/"}]', True),
    (b'[{"name":"\\u00g9"}]', False), (b'[{"args":{"a":"\\ud800"}}]', False),
    (b'[{"args":{"a":"\\ud83d\\ude00"}}]', False),  # a pair: left to msgspec too
    (b'[{"p\\u0068":"X"}]', False),                   # an escaped key: left to msgspec
    (b'[{"args":{"k\\u0068":1}}]', True),             # escapes in nested keys are fine
    (b'[{"ph":1}]', False),                            # a phase that is not text
    (b'[{"ph":"X"} {"ph":"X"}]', False), (b'[1]', False), (b'[[]]', False),
    (b'[{"a":tru}]', False), (b'[{"a":nul}]', False), (b'[{"a":falsey}]', False),
    (b'[{"a":true,"b":false,"c":null}]', True),
    (b'[{"args":' + b'[' * 300 + b']' * 300 + b'}]', False),  # deeper than MAX_DEPTH
    (b'[{"args":' + b'[' * 100 + b']' * 100 + b'}]', True),
    (b'[{"ph":"X"}] x', False), (b'\t[\r\n{"ph":"X"}\n]\n', True),
]


@pytest.mark.parametrize("data,taken", EDGE_CASES)
def test_grammar_edge_cases(data, taken):
    assert _check_agrees(data) is taken
    if not taken:  # then the general path decides, as for any chunk
        try:
            _EVENTS.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            pass


def test_random_mutations_are_taken_only_where_msgspec_agrees():
    rng = random.Random(20261202)
    base = [json.dumps(e, ensure_ascii=rng.random() < 0.5).encode() for e in [
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 1, "tid": 2,
         "ts": "1700000000000001.250", "dur": 3.5, "args": {"Input Dims": [[2, 3], []],
                                                             "s": "a\"b\\c"}},
        {"ph": "s", "id": 17, "pid": 1, "tid": 2, "ts": 4, "name": "é"},
        {"ph": "C", "name": "m", "pid": 1, "tid": 0, "ts": 5, "args": {"v": -1.5e-3}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "t"}},
    ]]
    alphabet = b'{}[]:,"\\ 0123456789.eE+-truefalsn\x00\x1f\x7f\xc3\xa9'
    taken = refused = 0
    for _ in range(4000):
        data = bytearray(b"[" + b",".join(rng.choice(base) for _ in range(3)) + b"]")
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            op = rng.random()
            if op < 0.35:
                del data[at]
            elif op < 0.7:
                data.insert(at, rng.choice(alphabet))
            else:
                data[at:at] = data[at:at + rng.randint(1, 8)]
        data = bytes(data)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # chunks are made valid UTF-8 before either path sees them
        if _check_agrees(data):
            taken += 1
        else:
            refused += 1
    assert taken > 100 and refused > 1000, (taken, refused)


def test_the_helpers_can_be_switched_off():
    """NPU_PROFILER_NATIVE=0: the general paths only (one switch for both helpers)."""
    import subprocess
    import sys

    code = ("from tb_plugin.readers import trace_scanned, us_text;"
            "print(trace_scanned.AVAILABLE, us_text._native_us_to_ns is None)")
    env = dict(os.environ, NPU_PROFILER_NATIVE="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["False", "True"]
    env["NPU_PROFILER_NATIVE"] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["True", "False"]


def test_numbers_beyond_float_range_read_both_ways_and_lose_nothing(monkeypatch, tmp_path):
    """`1e400` is valid JSON (Python's json reads inf) that msgspec refuses ("Number out of
    range"). Found by the fuzz run (seed 23, `huge_numbers`): the scanned path raised it as
    an internal error, the general path dropped the rest of the file as damage. Now such a
    number reads as its text on both paths: every event is kept, no error, and the tracks
    are those of the ids as written."""
    events = [
        '{"ph":"M","name":"process_name","pid":1,"tid":1e400,"args":{"name":"Python"}}',
        '{"ph":"M","name":"thread_name","pid":1,"tid":-2.5E+999,"args":{"name":"T"}}',
        '{"ph":"X","name":"a","pid":1,"tid":1e400,"ts":10,"dur":5}',
        '{"ph":"X","name":"b","pid":1,"tid":-2.5E+999,"ts":20,"dur":5,"args":{"x":1e400}}',
        '{"ph":"B","name":"c","pid":1,"tid":7,"ts":30}',
        '{"ph":"E","pid":1,"tid":7,"ts":35}',
        '{"ph":"C","name":"mem","pid":1e400,"tid":0,"ts":40,"args":{"v":3}}',
        '{"ph":"X","name":"d","pid":1,"tid":7,"ts":50,"dur":1}',
    ]
    path = tmp_path / "huge.json"
    path.write_text("[\n" + ",\n".join(events) + "\n]\n")
    scanned, general = _both(monkeypatch, str(path))
    for got in (scanned, general):
        assert not isinstance(got, str), got
        assert got.errors == []
        assert sorted(got.slices["name"].astype(str)) == ["a", "b", "c", "d"]
        assert len(got.counters) == 1
        assert {"1e400", "-2.5E+999", "7"} <= set(got.tracks["tid"].astype(str))
    for name in ("tracks", "slices", "flows", "counters", "instants"):
        pd.testing.assert_frame_equal(getattr(scanned, name), getattr(general, name),
                                      check_exact=True)
    # The args text: as written where the scanner took the chunk; the general path decoded
    # the chunk with the number quoted, so its args show it as text.
    args = lambda t: [a for a in t.args.column("args").to_pylist() if a]  # noqa: E731
    assert args(scanned) == ['{"x":1e400}']
    assert args(general) == ['{"x":"1e400"}']
