"""The normalized columnar model every reader produces and every analysis consumes.

One `Profile` per (run, worker, span): its tables (declared with their units in
`schema.py`) and what is known of it (`ProfileMeta`). Views state plainly what a profile
lacks by checking `Profile.has(table)`.
"""
from __future__ import annotations

import dataclasses
import os
import threading
from typing import Any, Callable

import numpy as np

from .arrow_tables import conform_arrow
from .lazy import pd
from .schema import conform, empty_table
from .table_files import (arrow_to_frame, read_arrow, read_table, spill_directory,
                          table_path, write_arrow, write_table)


@dataclasses.dataclass
class FileError:
    """A problem with one input file; `path` is relative to the logdir."""

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


# --------------------------------------------------------------------------- profile meta

def _meta_field(doc: str, default: Any = None, *, stored: bool = True):
    """A `ProfileMeta` field with its documentation; `stored=False` keeps it out of the
    cache entry (and out of repr: it only lives in the process that made it)."""
    return dataclasses.field(default=default, repr=stored,
                             metadata={"doc": doc, "stored": stored})


@dataclasses.dataclass
class ProfileMeta:
    """What is known about a profile besides its tables. Every key is declared here; None
    means the producer did not say. Stored as the cache entry's meta.json (`to_json` /
    `from_json`).

    Fields are attributes (`meta.rank`); reading by name (`meta["rank"]`, `"rank" in meta`,
    `meta.get("rank")`) works for declared fields only, so a misspelt key fails instead of
    reading nothing.
    """

    # -- what produced it
    producer: str | None = _meta_field(
        "torch_npu | mindspore | msprof | kineto | mindspore_legacy.")
    device: str | None = _meta_field("npu | gpu | cpu: the kind of device profiled.")
    rank: int | None = _meta_field("Global rank of the worker (profiler_info, info.json, "
                                   "kineto distributedInfo).")
    device_id: int | None = _meta_field("The device this worker ran on (NPU / GPU index).")
    world_size: int | None = _meta_field("Number of ranks of the job.")
    distributed: dict | None = _meta_field(
        "The producer's distributed description as written: kineto `distributedInfo`, or "
        "torch_npu `{\"parallel_group_info\": ...}` from profiler_metadata.json.")
    profiler_level: str | None = _meta_field("torch_npu `_profiler_level` (Level0/1/2).")
    env_variables: dict | None = _meta_field(
        "Environment variables the producer recorded (torch_npu profiler_metadata.json "
        "`ENV_VARIABLES`), name -> value as text; read by the advisor's environment rule.")
    versions: dict | None = _meta_field(
        "Producer versions by name (torch_npu_version, cann_version, ms_version, schema, "
        "framework, ...), as text or numbers as written.")
    layout: str | None = _meta_field(
        "msprof export layout: mindstudio_profiler_output | device_summary | "
        "device_timeline_per_iteration.")
    device_properties: list | None = _meta_field(
        "kineto `deviceProperties`: one dict per GPU, as written.")
    base_time_ns: int | None = _meta_field(
        "kineto `baseTimeNanoseconds`, already added to every timestamp (epoch ns).")
    memory_totals: str | None = _meta_field(
        "\"running_sum_of_bytes\" when kineto memory totals are a running sum of `Bytes` "
        "(old traces without Total Allocated), relative to the trace start.")
    operator_durations: bool = _meta_field(
        "False when the operator file has no durations (MindSpore's 2-column "
        "operator_details.csv): operator times are then 0, not measured.", True)
    # -- device and counters
    ai_core_num: int | None = _meta_field(
        "AI Core count of the device (CANN info.json `DeviceInfo[].ai_core_num`); Block Num "
        "of AI_CORE / MIX_AIC tasks is checked against it.")
    aiv_num: int | None = _meta_field(
        "Vector core count of the device (info.json `DeviceInfo[].aiv_num`; absent or 0 on "
        "chips without vector cores); Block Num of AI_VECTOR_CORE / MIX_AIV tasks.")
    pmu_na_cells: dict | None = _meta_field(
        "PMU counter column (`pmu_*` of kernels) -> number of its cells that were not numbers "
        "(`N/A`, written for tasks too long for the counters); those cells are NaN.")
    # -- steps
    step_categories: list[str] | None = _meta_field(
        "Ordered names of the breakdown categories of `steps` (`bd_<name>` columns), from "
        "one of the declared breakdowns (NPU_STEP_CATEGORIES, ...).")
    steps_known: list[int] | None = _meta_field(
        "Step ids of the profile (steps table, else the step windows), for step filters.")
    flops: dict | None = _meta_field(
        "FLOPs of the run as the producer summed them (MindSpore flops_summary_{id}.json: "
        "FLOPs, FLOPS, FLOPS_Utilization, as written) plus `scopes`: the top-level scopes of "
        "flops_scope_{id}.json when present.")
    # -- trace
    args_file: str | None = _meta_field(
        "Name of the trace args side file in the cache entry (readers.ARGS_FILE).")
    args_table: Any = _meta_field(
        "The trace args as a pyarrow Table when read without a work dir (tests); never "
        "stored.", stored=False)
    trace_index: dict | None = _meta_field(
        "The timeline index's own meta (analysis.trace_index: version, origin_ns, "
        "start_ns, end_ns, levels, steps).")
    # -- loading
    trace_deferred: bool = _meta_field(
        "The first load stage left the trace for the second (readers.read stage views).",
        False)
    trace_ready: bool = _meta_field("The second load stage (timeline index) is done.", False)
    load_seconds: float | None = _meta_field("Wall time of the first load stage.")
    stored_results: dict | None = _meta_field(
        "Analysis results stored with the entry at load time (analysis/stored.py): name -> "
        "\"arrow\" (a table, stored-<name>.arrow) or \"json\" (stored-<name>.json).")
    trace_seconds: float | None = _meta_field("Wall time of the second load stage.")

    # -- access by name (declared fields only)

    def _check(self, key: str) -> None:
        if key not in _META_FIELDS:
            raise KeyError(f"{key!r} is not a ProfileMeta field")

    def __getitem__(self, key: str):
        self._check(key)
        value = getattr(self, key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value) -> None:
        self._check(key)
        setattr(self, key, value)

    def __contains__(self, key: object) -> bool:
        return key in _META_FIELDS and getattr(self, key) is not None

    def get(self, key: str, default=None):
        self._check(key)
        value = getattr(self, key)
        return default if value is None else value

    def pop(self, key: str, default=None):
        """Value of `key` (default if unset), which is reset to its declared default."""
        value = self.get(key, default)
        setattr(self, key, _META_DEFAULTS[key])
        return value

    def update(self, values: dict) -> None:
        for key, value in values.items():
            self[key] = value

    # -- cache entry

    def to_json(self) -> dict:
        """The stored fields that differ from their defaults, as JSON values."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not f.metadata["stored"] or value is _META_DEFAULTS[f.name]:
                continue
            out[f.name] = _json_value(value)
        return out

    @classmethod
    def from_json(cls, doc: dict) -> "ProfileMeta":
        """Inverse of `to_json`; keys no field declares (a newer writer) are ignored."""
        return cls(**{k: v for k, v in doc.items() if k in _META_FIELDS
                      and _META_FIELDS[k].metadata["stored"]})


_META_FIELDS = {f.name: f for f in dataclasses.fields(ProfileMeta)}
_META_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ProfileMeta)}


def _json_value(v: Any):
    """numpy scalars (a rank read from a table) as Python numbers, containers recursively."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    return v


