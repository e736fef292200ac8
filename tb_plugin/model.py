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

import dataclasses
import functools
import os
import threading
from typing import Any, Callable

import numpy as np

from .lazy import pd
from .table_files import (arrow_to_frame, read_arrow, read_table, spill_directory,
                          table_path, write_arrow, write_table)

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
    # the event's args JSON in the profile's args side file (meta.args_file), -1 if none;
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
    # Step windows a producer states outside the trace's ProfilerStep slices: msprof's
    # `Iteration N` windows when its steps are left to the Overlap Analysis (derive.py).
    "step_windows": {
        "step": "int64",
        "start_ns": "int64",
        "end_ns": "int64",
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
    # MindSpore data pipeline (readers/minddata.py, docs/formats.md §2.22/§2.23): one row per
    # dataset op with an output queue, as minddata_pipeline_raw / pipeline_profiling / the
    # summary json describe it. Inline ops (no queue) are left out with their children
    # re-parented, as MindSpore's parser does, so the graph is what the user can tune.
    "pipeline_ops": {
        "op_id": "int64",              # the op's id in the pipeline (0 = root, the op nearest the device)
        "op_type": "string",           # Batch, Map, TFReader, ImageFolderOp, ...
        "num_workers": "Int64",        # num_parallel_workers of the op
        "parent_id": "Int64",          # the op consuming this op's output (NA for the root)
        "children_ids": "string",      # ids of the ops feeding it, comma separated ("" for a leaf)
        "queue_samples": "Int64",      # output-queue size samples taken (NA when not recorded)
        "queue_avg_size": "float64",   # mean of the output-queue size samples (rows)
        "queue_capacity": "Int64",     # output-queue length (capacity)
        "queue_usage_pct": "float64",  # 100 x avg size / capacity
        "queue_empty_pct": "float64",  # share of samples with an empty queue (%)
        "cpu_pct": "float64",          # mean user+sys CPU of the op's threads (% of one core)
    },
    # Device-side queue records: device_queue / dataset_iterator profiling (sink or feed
    # mode) and the chip's get_next queue (minddata_aicpu, data_preprocess GetNext).
    # `record`: size (value = rows in the queue, capacity set), get_ms / push_ms / batch_ms
    # (pipeline get, push to the device, whole batch; ms), wait_ms (get_next dequeue wait).
    "pipeline_queues": {
        "queue": "category",           # device_queue | dataset_iterator | get_next
        "batch": "Int64",              # batch (step) number when the file states it
        "record": "category",
        "value": "float64",
        "capacity": "Int64",
        # The record's timestamp as the file writes it (get_next: µs on Ascend, ns on GPU;
        # device queue: MindSpore's own clock); NA when the line has none.
        "ts": "Int64",
    },
    # Host CPU of the data pipeline (minddata_cpu_utilization): one row per sample of the
    # whole machine (`scope` device), the training process (`process`) or one op (`op`).
    "pipeline_cpu": {
        "scope": "category",           # device | process | op
        "op_id": "Int64",              # the op for scope op
        "sample": "int64",             # sample index
        "user_pct": "float64",
        "sys_pct": "float64",
        "io_pct": "float64",           # device scope only
        "idle_pct": "float64",         # device scope only
    },
    # MindSpore 2.x dataset.csv: time per dataset operation and stage (µs averages).
    "pipeline_stages": {
        "operation": "string",
        "stage": "string",
        "occurrences": "int64",
        "avg_us": "float64",
        "custom_info": "string",
    },
    # Pipeline-level facts of MindSpore's own analysis (minddata_pipeline_summary_*.json /
    # .csv), kept so the view can show them when the raw files are missing: one row per key.
    "pipeline_summary": {
        "key": "string",               # per_pipeline_time, per_push_queue_time, per_batch_time, ...
        "value": "float64",            # -1 in the file (not available) is NA
    },
    # Graph-mode step phases (step_trace_raw, msprof step_trace, the MindSpore 2.x trace):
    # one row per phase of a step. phase: iteration_interval (the gap before FP: data wait,
    # host), fp_and_bp (forward + backward), tail (BP end to step end: gradient reduction
    # tail, optimizer), reduce (one gradient-reduction segment; `name` says which, e.g.
    # `stream_540_parallel_0` or `Reduce 1`). start_ns is on the producer's step clock
    # (MindSpore <= 2.3 ticks x 10 are not the timeline's clock). Step AVERAGE_STEP (-1) holds
    # the producer's own average row (step_trace_raw's last row) when it wrote one.
    "step_phases": {
        "step": "int64",
        "phase": "category",
        "name": "string",
        "start_ns": "int64",
        "dur_ns": "int64",
    },
    # Op-type statistics as the producer aggregated them (op_statistic.csv / msprof
    # op_statistic_*.csv; MindSpore <= 2.3 aicore_intermediate_{id}_type.csv). ratio_pct is
    # the file's share of device time in percent (NaN when the file has none).
    "op_statistic": {
        "type": "string",
        "core_type": "category",
        "calls": "int64",
        "total_ns": "int64",
        "min_ns": "int64",
        "avg_ns": "int64",
        "max_ns": "int64",
        "ratio_pct": "float64",
    },
    # CANN API statistics (api_statistic.csv / msprof api_statistic_*.csv), one row per API.
    "api_statistic": {
        "level": "category",
        "name": "string",
        "calls": "int64",
        "total_ns": "int64",
        "avg_ns": "int64",
        "min_ns": "int64",
        "max_ns": "int64",
    },
}

