"""One trace file decoded in parallel byte ranges gives exactly what one process gives.

The one-process path (`decode_workers=1`, tested on its own by the reader tests) is the
reference: every table, the args side file and the errors must be equal, value for value
and in the same order, on real and generated traces with every kind of event.
"""
from __future__ import annotations

import glob
import json
import os

import pandas as pd
import pytest

from tb_plugin.readers import kineto, trace_json

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
SMALL_CHUNK = 16 << 10  # many chunks out of a small file


def _fixture(pattern: str) -> str:
    hits = sorted(glob.glob(os.path.join(FIXTURES, pattern), recursive=True))
    assert hits, pattern
    return hits[0]


def _read(path, workers, **kw):
    return trace_json.read_trace(path, chunk_bytes=SMALL_CHUNK, decode_workers=workers, **kw)


def _assert_same(a, b):
    for name in ("tracks", "slices", "flows", "counters", "instants"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    assert a.args.equals(b.args)
    assert a.errors == b.errors
    assert a.event_count == b.event_count
    assert a.metadata == b.metadata


def _every_kind_trace(path: str) -> None:
    """X with args, B/E, counters, flows with int and str ids, instants, metadata, text."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Host"}},
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "main"}}]
    for i in range(1500):
        ts = f"{1700000000000000 + i * 10}.{i % 1000:03d}"
        events.append({"ph": "X", "name": f"op{i % 37}-名", "cat": "cpu_op", "pid": 1, "tid": 7,
                       "ts": ts, "dur": f"{i % 9}.5", "args": {"Sequence number": i}})
        if i % 5 == 0:
            events.append({"ph": "s" if i % 2 else "f", "name": f"flow{i}", "cat": "async",
                           "id": i if i % 3 else str(i), "pid": 1, "tid": 7, "ts": ts})
        if i % 11 == 0:
            events.append({"ph": "C", "name": "mem", "pid": 2, "tid": 0, "ts": ts,
                           "args": {"used": i * 3, "free": "12.5"}})
        if i % 13 == 0:
            events.append({"ph": "i", "name": f"mark{i}", "s": "t", "pid": 1, "tid": 8,
                           "ts": ts, "args": {"k": [i, i]}})
        if i % 17 == 0:
            events.append({"ph": "B", "name": "phase", "pid": 3, "tid": 1, "ts": ts})
            events.append({"ph": "E", "pid": 3, "tid": 1, "ts": f"{1700000000000000 + i * 10 + 5}"})
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n]\n")


@pytest.mark.parametrize("workers", [2, 3])
def test_generated_trace_with_every_kind_of_event(tmp_path, workers):
    path = str(tmp_path / "trace_view.json")
    _every_kind_trace(path)
    one = _read(path, 1)
    assert len(one.slices) > 1500 and len(one.flows) and len(one.counters) and len(one.instants)
    many = _read(path, workers)
    assert one.decode_ranges == 1 and many.decode_ranges == workers
    _assert_same(one, many)


def test_real_torch_npu_trace():
    path = _fixture("advisor_planted/**/trace_view.json")
    many = _read(path, 3)
    assert many.decode_ranges == 3
    _assert_same(_read(path, 1), many)


def test_real_kineto_trace_with_extracted_args():
    path = _fixture("real/kineto_resnet50_w0/*.pt.trace.json.gz")
    kw = dict(extract_args=kineto.EXTRACT, extract_for=kineto._extract_for)
    one = _read(path, 1, **kw)
    assert one.slices["a_corr"].notna().any()
    many = _read(path, 2, **kw)
    assert many.decode_ranges == 2
    _assert_same(one, many)


def test_damaged_file_falls_back_to_one_process(tmp_path):
    """A truncated file: the ranges after the damage cannot decode, so the file is read in
    one process, which keeps what precedes the damage and says where it is."""
    src = str(tmp_path / "whole.json")
    _every_kind_trace(src)
    data = open(src, "rb").read()
    cut = str(tmp_path / "cut.json")
    with open(cut, "wb") as fh:
        fh.write(data[: int(len(data) * 0.7)])
    one = _read(cut, 1)
    assert one.errors and "truncated or invalid" in one.errors[0][1]
    many = _read(cut, 3)
    assert many.decode_ranges == 1
    _assert_same(one, many)


def test_busy_cores_is_the_cpu_share_used_now():
    """From two samples of the CPU counters (user nice system idle iowait irq softirq
    steal): busy share of the time between them, times the cores."""
    from tb_plugin.readers import trace_ranges

    samples = iter([[100, 0, 50, 800, 50, 0, 0, 0],     # then 300 ticks: 150 busy, 150 idle
                    [200, 0, 100, 900, 100, 0, 0, 0]])
    assert trace_ranges.busy_cores(2, 0, lambda: next(samples)) == pytest.approx(1.0)
    idle = iter([[10, 0, 0, 100, 0, 0, 0, 0], [10, 0, 0, 300, 0, 0, 0, 0]])
    assert trace_ranges.busy_cores(4, 0, lambda: next(idle)) == 0.0

    def unreadable():
        raise OSError("no /proc")

    assert trace_ranges.busy_cores(2, 0, unreadable) == pytest.approx(os.getloadavg()[0])
    # And on this machine: a share of its cores.
    assert 0.0 <= trace_ranges.busy_cores(2, 0.05) <= 2.0


def test_a_helper_joins_when_a_core_frees_up(tmp_path, monkeypatch):
    """A large trace started with every core busy (one process) takes a helper at the
    first piece after which a core was idle: the tables are still the one-process ones."""
    from tb_plugin.readers import trace_ranges

    path = str(tmp_path / "trace_view.json")
    _every_kind_trace(path)
    one = _read(path, 1)
    monkeypatch.delenv("NPU_PROFILER_DECODE_WORKERS", raising=False)
    monkeypatch.setattr(trace_ranges, "PARALLEL_MIN_BYTES", 1)  # "large"
    monkeypatch.setattr(trace_ranges, "busy_cores", lambda cpus, *a, **k: float(cpus))
    monkeypatch.setattr(trace_ranges, "_cpu_count", lambda: 2)
    samples = iter([0.0, 1.0, 1.0])  # busy, then a core idle after the 2nd and 3rd pieces

    def free(a, b):
        return next(samples, 1.0)

    monkeypatch.setattr(trace_ranges, "_free_cores", free)
    assert trace_ranges.decode_plan(os.path.getsize(path)) == (1, True)
    grown = _read(path, None)
    assert grown.decode_ranges == 2
    _assert_same(one, grown)


def test_pieces_are_whole_chunks_that_cover_the_event_array(tmp_path):
    from tb_plugin.readers import trace_chunks, trace_ranges

    path = str(tmp_path / "trace_view.json")
    _every_kind_trace(path)
    mm = trace_chunks._map(path)
    try:
        start, end, _, err = trace_chunks._locate_events(mm, trace_chunks._Utf8Repairs())
        assert err is None
        pieces = trace_ranges.split_pieces(mm, start + 1, end, SMALL_CHUNK, 3 * SMALL_CHUNK)
        assert len(pieces) > 4 and pieces[0][0] == start + 1 and pieces[-1][1] == end
        for (_, hi), (lo, _) in zip(pieces, pieces[1:]):
            assert mm[hi - 1:hi] == b"}" and mm[lo:lo + 1] == b"{"
            assert mm[hi:lo].strip() == b","  # only the separator between two pieces
        # Each piece but the last holds at least the piece size.
        assert all(hi - lo >= 3 * SMALL_CHUNK for lo, hi in pieces[:-1])
    finally:
        mm.close()


def test_boundaries_inside_strings_give_the_one_process_tables(tmp_path):
    """Names full of '}, {': the byte search cuts pieces inside strings; those pieces do
    not decode, or do not start where the chunks end, and the rest is read in one
    process: the tables are the one-process ones."""
    path = str(tmp_path / "trace_view.json")
    events = []
    for i in range(3000):
        name = "a}, {b" + "c" * 200 + f"d}}, {{e{i % 50}"
        events.append({"ph": "X", "name": name, "cat": "cpu_op", "pid": 1,
                       "tid": 1, "ts": 1000 + i * 10, "dur": 5})
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[" + ", ".join(json.dumps(e) for e in events) + "]")
    one = _read(path, 1)
    assert len(one.slices) == 3000 and not one.errors
    many = _read(path, 3)
    assert many.decode_ranges < 3  # a piece starts inside a name: read on in one process
    _assert_same(one, many)


def test_many_false_boundaries_in_strings_and_args_lose_no_event(tmp_path):
    """Where `}, {` follows a chunk's target offset many times inside names (with escaped
    quotes and backslashes before them) and inside the args' arrays of objects, before
    the next real event boundary, every event is still read, as json.load reads them
    (the byte search alone gave up after four false cuts and dropped the rest)."""
    path = str(tmp_path / "trace_view.json")
    events = []
    for i in range(2000):
        name = ("x}, {" * 6) + '\\"}, {q' + "\\\\" + f'}}, {{n{i % 40}"'[:-1]
        events.append({"ph": "X", "name": name, "cat": "cpu_op", "pid": 1, "tid": 1,
                       "ts": 1000 + i * 10, "dur": 5,
                       "args": {"list": [{"a": k} for k in range(8)], "s": "}, {" * 5}})
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('{"traceEvents": [' + ", ".join(json.dumps(e) for e in events) + "]}")
    with open(path, encoding="utf-8") as fh:
        expected = [e["name"] for e in json.load(fh)["traceEvents"]]
    for workers in (1, 3):
        got = _read(path, workers)
        assert not got.errors, got.errors
        assert len(got.slices) == len(expected)
        names = got.slices.sort_values("start_ns", kind="stable")["name"].astype(str)
        assert names.tolist() == expected