# A table set with at most this many rows stays in memory after it is written: the steps
# and derivations after it read it without the read back (a few ms each, ~15 per span,
# which was a tenth of a small span's views stage); larger ones are dropped (memory).
KEEP_ROWS = 1 << 16


@dataclasses.dataclass
class Profile:
    """Everything known about one worker-span, in normalized tables.

    `meta` is a `ProfileMeta` (a plain dict of its field names is accepted and converted).

    With a `directory`, tables live on disk as Arrow files (`<table>.arrow`): `set` writes
    them, `table` memory-maps them on first use. That is how reader processes hand tables to
    TensorBoard's process (through the cache) and how they keep their memory low.
    """

    tables: dict[str, pd.DataFrame] = dataclasses.field(default_factory=dict)
    meta: ProfileMeta = dataclasses.field(default_factory=ProfileMeta)
    errors: list[FileError] = dataclasses.field(default_factory=list)
    directory: str | None = dataclasses.field(default_factory=spill_directory)
    rows: dict[str, int] = dataclasses.field(default_factory=dict)
    # Set by the cache for an entry of a shared cache location (cache_store.py): fetches one
    # of the entry's files (by name) into `directory` before it is first read.
    fetch: Callable[[str], None] | None = dataclasses.field(default=None, repr=False,
                                                            compare=False)

    def __post_init__(self):
        if isinstance(self.meta, dict):
            self.meta = ProfileMeta(**self.meta)
        self._lock = threading.Lock()
        self._arrow: dict = {}  # small tables set as Arrow, as written (frames made on use)
        for name, df in self.tables.items():
            self.rows[name] = len(df)

    def table_names(self) -> list[str]:
        return list(self.rows)

    def table(self, name: str) -> pd.DataFrame:
        df = self.tables.get(name)
        if df is not None:
            return df
        if name in self._arrow or (self.directory and name in self.rows):
            with self._lock:
                df = self.tables.get(name)
                if df is None:
                    kept = self._arrow.get(name)
                    # (the frame `read_table` would make of the file written from it)
                    df = arrow_to_frame(kept) if kept is not None else \
                        read_table(self.local_file(table_path(self.directory, name)))
                    self.tables[name] = df
            return df
        return empty_table(name)

    def has(self, name: str) -> bool:
        return self.rows.get(name, 0) > 0

    def arrow_table(self, name: str):
        """The table as a pyarrow Table, memory-mapped from its file when it is on disk and
        not loaded (no pandas frame made: for work that needs only its columns as arrays,
        e.g. the timeline index of millions of slices); else from the frame."""
        import pyarrow as pa

        if name in self._arrow:
            return self._arrow[name]
        if name not in self.tables and self.directory and name in self.rows:
            path = self.local_file(table_path(self.directory, name))
            return read_arrow(path)
        return pa.Table.from_pandas(self.table(name), preserve_index=False)

    def arrow_column(self, name: str, column: str):
        """One column of the table as Arrow: read from its file alone when the table is on
        disk and not loaded, else from the loaded frame (a question about one column, e.g.
        whether any step is known, then loads no frame of millions of rows)."""
        import pyarrow as pa

        if name in self._arrow or (name not in self.tables and self.directory
                                   and name in self.rows):
            return self.arrow_table(name).column(column)  # (mapped: no column is copied)
        return pa.chunked_array([pa.array(self.table(name)[column], from_pandas=True)])

    def local_file(self, path: str) -> str:
        """`path`, a file of this profile's directory, fetched first when the entry came
        from a shared cache and the file is not here yet."""
        if self.fetch is not None and not os.path.exists(path):
            self.fetch(os.path.basename(path))
        return path

    def set(self, name: str, df, keep_extra: bool = False) -> None:
        """Store table `name`: a pandas DataFrame (`conform`ed), or a pyarrow Table made by
        a reader that stays in Arrow (`conform_arrow`ed: the same file, no frame made
        unless a later step asks for one)."""
        if not isinstance(df, pd.DataFrame):
            self._set_arrow(name, conform_arrow(df, name, keep_extra=keep_extra))
            return
        self._arrow.pop(name, None)
        df = conform(df, name, keep_extra=keep_extra)
        self.rows[name] = len(df)
        if self.directory:
            write_table(table_path(self.directory, name), df)
            if len(df) <= KEEP_ROWS:  # small: kept as made, not read back by later steps
                self.tables[name] = df
            else:
                self.tables.pop(name, None)  # read back (memory-mapped) only if asked for
        else:
            self.tables[name] = df

    def _set_arrow(self, name: str, table) -> None:
        self.rows[name] = table.num_rows
        self.tables.pop(name, None)
        self._arrow.pop(name, None)
        if self.directory:
            write_arrow(table_path(self.directory, name), table)
            if table.num_rows <= KEEP_ROWS:
                self._arrow[name] = table
        else:
            self.tables[name] = arrow_to_frame(table)

    def release(self, *names: str) -> None:
        """Forget loaded copies of disk-backed tables (they reload on demand)."""
        if self.directory:
            for n in names or list({*self.tables, *self._arrow}):
                self.tables.pop(n, None)
                self._arrow.pop(n, None)

    def step_categories(self) -> list[str]:
        cats = self.meta.step_categories
        if cats:
            return list(cats)
        if not self.has("steps"):
            return []
        return [c[3:] for c in self.table("steps").columns if c.startswith("bd_")]
