"""readers/chrome_trace.py: Chrome traces that are not kineto-shaped, values from json."""
from __future__ import annotations

import json
import os
from decimal import Decimal

import pytest

from tb_plugin.readers import read
from tb_plugin.span_source import SpanSource
from tests.tb_server import FIXTURES

ANY = os.path.join(FIXTURES, "any_name")


def _span(path, producer="chrome_trace"):
    return SpanSource(logdir=FIXTURES, run="r", worker="w", span="default", producer=producer,
                      root=path, files=(path,))


def _events(path):
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def test_torch_npu_export_chrome_trace():
    path = os.path.join(ANY, "chrome_trace_14.json")
    events = _events(path)
    prof = read(_span(path))
    assert prof.errors == [] and prof.meta.producer == "chrome_trace"
    assert prof.meta.device == "npu"
    x = [e for e in events if e.get("ph") == "X"]
    assert len(prof.table("slices")) == len(x)
    # Operators as torch-tb-profiler counts them (docs/exactness.md): no ProfilerStep,
    # DataLoader or Optimizer ranges (the trace holds no same-name nested calls).
    ranges = ("ProfilerStep#", "enumerate(DataLoader)", "Optimizer.")
    ops = [e for e in x if e.get("cat") == "cpu_op" and not e["name"].startswith(ranges)]
    got = prof.table("operators")
    assert len(got) == len(ops)
    assert int(got["host_total_ns"].sum()) == round(sum(e["dur"] for e in ops) * 1000)
    # Input Dims text in the one form the views use: `;\r\n` between tensors -> `;`.
    first = next(e for e in ops if "Input Dims" in e["args"])
    row = got[got["start_ns"] == int(Decimal(str(first["ts"])) * 1000)].iloc[0]
    assert row["input_shapes"] == first["args"]["Input Dims"].replace(";\r\n", ";").rstrip(";")
    steps = sorted((int(e["name"].split("#")[1]), e) for e in x
                   if e["name"].startswith("ProfilerStep#"))
    st = prof.table("steps")
    assert st["step"].tolist() == [n for n, _ in steps]
    assert st["total_ns"].tolist() == [round(e["dur"] * 1000) for _, e in steps]
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "process_name"}
    kinds = dict(zip(prof.table("tracks")["process"].astype(str),
                     prof.table("tracks")["kind"].astype(str)))
    assert kinds["Ascend Hardware"] == "device" and kinds["CANN"] == "cann"
    assert kinds["Python"] == "host" and kinds["Overlap Analysis"] == "overlap"
    assert set(kinds) <= set(procs.values())


def test_msprof_timeline_without_steps():
    path = os.path.join(ANY, "msprof_loose", "step_trace_0_2_1.json")
    prof = read(_span(path))
    assert prof.errors == []
    assert len(prof.table("slices")) == sum(1 for e in _events(path) if e.get("ph") == "X")
    assert len(prof.table("steps")) == 0 and len(prof.table("operators")) == 0
    assert prof.meta.device == "cpu"


def test_cut_off_trace_keeps_what_precedes(tmp_path):
    p = tmp_path / "t.json"
    p.write_bytes(b'[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2},\n'
                  b'{"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5, "du')
    span = SpanSource(logdir=str(tmp_path), run="r", worker="w", span="default",
                      producer="chrome_trace", root=str(p), files=(str(p),))
    prof = read(span)
    assert [e.path for e in prof.errors] == ["t.json"]
    assert prof.table("slices")["name"].astype(str).tolist() == ["a"]


@pytest.mark.parametrize("values, want", [
    (["b", "a", "c"], ["b", "a", "c"]),  # all text: as interned
    (["b", 1, "1", None, 2.0, "2"], ["b", "1", "", "2"]),  # 1 and "1" are one name
])
def test_interned_names_finalize_to_distinct_texts(values, want):
    import numpy as np

    from tb_plugin.readers.trace_builder import _Interner
    from tb_plugin.readers.trace_values import _text

    interner = _Interner()
    codes = interner.codes(values)
    names, remap = interner.finalize(_text, text_is_itself=True)
    assert names == want
    assert [names[remap[c]] for c in codes] == [_text(v) for v in values]
    slow = _Interner()
    slow.codes(values)
    slow_names, slow_remap = slow.finalize(_text)
    assert slow_names == names and np.array_equal(slow_remap, remap)
