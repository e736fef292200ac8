"""Integer ids read from text cells (AI CPU stream ids, SQLite step names): damage such as
1e400, 30 digits or words is no id, and the table is still made. Before, these columns were
cast with pandas' `astype("Int64")`, which raises on inf, on non-integers and on numbers past
int64 and so failed the whole table."""
import pandas as pd
import pyarrow as pa

from tb_plugin.readers import sqlite_export, statistics


def test_ai_cpu_stream_ids():
    cells = ["7", "1e400", "9" * 30, "x", "", " 8 "]
    t = pa.table({"Node": ["op"] * len(cells), "Timestamp(us)": ["1.0"] * len(cells),
                  "Compute_time(us)": ["2.0"] * len(cells), "Stream ID": cells})
    k = statistics.aicpu_kernels(t)
    assert k["stream_id"].tolist() == [7, pd.NA, pd.NA, pd.NA, pd.NA, 8]
    assert k["dur_ns"].tolist() == [2000] * len(cells)


def test_sqlite_step_names():
    got = sqlite_export._step_of(pd.Series(["step3", "4", "step1e400", "step" + "9" * 30,
                                            "stepx", None]))
    assert got.tolist() == [3, 4, pd.NA, pd.NA, pd.NA, pd.NA]


def test_float_to_int64_gives_no_value_for_what_int64_cannot_hold():
    import numpy as np

    from tb_plugin.readers.us_text import float_to_int64

    got = float_to_int64([np.nan, np.inf, -np.inf, 1e30, -1e30, 2.4, 2.6, -3.0, 9.2e18])
    assert got.tolist() == [0, 0, 0, 0, 0, 2, 3, -3, 9200000000000000000]
    assert float_to_int64([1.5, 1e300], 1e6).tolist() == [1_500_000, 0]  # (ms -> ns)


def test_counts_and_ms_past_int64_are_zero_not_int64s_minimum():
    """op_statistic / api_statistic counts and AI CPU ms of 1e30 were cast by numpy to
    int64's minimum without a word (the fuzz engine checks for that value now)."""
    api = statistics.api_statistic(pa.table({
        "API Name": ["a", "b", "c"], "Time(us)": ["1", "2", "3"],
        "Count": ["5", "1e30", "inf"]}))
    assert api.column("calls").to_pylist() == [5, 0, 0]
    k = statistics.aicpu_kernels(pa.table({
        "Node": ["x", "y"], "Timestamp(us)": ["1", "2"], "Compute_time(ms)": ["0.5", "1e300"]}))
    assert k["dur_ns"].tolist() == [500_000, 0]


def test_a_profiler_step_number_past_int64_is_no_step():
    import numpy as np

    from tb_plugin.analysis import gpu_breakdown

    names = np.array(["ProfilerStep#3", "ProfilerStep#" + "9" * 30], dtype=object)
    cats = np.array(["cpu_op", "cpu_op"], dtype=object)
    got = gpu_breakdown._steps(names, cats, np.array([0, 10]), np.array([5, 20]))
    assert got == [(0, 5, 3)]
