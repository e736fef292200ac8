"""Every kind of bad input, in one logdir, against a real `tensorboard`: each gives a
per-file error naming the file and the reason; the rest loads; the server keeps serving."""
from __future__ import annotations

import glob
import gzip
import os
import shutil

import pytest

from tests.tb_server import FIXTURES, TensorBoard, get_json

pytestmark = pytest.mark.e2e

LEVEL1_SPAN = sorted(glob.glob(os.path.join(FIXTURES, "torch_npu_level1", "*_ascend_pt")))[0]
KINETO = sorted(glob.glob(os.path.join(FIXTURES, "kineto_gpu", "*.pt.trace.json")))[0]


def _span(root, run, name):
    """A copy of a healthy torch_npu span under run/name; returns its output dir."""
    dst = os.path.join(root, run, name)
    shutil.copytree(LEVEL1_SPAN, dst)
    return os.path.join(dst, "ASCEND_PROFILER_OUTPUT")


@pytest.fixture(scope="module")
def bad_logdir(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("bad"))
    # 1. gzip trace cut in the middle.
    out = _span(root, "gz_truncated", "w_20240101000000001_ascend_pt")
    with open(os.path.join(out, "trace_view.json"), "rb") as fh:
        packed = gzip.compress(fh.read())
    os.remove(os.path.join(out, "trace_view.json"))
    with open(os.path.join(out, "trace_view.json.gz"), "wb") as fh:
        fh.write(packed[: len(packed) // 2])
    # 2. invalid JSON in the middle of the trace.
    out = _span(root, "json_invalid", "w_20240101000000002_ascend_pt")
    path = os.path.join(out, "trace_view.json")
    with open(path, "rb") as fh:
        data = fh.read()
    mid = len(data) // 2
    with open(path, "wb") as fh:
        fh.write(data[:mid] + b"}}}#garbage{{{" + data[mid:])
    # 3. N/A and NaN in every numeric cell of kernel_details.csv.
    out = _span(root, "na_everywhere", "w_20240101000000003_ascend_pt")
    path = os.path.join(out, "kernel_details.csv")
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    header = lines[0].split(",")
    body = [",".join("N/A" if i % 2 else "NaN" for i in range(len(header)))
            for _ in range(5)]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join([lines[0]] + body) + "\n")
    # 4. An unreadable file: a dangling symlink where a CSV should be.
    out = _span(root, "unreadable", "w_20240101000000004_ascend_pt")
    os.remove(os.path.join(out, "operator_details.csv"))
    os.symlink("/nonexistent/operator_details.csv", os.path.join(out, "operator_details.csv"))
    # 5. A huge file (sparse: no disk used) beyond the CSV size limit.
    out = _span(root, "huge", "w_20240101000000005_ascend_pt")
    with open(os.path.join(out, "op_statistic.csv"), "r+b") as fh:
        fh.truncate(9 << 30)
    with open(os.path.join(out, "kernel_details.csv"), "r+b") as fh:
        fh.truncate(9 << 30)
    # 6. An empty output dir.
    os.makedirs(os.path.join(root, "empty_output", "w_20240101000000006_ascend_pt",
                             "ASCEND_PROFILER_OUTPUT"))
    # 7. A kineto trace that is not JSON at all, next to a good one.
    os.makedirs(os.path.join(root, "kineto_mixed"))
    shutil.copy(KINETO, os.path.join(root, "kineto_mixed", "good.1.pt.trace.json"))
    with open(os.path.join(root, "kineto_mixed", "bad.2.pt.trace.json"), "wb") as fh:
        fh.write(b"\xff\xfe not json at all")
    # 8. A symlink loop.
    os.symlink(root, os.path.join(root, "loop"))
    return root


@pytest.fixture(scope="module")
def tb(bad_logdir):
    with TensorBoard(bad_logdir).loaded(240) as server:
        yield server


def run_errors(tb, name):
    runs = {r["name"]: r for r in get_json(f"{tb.api}/runs")["runs"]}
    return runs[name], {e["path"].split("/")[-1]: e["message"] for e in runs[name]["errors"]}



def test_truncated_gzip_trace(tb):
    run, errs = run_errors(tb, "gz_truncated")
    assert run["state"] == "ready"
    assert "truncated" in errs["trace_view.json.gz"]
    assert tb.get("kernels", run="gz_truncated")["total_rows"] > 0


def test_invalid_json_in_the_middle(tb):
    run, errs = run_errors(tb, "json_invalid")
    assert "trace_view.json" in errs
    assert run["state"] == "ready"
    assert tb.get("steps", run="json_invalid")["steps"]


def test_na_everywhere_does_not_break_the_kernel_view(tb):
    run, errs = run_errors(tb, "na_everywhere")
    assert run["state"] == "ready"
    data = tb.get("kernels", run="na_everywhere", group_by="name")
    assert all(r["total_us"] in (0, None) for r in data["rows"])


def test_unreadable_file(tb):
    run, errs = run_errors(tb, "unreadable")
    assert "operator_details.csv" in errs
    assert "cannot read" in errs["operator_details.csv"] or "No such file" in errs["operator_details.csv"]
    assert tb.get("kernels", run="unreadable")["total_rows"] > 0


def test_huge_files_are_refused_with_a_reason(tb):
    run, errs = run_errors(tb, "huge")
    assert "kernel_details.csv" in errs and "limit" in errs["kernel_details.csv"]
    assert tb.get("steps", run="huge")["steps"]


def test_empty_output_dir(tb):
    run, errs = run_errors(tb, "empty_output")
    assert run["state"] == "error"
    assert run["errors"], run


def test_non_json_kineto_file_next_to_a_good_one(tb):
    run, errs = run_errors(tb, "kineto_mixed")
    assert run["state"] == "ready"
    assert "bad.2.pt.trace.json" in errs
    info = tb.get("run", run="kineto_mixed")
    assert {w["name"] for w in info["workers"]} == {"good", "bad"}
    assert tb.get("kernels", run="kineto_mixed", worker="good")["total_rows"] > 0


def test_server_still_serves_after_everything(tb):
    names = {r["name"] for r in get_json(f"{tb.api}/runs")["runs"]}
    assert {"gz_truncated", "json_invalid", "na_everywhere", "unreadable", "huge",
            "empty_output", "kineto_mixed"} <= names
