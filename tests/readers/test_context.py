"""The shared reader shape: guarded steps over a ReadContext, the trace step, header tables."""
import json
import os

import numpy as np
import pandas as pd
import pytest

from tb_plugin.model import Profile, ProfileMeta
from tb_plugin.readers import ARGS_FILE
from tb_plugin.readers import columns as C
from tb_plugin.readers.context import ReadContext, read_trace, run_steps
from tb_plugin.span_source import SpanSource


def _ctx(tmp_path, work_dir=None):
    root = tmp_path / "span"
    root.mkdir(exist_ok=True)
    span = SpanSource(logdir=str(tmp_path), run="run", worker="w", span="1",
                      producer="torch_npu", root=str(root), files=())
    return ReadContext(span, work_dir, Profile(meta=ProfileMeta(producer="torch_npu")))


def test_failing_step_names_its_file_and_later_steps_run(tmp_path):
    ctx = _ctx(tmp_path)
    (tmp_path / "span" / "a.csv").write_text("Name,Value\nx,1\n")
    ran = []

    def _read_broken(c):
        c.csv("a.csv")
        raise ValueError("boom")

    def _read_after(c):
        ran.append(True)
        c.profile.set("steps", pd.DataFrame({"step": [1], "total_ns": [5]}))

    prof = run_steps(ctx, [_read_broken, _read_after])
    assert ran == [True] and prof.has("steps")
    assert len(prof.errors) == 1
    err = prof.errors[0]
    assert err.path == os.path.join("span", "a.csv")
    assert err.message == "broken: unexpected error while reading: ValueError: boom"


def test_failing_step_without_a_file_names_the_span_folder(tmp_path):
    ctx = _ctx(tmp_path)

    def _finish(c):
        raise KeyError("x")

    prof = run_steps(ctx, [_finish])
    assert [(e.path, e.message) for e in prof.errors] == [
        ("span", "finish: unexpected error while reading: KeyError: 'x'")]


def test_unusable_files_are_errors_not_exceptions(tmp_path):
    ctx = _ctx(tmp_path)
    (tmp_path / "span" / "empty.csv").write_bytes(b"")
    (tmp_path / "span" / "list.json").write_text("[1, 2]")
    (tmp_path / "span" / "bad.json").write_text('{"a": ')
    assert ctx.csv("empty.csv") is None
    assert ctx.csv("absent.csv") is None
    assert ctx.json(str(tmp_path / "span" / "list.json")) is None
    assert ctx.json(str(tmp_path / "span" / "list.json"), object_required=False) is None
    assert ctx.json(str(tmp_path / "span" / "bad.json")) is None
    got = [(e.path, e.message.split(":")[0]) for e in ctx.profile.errors]
    assert got == [(os.path.join("span", "empty.csv"), "file is empty"),
                   (os.path.join("span", "list.json"), "expected a JSON object"),
                   (os.path.join("span", "bad.json"), "invalid JSON")]


def _trace(path, events):
    with open(path, "w") as fh:
        json.dump({"traceEvents": events}, fh)


def test_read_trace_writes_the_args_side_file(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    ctx = _ctx(tmp_path, str(work))
    path = str(tmp_path / "span" / "t.json")
    _trace(path, [{"ph": "X", "pid": 1, "tid": 2, "ts": 10, "dur": 5, "name": "a",
                   "args": {"k": 1}},
                  {"ph": "X", "pid": 1, "tid": 2, "ts": 20, "dur": 1, "name": "b"}])
    tt = read_trace(ctx, [path])
    assert tt is not None and len(tt.slices) == 2
    assert ctx.profile.meta.args_file == ARGS_FILE and (work / ARGS_FILE).exists()
    assert ctx.profile.meta.args_table is None and ctx.profile.errors == []


def test_read_trace_of_unreadable_files_records_each(tmp_path):
    ctx = _ctx(tmp_path)
    a, b = tmp_path / "span" / "a.json", tmp_path / "span" / "b.json"
    a.write_text("")
    b.write_text("not json at all")
    assert read_trace(ctx, [str(a), str(b)]) is None
    assert [e.path for e in ctx.profile.errors] == [os.path.join("span", "a.json"),
                                                    os.path.join("span", "b.json")]
    assert ctx.profile.meta.args_file is None


# ----------------------------------------------------------------------------- columns

def test_resolve_prefers_the_first_variant_then_ignores_case():
    df = pd.DataFrame(columns=["Task Start Time(us)", "op name", "Block Dim", "Block Num"])
    got = C.resolve(df, C.OP_SUMMARY)
    assert got == {"start_ns": "Task Start Time(us)", "name": "op name",
                   "block_dim": "Block Num"}


KINDS = {"us", "us_or_missing", "int", "float", "mb", "kb", "shapes", "stack", "text",
         "ticks", "ms"}


@pytest.mark.parametrize("name", [n for n in dir(C) if n.isupper()
                                  and isinstance(getattr(C, n), dict)])
def test_every_header_table_is_well_formed(name):
    table = getattr(C, name)
    assert table, name
    for key, col in table.items():
        assert key == col.name and col.headers and col.kind in KINDS, (name, col)
        assert all(h == h.strip() for h in col.headers)


def test_real_kernel_details_headers_resolve(tmp_path):
    """The torch_npu fixture's kernel_details.csv header: every variant lands where expected."""
    root = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "torch_npu_level1")
    found = []
    for d, _, files in os.walk(root):
        found += [os.path.join(d, f) for f in files if f == "kernel_details.csv"]
    assert found
    with open(found[0], encoding="utf-8-sig") as fh:
        header = [h.strip() for h in fh.readline().rstrip("\r\n").split(",")]
    got = C.resolve(pd.DataFrame(columns=header), C.KERNEL_DETAILS)
    for name in ("name", "type", "core_type", "start_ns", "dur_ns", "wait_ns"):
        assert got[name] in header and got[name] in C.KERNEL_DETAILS[name].headers
    assert np.all([got[n] not in C.KERNEL_TEXT_HEADERS for n in got])
