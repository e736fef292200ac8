"""Step windows: the (step, start_ns, end_ns) of a profile's steps, as its producer stated
them (the `step_windows` table) or from the `ProfilerStep#N` slices of its trace."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
from .lazy import pd

if TYPE_CHECKING:
    from .model import Profile

PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_INT64_MAX = int(np.iinfo(np.int64).max)


def _no_windows() -> pd.DataFrame:
    return pd.DataFrame({"step": np.zeros(0, np.int64), "start_ns": np.zeros(0, np.int64),
                         "end_ns": np.zeros(0, np.int64)})


def profiler_step_windows(slices: pd.DataFrame) -> pd.DataFrame:
    """(step, start_ns, end_ns) of the host `ProfilerStep#N` slices, sorted by step. The
    same step may appear on several threads: its window is the widest (min start, max end)."""
    if len(slices) == 0:
        return _no_windows()
    names = slices["name"]
    cats = names.cat.categories if hasattr(names, "cat") else pd.Index(names.unique())
    try:  # on the distinct names: a big trace has hundreds of thousands of them
        is_step = cats.astype("string").str.startswith("ProfilerStep#").fillna(False)
        step_names = cats[np.asarray(is_step, dtype=bool)].tolist()
    except (TypeError, ValueError, AttributeError):
        step_names = [c for c in cats if isinstance(c, str) and c.startswith("ProfilerStep#")]
    if not step_names:
        return _no_windows()
    is_row = np.asarray(names.isin(step_names), dtype=bool)
    # The step number of each distinct step name, then per row (numpy from here on: this
    # runs several times per profile, and pandas' groupby costs ~10 ms on any input).
    number = {n: int(m.group(1)) for n in step_names
              if isinstance(n, str) and (m := PROFILER_STEP.match(n))}
    number = {n: v for n, v in number.items() if v <= _INT64_MAX}
    row_steps = [number.get(n) for n in names[is_row].astype(str)]
    ok = np.array([v is not None for v in row_steps], dtype=bool)
    if not ok.any():
        return _no_windows()
    start = slices["start_ns"].to_numpy()[is_row][ok]
    end = start + slices["dur_ns"].to_numpy()[is_row][ok]
    steps = np.array([v for v in row_steps if v is not None], dtype=np.int64)
    order = np.argsort(steps, kind="stable")
    steps = steps[order]
    first = np.flatnonzero(np.concatenate([[True], steps[1:] != steps[:-1]]))
    return pd.DataFrame({"step": steps[first],
                         "start_ns": np.minimum.reduceat(start[order], first),
                         "end_ns": np.maximum.reduceat(end[order], first)})


def step_windows(profile: "Profile") -> pd.DataFrame:
    """The profile's step windows: those its producer stated (`step_windows` table), else
    the `ProfilerStep#N` slices of its trace; (step, start_ns, end_ns) sorted by step."""
    if profile.has("step_windows"):
        df = profile.table("step_windows")[["step", "start_ns", "end_ns"]]
        return df.sort_values("step").reset_index(drop=True)
    if not profile.has("slices"):  # (the views stage of a span whose trace is deferred)
        return _no_windows()
    if "slices" in profile.tables or not profile.directory:
        return profiler_step_windows(profile.table("slices"))
    return profiler_step_windows(_step_slice_rows(profile.arrow_table("slices")))


def _step_slice_rows(slices) -> pd.DataFrame:
    """The rows of an Arrow slices table whose name starts with "ProfilerStep#", as a frame:
    what `profiler_step_windows` reads, without the frame of every slice (1 s of pandas
    conversion for a 1 GB trace, in the timeline stage that needs only its columns)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def is_step(text):
        return pc.fill_null(pc.starts_with(text.cast(pa.large_string()), "ProfilerStep#"),
                            False)

    names = slices["name"]
    if names.num_chunks and pa.types.is_dictionary(names.type):
        # Tested once per distinct name, then looked up per row.
        mask = pa.chunked_array([pc.fill_null(pc.take(is_step(c.dictionary), c.indices),
                                              False) for c in names.chunks], pa.bool_())
    else:
        mask = is_step(names)
    rows = slices.select(["name", "start_ns", "dur_ns"]).filter(mask)
    # The names as text: a categorical would carry (and validate) every name of the trace.
    return pd.DataFrame({"name": pc.cast(rows["name"], pa.large_string()).to_pandas(),
                         "start_ns": rows["start_ns"].to_numpy(),
                         "dur_ns": rows["dur_ns"].to_numpy()})
