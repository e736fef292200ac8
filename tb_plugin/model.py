"""The normalized columnar model every reader produces and every analysis consumes.

One `Profile` per (run, worker, span). Each table is a pandas DataFrame whose columns are
declared below as data (`SCHEMAS`), so a reader only fills what its producer has and
`conform()` adds the rest as empty, typed columns. Views state plainly what a profile lacks
by checking `Profile.has(table)`.

Units, everywhere in the model:
- time: integer nanoseconds (int64). Absolute timestamps are ns since the epoch where the
  producer wrote epoch times (Ascend, kineto), otherwise the producer's own clock in ns.
- durations: integer nanoseconds (int64).
- memory: MB (float64, MiB = bytes / 1024**2) unless the column name says otherwise.
- communication times: ns; sizes: MB.
The HTTP API converts to microseconds.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from typing import Any

import numpy as np
import pandas as pd

# Column name -> dtype. "string" columns are stored as pandas "string" (pyarrow backed when
# available) or categorical for highly repeated names; "Int64" is nullable integer.
SCHEMAS: dict[str, dict[str, str]] = {
    # Timeline tracks: one per (process, thread) of the trace. `kind` groups tracks for the
    # views: host (framework ops), python, cann (CANN API), device (hardware streams),
    # communication, overlap (Overlap Analysis), counter, other.
    "tracks": {
        "track_id": "int32",
        "process": "string",
        "thread": "string",
        "pid": "string",
        "tid": "string",
        "kind": "string",
        "process_sort": "int32",
        "thread_sort": "int32",
        "device_id": "Int64",
    },
    # Complete (X) events, sorted by (track_id, start_ns, -dur_ns). `args_row` is the row of
    # the event's args JSON in the profile's args side file (meta["args_file"]), -1 if none;
    # args are fetched on demand, never held in memory.
    "slices": {
        "track_id": "int32",
        "start_ns": "int64",
        "dur_ns": "int64",
        "depth": "int16",
        "name": "category",
        "cat": "category",
        "args_row": "int64",
    },
    # Flow endpoints (s / t / f). `flow_id` is the producer's id as text; `name` the flow's
    # name (torch_to_npu, HostToDevice..., fwdbwd, ac2g...).
    "flows": {
        "flow_id": "string",
        "name": "category",
        "cat": "category",
        "phase": "category",
        "track_id": "int32",
        "ts_ns": "int64",
    },
    # Counter samples (C events, kineto [memory] totals are memory_records instead).
    "counters": {
        "track_id": "int32",
        "ts_ns": "int64",
        "series": "category",
        "value": "float64",
    },
    # Device kernels / tasks: one row per kernel_details / op_summary row, or per kineto
    # kernel event. core_type: AI_CORE, AI_VECTOR_CORE, AI_CPU, MIX_AIC, MIX_AIV,
    # COMMUNICATION, ... for NPU; the CUDA kernel "type" (kernel/memcpy/memset) for GPU.
    "kernels": {
        "name": "category",
        "type": "category",
        "core_type": "category",
        "start_ns": "int64",
        "dur_ns": "int64",
        "wait_ns": "int64",
        "step": "Int64",
        "device_id": "Int64",
        "stream_id": "Int64",
        "block_dim": "Int64",
        "input_shapes": "string",
        "input_dtypes": "string",
        "output_shapes": "string",
    },
    # Framework operator instances (one row per op call, every nesting level, no
    # ProfilerStep rows). input_shapes / call_stack are display strings ("" when absent);
    # call_stack frames are separated by "\n".
    "operators": {
        "name": "category",
        "input_shapes": "string",
        "call_stack": "string",
        "start_ns": "int64",
        "host_self_ns": "int64",
        "host_total_ns": "int64",
        "device_self_ns": "int64",
        "device_total_ns": "int64",
        "step": "Int64",
    },
    # Steps: id, window and the time breakdown. Breakdown columns are named
    # `bd_<category>` in ns; `total_ns` is the step time as the producer defines it.
    "steps": {
        "step": "int64",
        "start_ns": "int64",
        "end_ns": "int64",
        "total_ns": "int64",
    },
    # Memory curves: one sample per row. component: PTA, GE, PTA+GE, APP, WORKSPACE,
    # MindSpore, ... or kineto's "PyTorch" allocator. device: "NPU:0", "GPU:0", "CPU".
    "memory_records": {
        "component": "category",
        "device": "category",
        "ts_ns": "int64",
        "allocated_mb": "float64",
        "reserved_mb": "float64",
        "active_mb": "float64",
    },
    # Allocations attributed to operators (operator_memory.csv, kineto alloc/free pairs).
    # release_ns is -1 when the block was not released inside the window.
    "memory_allocations": {
        "name": "category",
        "device": "category",
        "size_kb": "float64",
        "alloc_ns": "int64",
        "release_ns": "int64",
        "duration_ns": "int64",
        "alloc_total_allocated_mb": "float64",
        "alloc_total_reserved_mb": "float64",
    },
    # Per CANN module reserved memory (npu_module_mem.csv).
    "module_memory": {
        "component": "category",
        "device": "category",
        "ts_ns": "int64",
        "reserved_mb": "float64",
    },
    # Communication operators (communication.json, one row per op per step).
    "communication_ops": {
        "step": "Int64",
        "name": "string",
        "group": "string",
        "kind": "category",           # collective | p2p
        "start_ns": "int64",
        "elapse_ns": "int64",
        "transit_ns": "int64",
        "wait_ns": "int64",
        "sync_ns": "int64",
        "idle_ns": "int64",
        "transit_size_mb": "float64",
    },
    # Communication matrix links (communication_matrix.json), per op and link.
    "communication_links": {
        "step": "Int64",
        "op": "string",
        "src_rank": "int64",
        "dst_rank": "int64",
        "transport": "category",
        "transit_size_mb": "float64",
        "transit_ns": "int64",
        "bandwidth_gbps": "float64",
    },
}

TABLES = tuple(SCHEMAS)


def empty_table(table: str) -> pd.DataFrame:
    return conform(pd.DataFrame(), table)


def _empty_column(dtype: str, n: int) -> pd.Series | np.ndarray:
    if dtype in ("int64", "int32", "int16"):
        return np.zeros(n, dtype=dtype)
    if dtype == "float64":
        return np.full(n, np.nan)
    if dtype == "Int64":
        return pd.array([pd.NA] * n, dtype="Int64")
    if dtype == "category":
        return pd.Categorical([""] * n)
    return pd.array([""] * n, dtype="string")


def conform(df: pd.DataFrame, table: str, keep_extra: bool = False) -> pd.DataFrame:
    """Return `df` with exactly the schema's columns (in order) and dtypes.

    Missing columns are added empty; extra columns are dropped unless `keep_extra`
    (breakdown columns of `steps` and PMU columns of `kernels` are kept that way).
    """
    schema = SCHEMAS[table]
    n = len(df)
    out = {}
    for col, dtype in schema.items():
        if col in df.columns:
            s = df[col]
            if str(s.dtype) != dtype:
                if dtype == "category":
                    s = s.astype("string").fillna("").astype("category")
                elif dtype == "string":
                    s = s.astype("string").fillna("")
                elif dtype in ("int64", "int32", "int16"):
                    s = pd.to_numeric(s, errors="coerce").fillna(0).astype(dtype)
                else:
                    s = s.astype(dtype)
            out[col] = s.reset_index(drop=True) if isinstance(s, pd.Series) else s
        else:
            out[col] = _empty_column(dtype, n)
    result = pd.DataFrame(out)
    if keep_extra:
        for col in df.columns:
            if col not in schema:
                result[col] = df[col].reset_index(drop=True)
    return result


@dataclasses.dataclass
class FileError:
    """A problem with one input file; `path` is relative to the logdir."""

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


# Reader processes set this (see `spilling`): tables a reader sets are written to disk at
# once and dropped from memory, so a reader's peak memory is that of its largest step, not
# the sum of every table it produced.
_SPILL_DIR: str | None = None


@contextlib.contextmanager
def spilling(directory: str):
    """Profiles created inside this block write their tables to `directory` as they are set."""
    global _SPILL_DIR
    previous, _SPILL_DIR = _SPILL_DIR, directory
    try:
        yield
    finally:
        _SPILL_DIR = previous


def table_path(directory: str, name: str) -> str:
    return os.path.join(directory, f"{name}.arrow")


def write_table(path: str, df: pd.DataFrame) -> None:
    import pyarrow as pa

    table = pa.Table.from_pandas(df, preserve_index=False)
    # Write aside and rename: `df` may itself be memory-mapped from `path` (a table read
    # back and replaced); truncating that file in place would pull the pages from under it.
    tmp = f"{path}.tmp-{os.getpid()}"
    with pa.OSFile(tmp, "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=1 << 20)
    os.replace(tmp, path)


def write_columns(path: str, columns: dict) -> None:
    """Write numpy / pyarrow columns as one record batch, without a pandas copy. A table
    written this way is read back without a copy too (`read_table`: its numeric columns
    stay views of the memory map), which is how the trace index keeps TensorBoard small."""
    import pyarrow as pa

    arrays = [c if isinstance(c, (pa.Array, pa.ChunkedArray)) else pa.array(c)
              for c in columns.values()]
    arrays = [pa.concat_arrays(a.chunks) if isinstance(a, pa.ChunkedArray) else a
              for a in arrays]
    batch = pa.record_batch(arrays, names=list(columns))
    tmp = f"{path}.tmp-{os.getpid()}"
    with pa.OSFile(tmp, "wb") as sink:
        with pa.ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)
    os.replace(tmp, path)


def read_table(path: str) -> pd.DataFrame:
    import pyarrow as pa

    # The map must stay open: columns converted without a copy still point into it (it is
    # unmapped when the last buffer using it is freed).
    table = pa.ipc.open_file(pa.memory_map(path)).read_all()
    # Tables were conformed when written and Arrow's pandas metadata restores their dtypes,
    # so no conform here. One block per column: single-chunk numeric columns stay views of
    # the map (no copy).
    return table.to_pandas(split_blocks=True)


@dataclasses.dataclass
class Profile:
    """Everything known about one worker-span, in normalized tables.

    `meta` keys (all optional): producer (torch_npu|mindspore|msprof|kineto), device
    (npu|gpu|cpu), rank, device_id, world_size, profiler_level, step_categories (ordered
    list of breakdown categories present in steps), versions, distributed (dict).

    With a `directory`, tables live on disk as Arrow files (`<table>.arrow`): `set` writes
    them, `table` memory-maps them on first use. That is how reader processes hand tables to
    TensorBoard's process (through the cache) and how they keep their memory low.
    """

    tables: dict[str, pd.DataFrame] = dataclasses.field(default_factory=dict)
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    errors: list[FileError] = dataclasses.field(default_factory=list)
    directory: str | None = dataclasses.field(default_factory=lambda: _SPILL_DIR)
    rows: dict[str, int] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self._lock = threading.Lock()
        for name, df in self.tables.items():
            self.rows[name] = len(df)

    def table_names(self) -> list[str]:
        return list(self.rows)

    def table(self, name: str) -> pd.DataFrame:
        df = self.tables.get(name)
        if df is not None:
            return df
        if self.directory and name in self.rows:
            with self._lock:
                df = self.tables.get(name)
                if df is None:
                    df = read_table(table_path(self.directory, name))
                    self.tables[name] = df
            return df
        return empty_table(name)

    def has(self, name: str) -> bool:
        return self.rows.get(name, 0) > 0

    def set(self, name: str, df: pd.DataFrame, keep_extra: bool = False) -> None:
        df = conform(df, name, keep_extra=keep_extra)
        self.rows[name] = len(df)
        if self.directory:
            write_table(table_path(self.directory, name), df)
            self.tables.pop(name, None)  # read back (memory-mapped) only if asked for
        else:
            self.tables[name] = df

    def release(self, *names: str) -> None:
        """Forget loaded copies of disk-backed tables (they reload on demand)."""
        if self.directory:
            for n in names or list(self.tables):
                self.tables.pop(n, None)

    def step_categories(self) -> list[str]:
        cats = self.meta.get("step_categories")
        if cats:
            return list(cats)
        if not self.has("steps"):
            return []
        return [c[3:] for c in self.table("steps").columns if c.startswith("bd_")]