TABLES = tuple(SCHEMAS)
AVERAGE_STEP = -1  # step_phases: the producer's average row


def empty_table(table: str) -> pd.DataFrame:
    return conform(pd.DataFrame(), table)


def _empty_column(dtype: str, n: int) -> pd.Series | np.ndarray:
    if dtype in ("int64", "int32", "int16"):
        return np.zeros(n, dtype=dtype)
    if dtype == "float64":
        return np.full(n, np.nan)
    if dtype == "Int64":  # all missing, without a Python list of n NAs
        return pd.arrays.IntegerArray(np.zeros(n, np.int64), np.ones(n, bool))
    if dtype == "category":
        return pd.Categorical([""] * n)
    return pd.array([""] * n, dtype="string")


def _copy_on_write() -> bool:
    """Whether pandas copies a shared column before it is written to (pandas 3, or 2.x
    with the option on): then a conformed frame may share the input's columns."""
    if int(pd.__version__.split(".")[0]) >= 3:
        return True
    try:
        return pd.options.mode.copy_on_write is True
    except AttributeError:
        return False


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
            # By position (the frame's index is not kept). The columns' arrays, not the
            # Series: a frame built from Series aligns their indexes first, which cost
            # about half of this function on the small tables of a small profile.
            out[col] = s.array if isinstance(s, pd.Series) else s
        else:
            out[col] = _empty_column(dtype, n)
    shared = _copy_on_write()
    result = pd.DataFrame(out, copy=not shared)
    if keep_extra:
        # one concat: a kernels table may carry ~150 PMU counter columns
        extra = {col: df[col].array for col in df.columns if col not in schema}
        if extra:
            result = pd.concat([result, pd.DataFrame(extra, index=result.index,
                                                        copy=not shared)],
                               axis=1)
    return result


# --------------------------------------------------------------------------- Arrow tables
# A table a reader made in Arrow (readers that stay in Arrow from the CSV to the cache file:
# no pandas frame, conversion or from_pandas per small table, which were most of a small
# profile's views stage) is stored exactly as `write_table(conform(frame))` would store the
# same values: the same Arrow types and the same pandas metadata, so a frame read back from
# the file has the same dtypes whichever path wrote it (tests/unit/test_conform_arrow.py).

# pandas' codes for a categorical of n categories: int8 below 127, then int16, int32, int64
# (pandas.core.dtypes.cast.coerce_indexer_dtype), as Arrow's dictionary indices.
_CATEGORY_CODES = ((127, "int8"), (32767, "int16"), (2147483647, "int32"))


def _category_codes_type(n: int) -> str:
    return next((t for limit, t in _CATEGORY_CODES if n < limit), "int64")


@functools.cache
def _arrow_types() -> dict:
    import pyarrow as pa

    return {"int64": pa.int64(), "int32": pa.int32(), "int16": pa.int16(),
            "float64": pa.float64(), "Int64": pa.int64(), "string": pa.large_string()}


# Extra columns kept as they are, by Arrow type: a value of each as a reader's Python rows
# hold it, from which a one-row frame gives the dtype `conform` keeps (text: the installed
# pandas' default, `object` or `str`) and the Arrow type `write_table` stores it as. An
# int64 extra whose field says so (`NULLABLE_INT`) stands for pandas' nullable Int64.
_EXTRA_SAMPLES = {"double": 0.0, "int64": 0, "string": "", "large_string": "", "bool": False,
                  "Int64": None}
