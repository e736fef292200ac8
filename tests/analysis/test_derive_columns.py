"""The load-time derivations read one column of a big table before they load it as a frame
(`Profile.arrow_column`), and still derive what they derived from the frames."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from tb_plugin.analysis import derive, step_phases
from tb_plugin.model import KEEP_ROWS, Profile, ProfileMeta
from tb_plugin.table_files import spilling


def _kernels(n: int, steps) -> pd.DataFrame:
    return pd.DataFrame({
        "name": pd.Categorical([f"k{i % 7}" for i in range(n)]),
        "start_ns": np.arange(n, dtype=np.int64) * 1000 + 1000,
        "dur_ns": np.full(n, 500, np.int64),
        "step": pd.array(steps, dtype="Int64"),
    })


@pytest.mark.parametrize("rows", [50, KEEP_ROWS + 10])  # kept in memory / on disk only
def test_arrow_column_is_the_tables_column_whether_loaded_or_not(tmp_path, rows):
    steps = [None if i % 3 else i // 3 for i in range(rows)]
    with spilling(str(tmp_path)):
        prof = Profile(meta=ProfileMeta(device="npu"))
        prof.set("kernels", _kernels(rows, steps), keep_extra=True)
    on_disk = rows > KEEP_ROWS
    assert ("kernels" not in prof.tables) == on_disk
    step = prof.arrow_column("kernels", "step")
    assert ("kernels" not in prof.tables) == on_disk  # (no frame made for one column)
    assert step.to_pylist() == steps
    assert step.null_count == sum(s is None for s in steps)
    names = prof.arrow_column("kernels", "name")
    assert [str(v) for v in names.to_pylist()] == [f"k{i % 7}" for i in range(rows)]


@pytest.mark.parametrize("names, found", [
    (["a", "Iteration 3", "FP_BP Time 3"], True),
    (["Iteration Refresh 3", "FP_BP Time 3"], False),
    (["Iteration 3x", "an Iteration 3", "ProfilerStep#3"], False),
    ([], False),
])
def test_step_trace_names_are_found_in_the_dictionary(names, found):
    col = pa.chunked_array([pa.array(names, pa.string()).dictionary_encode()])
    assert step_phases.may_be_in_trace(col) is found
    plain = pa.chunked_array([pa.array(names, pa.string())])
    assert step_phases.may_be_in_trace(plain) is found


def _profile_with_steps(tmp_path, kernel_steps):
    n = KEEP_ROWS + 10  # on disk: the column is read alone
    with spilling(str(tmp_path)):
        prof = Profile(meta=ProfileMeta(device="npu"))
        prof.set("steps", pd.DataFrame({
            "step": np.array([1, 2], np.int64),
            "start_ns": np.array([0, n * 500], np.int64),
            "end_ns": np.array([n * 500, n * 2000], np.int64),
            "total_ns": np.array([n * 500, n * 1500], np.int64)}), keep_extra=True)
        prof.set("kernels", _kernels(n, kernel_steps(n)), keep_extra=True)
        derive.complete(prof)
    return prof, n


def test_kernels_without_steps_get_the_steps_windows(tmp_path):
    prof, n = _profile_with_steps(tmp_path, lambda n: [None] * n)
    got = prof.table("kernels")["step"].to_numpy(dtype=np.int64)
    start = np.arange(n, dtype=np.int64) * 1000 + 1000
    want = np.where(start < n * 500, 1, 2)  # computed here from the windows above
    np.testing.assert_array_equal(got, want)


def test_kernels_with_known_steps_are_left_as_they_are(tmp_path):
    prof, n = _profile_with_steps(tmp_path, lambda n: [7] * (n - 1) + [None])
    got = prof.table("kernels")["step"]
    assert got.iloc[:-1].eq(7).all() and pd.isna(got.iloc[-1])
