"""CSV cells `NaN`, `inf`, `-inf`, `N/A`, `-` and empty in numeric columns are skipped, never
summed; the not-finite ones are counted in one warning per file (a FileError naming the file).

The CSVs are the fixtures' own files with those tokens written into numeric columns by the
stdlib `csv` module; the expected totals are summed here with `Decimal` over the cells that
are finite numbers, independently of the readers.
"""
from __future__ import annotations

import csv
import math
import os
import shutil
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import numpy as np
import pandas as pd
import pytest

from tb_plugin import discovery, readers
from tb_plugin.analysis import derive, overview
from tb_plugin.readers.tolerant import read_csv

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
TOKENS = ["NaN", "inf", "-inf", "N/A", "-", ""]
NOT_FINITE = {"NaN", "inf", "-inf"}


def _finite(text: str) -> Decimal | None:
    try:
        d = Decimal(text.strip().strip("\t"))
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


def _ns(d: Decimal) -> int:
    return int((d * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def _plant(path: str, column: str, every: int = 3) -> tuple[list[str], int]:
    """Write the tokens into every `every`-th cell of `column`; returns (the column's cells
    after the change, how many not-finite tokens were written)."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    i = header.index(column)
    planted = 0
    for r, row in enumerate(body):
        if r % every == 0:
            tok = TOKENS[(r // every) % len(TOKENS)]
            row[i] = tok
            planted += tok in NOT_FINITE
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([header] + body)
    return [row[i] for row in body], planted


def _span(logdir: str, producer: str):
    runs, _ = discovery.discover(logdir)
    spans = sorted((s for r in runs.values() for s in r.spans() if s.producer == producer),
                   key=lambda s: s.root)
    return spans[0]


def test_torch_npu_kernel_and_step_totals_skip_non_numbers(tmp_path):
    src = os.path.join(FIXTURES, "torch_npu_level1")
    logdir = str(tmp_path / "run")
    shutil.copytree(src, logdir)
    span = _span(logdir, "torch_npu")
    out = os.path.join(span.root, "ASCEND_PROFILER_OUTPUT")
    durations, planted_k = _plant(os.path.join(out, "kernel_details.csv"), "Duration(us)")
    computing, planted_s = _plant(os.path.join(out, "step_trace_time.csv"), "Computing", 2)
    reserved, planted_m = _plant(os.path.join(out, "memory_record.csv"), "Total Reserved(MB)")
    assert planted_k and planted_s and planted_m

    profile = readers.read(span, None, stage="all")
    derive.complete(profile)

    expected_kernel_ns = sum(_ns(d) for d in map(_finite, durations) if d is not None)
    kernels = profile.table("kernels")
    assert len(kernels) == len(durations)  # the row stays, only the cell is skipped
    assert int(kernels["dur_ns"].sum()) == expected_kernel_ns
    assert overview.summary(profile)["kernel_total_us"] == pytest.approx(
        expected_kernel_ns / 1000.0)

    expected_computing_ns = sum(_ns(d) for d in map(_finite, computing) if d is not None)
    steps = profile.table("steps")
    assert int(steps["bd_computing"].sum()) == expected_computing_ns
    assert all(math.isfinite(float(v)) for v in steps["total_ns"])

    # Memory in MB is a float column: a skipped cell is missing (NaN), never inf, and the
    # total is the finite cells' total scaled by the dialect's MB unit.
    mem = profile.table("memory_records")["reserved_mb"].to_numpy(dtype=np.float64)
    finite = [_finite(v) for v in reserved]
    assert not np.isinf(mem).any()
    assert np.isnan(mem).sum() == sum(d is None for d in finite)
    kept = [float(d) for d in finite if d is not None]
    scale = np.nansum(mem) / sum(kept)
    assert np.allclose(mem[~np.isnan(mem)], np.asarray(kept) * scale)

    by_file = {}
    for e in profile.errors:
        by_file.setdefault(os.path.basename(e.path), []).append(e)
    assert set(by_file) == {"kernel_details.csv", "step_trace_time.csv",
                            "memory_record.csv"}, profile.errors
    (k_err,), (s_err,) = by_file["kernel_details.csv"], by_file["step_trace_time.csv"]
    assert k_err.path == os.path.relpath(os.path.join(out, "kernel_details.csv"), logdir)
    assert k_err.message.startswith(f"{planted_k} cell(s)") and f"Duration(us) {planted_k}" \
        in k_err.message
    assert s_err.message.startswith(f"{planted_s} cell(s)") and f"Computing {planted_s}" \
        in s_err.message


def test_msprof_op_summary_durations_skip_non_numbers(tmp_path):
    logdir = str(tmp_path / "run")
    shutil.copytree(os.path.join(FIXTURES, "msprof_paddle"), logdir)
    span = _span(logdir, "msprof")
    out = os.path.join(span.root, "mindstudio_profiler_output")
    files = sorted(f for f in os.listdir(out) if f.startswith("op_summary"))
    expected_ns, planted, cells = 0, {}, 0
    for f in files:
        durs, n = _plant(os.path.join(out, f), "Task Duration(us)", 4)
        planted[f] = n
        cells += len(durs)
        expected_ns += sum(_ns(d) for d in map(_finite, durs) if d is not None)
    profile = readers.read(span, None, stage="all")
    kernels = profile.table("kernels")
    assert int(kernels["dur_ns"].sum()) == expected_ns
    warned = {os.path.basename(e.path): e.message for e in profile.errors}
    for f, n in planted.items():
        if n:
            assert warned[f].startswith(f"{n} cell(s)"), (f, warned)
            assert f"Task Duration(us) {n}" in warned[f]


def test_read_csv_numeric_and_text_columns(tmp_path):
    """Only numeric columns change; a text column that holds `inf` or `nan` as a name is
    left alone; a column of nothing but tokens is not numeric."""
    path = tmp_path / "t.csv"
    rows = [["Name", "Value(us)", "Ratio", "Empty"],
            ["inf", "1.5", "0.25", ""],
            ["nan", "inf", "N/A", ""],
            ["op", "-inf", "-", "N/A"],
            ["x", "NaN", "1e400", "-"],
            ["y", "", "0.5", ""],
            ["z", "2.25\t", "0.125", ""]]
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    df, warnings = read_csv(str(path), "t.csv")
    assert df["Name"].tolist() == ["inf", "nan", "op", "x", "y", "z"]
    values = [None if pd.isna(v) else v for v in df["Value(us)"].tolist()]
    assert values == ["1.5", None, None, None, None, "2.25"]
    ratio = [None if pd.isna(v) else v for v in df["Ratio"].tolist()]
    assert ratio == ["0.25", None, None, None, "0.5", "0.125"]
    assert df["Empty"].isna().all()
    # Value(us): inf, -inf, NaN; Ratio: 1e400 (overflows to inf). N/A, -, empty: not counted.
    assert warnings == [warnings[0]] and warnings[0].startswith("t.csv: 4 cell(s)")
    assert "Value(us) 3" in warnings[0] and "Ratio 1" in warnings[0]
    total = np.nansum([float(v) for v in values if v is not None])
    assert total == pytest.approx(3.75)