NULLABLE_INT = {b"pandas_dtype": b"Int64"}  # field metadata of an Int64 extra column


def _extra_sample(kind: str):
    """A one-row column of `kind` (`_EXTRA_SAMPLES`) as a reader's rows would make it."""
    return pd.array([0], dtype="Int64") if kind == "Int64" else [_EXTRA_SAMPLES[kind]]


# The pandas metadata a table's file carries, as `pa.Table.from_pandas` of the conformed
# frame writes it, is made of pieces that each cost ~1 ms of pandas / Arrow work the first
# time: the schema's part per table (`_schema_metadata`) and one column entry per kind of
# extra column (`_extra_entry`: an extra's entry differs from its kind's only by the
# column's name). `warm_metadata` makes them all in the fork server, so that a reader's
# first span does not make them again for every table.
@functools.cache
def _schema_metadata(name: str) -> dict:
    import json

    import pyarrow as pa

    return json.loads(pa.Schema.from_pandas(empty_table(name), preserve_index=False)
                      .metadata[b"pandas"])


@functools.cache
def _extra_entry(kind: str) -> tuple[dict, object]:
    """(the pandas metadata entry of an extra column of `kind`, named "x"; its Arrow
    type). From a one-row frame: from no rows, pandas 2 would call an `object` column of
    text "empty"."""
    import json

    import pyarrow as pa

    schema = pa.Schema.from_pandas(pd.DataFrame({"x": _extra_sample(kind)}),
                                   preserve_index=False)
    (entry,) = json.loads(schema.metadata[b"pandas"])["columns"]
    if not entry["name"] == entry["field_name"] == "x":  # (only the name may vary)
        raise AssertionError(f"unexpected pandas metadata entry {entry}")
    return entry, schema.field("x").type


def warm_metadata() -> None:
    """Make every table's and every extra kind's metadata piece now (see above)."""
    for name in SCHEMAS:
        _schema_metadata(name)
    for kind in _EXTRA_SAMPLES:
        _extra_entry(kind)


def _metadata_template(name: str, extras: tuple[tuple[str, str], ...]) -> dict:
    """The pandas metadata of a conformed frame of table `name` with the `extras`
    ((column, kind) kept after the schema's), as `pa.Table.from_pandas` writes it."""
    meta = _schema_metadata(name)
    if not extras:
        return meta
    return dict(meta, columns=[*meta["columns"],
                               *(dict(_extra_entry(kind)[0], name=col, field_name=col)
                                 for col, kind in extras)])


