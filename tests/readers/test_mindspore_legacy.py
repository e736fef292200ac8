"""MindSpore <=2.3 (MindInsight era) `profiler*` dir: discovery + reader on the real sample."""
from __future__ import annotations

import csv
import os
import shutil

import pandas as pd
import pytest

from tb_plugin.discovery import discover
from tb_plugin.readers import mindspore_legacy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SAMPLE = os.path.join(ROOT, "fixtures", "real", "mindspore_legacy_run1")


def _ms_ns(text: str) -> int:
    """ms decimal text -> ns, exactly (independent of the reader's vectorized parser)."""
    text = text.strip()
    i, _, f = text.partition(".")
    f = (f + "000000")[:6]
    return int(i or "0") * 1_000_000 + int(f)


@pytest.fixture()
def logdir(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "mindspore_legacy_run1")
    for dirpath, _, files in os.walk(tmp_path):  # the sample may be read-only
        os.chmod(dirpath, 0o755)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o644)
    return str(tmp_path)


def _span(logdir):
    runs, _ = discover(logdir)
    assert set(runs) == {"mindspore_legacy_run1"}
    run = runs["mindspore_legacy_run1"]
    assert set(run.workers) == {"device1"}
    w = run.workers["device1"]
    assert w.producer == "mindspore_legacy" and w.rank is None
    assert set(w.spans) == {"default"}
    span = w.spans["default"]
    assert span.device_id == 1
    assert os.path.basename(span.root) == "profiler"
    names = {os.path.basename(f) for f in span.files}
    assert {"step_trace_raw_1_detail_time.csv", "output_timeline_data_1.txt",
            "timeline_display_1.json"} <= names
    return span


def test_real_sample(logdir):
    span = _span(logdir)
    prof = os.path.join(logdir, "mindspore_legacy_run1", "profiler")
    p = mindspore_legacy.read(span, None)
    assert p.errors == []
    assert p.meta["producer"] == "mindspore_legacy" and p.meta["device"] == "npu"
    assert p.meta["device_id"] == 1
    assert p.meta["step_categories"] == ["iteration_interval", "fp_and_bp", "tail"]

    with open(os.path.join(prof, "step_trace_raw_1_detail_time.csv"), newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["step_num"] not in ("-", "0")]
    steps = p.table("steps")
    assert len(steps) == len(rows) == 322
    first, ref = steps.iloc[0], rows[0]
    assert int(first["step"]) == int(ref["step_num"])
    for col, key in (("start_ns", "start_point"), ("end_ns", "end_point"),
                     ("total_ns", "total"), ("bd_iteration_interval", "iteration_interval"),
                     ("bd_fp_and_bp", "fp_and_bp"), ("bd_tail", "tail")):
        assert int(first[col]) == int(ref[key]) * 10, col

    with open(os.path.join(prof, "output_timeline_data_1.txt"), newline="") as fh:
        rd = csv.reader(fh)
        next(rd)
        krows = [r for r in rd if r]
    k = p.table("kernels")
    assert len(k) == len(krows)
    assert int(k["dur_ns"].sum()) == sum(_ms_ns(r[3]) for r in krows)
    assert int(k["start_ns"].iloc[0]) == _ms_ns(krows[0][2])
    assert str(k["name"].iloc[1]) == krows[1][0].rsplit("/", 1)[-1] == "Mul-op29"
    assert str(k["type"].iloc[1]) == "Mul"
    assert k["step"].isna().all()

    assert p.has("tracks") and p.has("slices")
    t = p.table("tracks")
    assert set(t["kind"]) == {"device"}


def test_empty_step_trace_is_a_file_error(logdir):
    prof = os.path.join(logdir, "mindspore_legacy_run1", "profiler")
    open(os.path.join(prof, "step_trace_raw_1_detail_time.csv"), "w").close()
    span = _span(logdir)
    p = mindspore_legacy.read(span, None)
    assert [e.path for e in p.errors] == [
        os.path.join("mindspore_legacy_run1", "profiler", "step_trace_raw_1_detail_time.csv")]
    assert "empty" in p.errors[0].message
    assert not p.has("steps")
    assert p.has("kernels") and len(p.table("kernels")) == 2817


def test_ai_core_kernels_by_type(logdir):
    """Kernel types listed in the AI Core type file are AI_CORE even when the per-op detail
    file numbers ops differently from the timeline."""
    span = _span(logdir)
    prof = mindspore_legacy.read(span, None)
    with open(os.path.join(span.root, "aicore_intermediate_1_type.csv"), newline="") as fh:
        core_types = {row["kernel_type"] for row in csv.DictReader(fh)}
    expected = 0
    with open(os.path.join(span.root, "output_timeline_data_1.txt"), newline="") as fh:
        for row in csv.reader(fh, skipinitialspace=True):
            if row and row[0] != "op_name":
                short = row[0].rsplit("/", 1)[-1]
                if short.rsplit("-op", 1)[0] in core_types:
                    expected += 1
    kernels = prof.table("kernels")
    assert expected > 0
    assert int((kernels["core_type"].astype(str) == "AI_CORE").sum()) == expected


def test_stream_ids_that_are_no_integer_are_none(logdir):
    """A stream id of 1e400 or 30 digits in output_timeline_data (damage) is none (30 digits
    used to become int64's minimum); 3.5 rounds, as every integer column read from text does
    (`us_text.to_int64`). The rows stay."""
    span = _span(logdir)
    path = os.path.join(span.root, "output_timeline_data_1.txt")
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh, skipinitialspace=True))
    short = lambda row: row[0].rsplit("/", 1)[-1]  # noqa: E731  (the kernel's name)
    names = sorted({short(r) for r in rows[1:]})
    bad = dict(zip(names[:3], ("1e400", "3.5", "9" * 30)))
    want = {}
    for r in rows[1:]:
        if short(r) in bad:
            r[1] = bad[short(r)]
        else:
            want.setdefault(short(r), set()).add(int(r[1]))
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    p = mindspore_legacy.read(span, None)
    # (1e400 is reported, as every not-finite number cell of a CSV is; nothing else)
    assert [e.message for e in p.errors if "not finite" not in e.message] == []
    k = p.table("kernels")
    assert len(k) == len(rows) - 1
    for name, stream in zip(k["name"].astype(str), k["stream_id"]):
        if name not in bad:
            assert stream in want[name], name
        elif bad[name] == "3.5":
            assert stream == 4, name
        else:
            assert stream is pd.NA, name
