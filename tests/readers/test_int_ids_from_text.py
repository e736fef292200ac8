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