def conform_arrow(table, name: str, keep_extra: bool = False):
    """`conform` for a pyarrow Table: the schema's columns in order (missing ones empty),
    each as `write_table(conform(frame))` stores it — integers with missing cells as 0,
    floats with NaN as missing (as from_pandas stores NaN), text as given (other values as
    text, missing ones as ""), categories as a dictionary of their sorted values (pandas' categories) — and the pandas
    metadata that restores the model's dtypes. Extra columns (`keep_extra`) must be float64,
    int64 (pandas' nullable Int64 when the field's metadata is `NULLABLE_INT`), text or
    boolean and are kept as they are, after the schema's (text as the installed pandas'
    default text dtype stores it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = SCHEMAS[name]
    types = _arrow_types()
    table = table.combine_chunks()  # (one chunk per column: a single record batch)
    n = table.num_rows
    arrays, fields, categories = [], [], {}
    for col, dtype in schema.items():
        have = col in table.column_names
        # (Each cast and fill only where it changes something: a call costs microseconds
        # even when it has nothing to do, and a small table has dozens of columns.)
        if dtype == "category":
            values = _as_type(_one_chunk(table.column(col), pa), types["string"]) if have \
                else pa.repeat("", n).cast(types["string"])
            if values.null_count:
                values = pc.fill_null(values, "")
            arr = _sorted_dictionary(values, pa, pc)
            categories[col] = len(arr.dictionary)
        elif not have:
            arr = _empty_arrow(dtype, n, pa)
        else:
            arr = _one_chunk(table.column(col), pa)
            if dtype in ("int64", "int32", "int16"):
                if pa.types.is_floating(arr.type):  # (NaN is no number: 0, as in `conform`)
                    arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type), arr)
                arr = _as_type(arr, types[dtype], safe=False)
                if arr.null_count:
                    arr = pc.fill_null(arr, 0)
            elif dtype == "float64":
                arr = _as_type(arr, types[dtype])
                if arr.null_count < len(arr) and pc.any(pc.is_nan(arr)).as_py():
                    arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, pa.float64()), arr)
            elif dtype == "string":  # (text stays as given, missing cells too: `conform`
                is_text = pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
                arr = _as_type(arr, types[dtype])  # converts only columns of another dtype)
                if not is_text and arr.null_count:
                    arr = pc.fill_null(arr, "")
            else:  # Int64: missing cells stay missing
                arr = _as_type(arr, types[dtype])
        arrays.append(arr)
        fields.append(col)
    extras = []
    if keep_extra:
        for col in table.column_names:
            if col in schema:
                continue
            arr = _one_chunk(table.column(col), pa)
            kind = str(arr.type)
            if kind == "int64" and table.schema.field(col).metadata == NULLABLE_INT:
                kind = "Int64"
            if kind not in _EXTRA_SAMPLES:
                raise TypeError(f"extra column {col!r} of {name} is {arr.type}: not a number,"
                                " text or boolean")
            arrays.append(arr)
            fields.append(col)
            extras.append((col, kind))
    for i, (_, kind) in enumerate(extras, start=len(arrays) - len(extras)):
        arrays[i] = _as_type(arrays[i], _extra_entry(kind)[1])  # (text as pandas stores it)
    return pa.Table.from_arrays(arrays, names=fields).replace_schema_metadata(
        {b"pandas": _metadata_bytes((name, tuple(extras)), tuple(categories.items()))})


def _as_type(arr, arrow_type, safe: bool = True):
    return arr if arr.type == arrow_type else arr.cast(arrow_type, safe=safe)


_metadata_encoded: dict[tuple, bytes] = {}


def _metadata_bytes(layout: tuple, categories: tuple) -> bytes:
    """The pandas metadata of a table of this layout ((table, extras):
    `_metadata_template`) as stored (JSON), with each category column's count of
    categories (`categories`: (column, count) pairs) and the width of its codes; made and
    encoded once per layout and counts."""
    key = (layout, categories)
    data = _metadata_encoded.get(key)
    if data is None:
        import json

        meta = _metadata_template(*layout)
        if categories:
            counts = dict(categories)
            meta = dict(meta, columns=[dict(c) for c in meta["columns"]])
            for c in meta["columns"]:
                if c["name"] in counts:
                    k = counts[c["name"]]
                    c["numpy_type"] = _category_codes_type(k)
                    c["metadata"] = dict(c["metadata"], num_categories=k)
        data = json.dumps(meta).encode("utf8")
        if len(_metadata_encoded) < _METADATA_KEPT:
            _metadata_encoded[key] = data
    return data


_METADATA_KEPT = 4096  # layouts x category counts remembered (a reader meets a few dozen)


def _one_chunk(col, pa):
    """A column of a combined table as one Array (an empty table's has no chunk)."""
    return col.chunk(0) if col.num_chunks == 1 else pa.concat_arrays(col.chunks) \
        if col.num_chunks else pa.array([], col.type)


def _sorted_dictionary(values, pa, pc):
    """`values` (text, no missing cell) as pandas' categorical stores it in Arrow: the
    dictionary is the sorted distinct values, the indices as wide as pandas' codes."""
    distinct = pc.unique(values)
    if len(distinct) == 0:  # (pandas' empty categorical: a dictionary of null type)
        return pa.DictionaryArray.from_arrays(pa.array([], pa.int8()), pa.array([], pa.null()))
    distinct = distinct.take(pc.sort_indices(distinct))
    codes = pc.index_in(values, value_set=distinct)
    index_type = getattr(pa, _category_codes_type(len(distinct)))()
    return pa.DictionaryArray.from_arrays(codes.cast(index_type), distinct)


def _empty_arrow(dtype: str, n: int, pa):
    """An absent column of `conform_arrow`: what `_empty_column` stores."""
    if dtype in ("int64", "int32", "int16"):
        return pa.array(np.zeros(n, dtype=dtype)) if n else pa.array([], _arrow_types()[dtype])
    if dtype == "float64":
        return pa.nulls(n, pa.float64())
    if dtype == "Int64":
        return pa.nulls(n, pa.int64())
    return pa.repeat("", n).cast(pa.large_string())


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
