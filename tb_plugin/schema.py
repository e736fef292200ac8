"""The model's tables, declared as data: each table's columns and their dtypes (`SCHEMAS`),
and `conform`, which gives a pandas frame exactly its table's columns. A reader fills only
what its producer has; `conform()` adds the rest as empty, typed columns. (A table a reader
makes in Arrow is conformed by `arrow_tables.conform_arrow`, to the same stored file.)

Units, everywhere in the model:
- time: integer nanoseconds (int64). Absolute timestamps are ns since the epoch where the
  producer wrote epoch times (Ascend, kineto), otherwise the producer's own clock in ns.
- durations: integer nanoseconds (int64).
- memory: MB (float64, MiB = bytes / 1024**2) unless the column name says otherwise.
- communication times: ns; sizes: MB.
The HTTP API converts to microseconds.
"""
from __future__ import annotations

import functools

import numpy as np

from .lazy import pd

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
    """A frame of `table`'s columns and no rows (what `Profile.table` gives for a table the
    profile lacks; views ask for those on every request). A new frame each call, on the
    columns of one made once: with no rows there is no value to change in place, and a
    column added to it stays in it."""
    return _empty_frame(table).copy(deep=False)


@functools.cache
def _empty_frame(table: str) -> pd.DataFrame:
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
