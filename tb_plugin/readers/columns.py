"""CSV header variants as data: for every CSV a reader takes, its canonical columns and the
headers each is written under across producers and versions (docs/formats.md §2).

A table maps a canonical column to the accepted headers in preference order (the first one
a file has wins; matching is exact first, then case-insensitive). `resolve(df, table)`
applies a table to a file's frame; the readers convert the cells (their units differ by
producer) and address columns only by canonical name. `kind` names the conversion the
reader applies: us (µs text -> exact int ns), us_or_missing (-1 when empty), int, float,
mb (MB, times the producer's MiB factor), kb (KB -> MiB), shapes, stack, text, ticks
(MindSpore 10 ns ticks), ms (ms text -> exact int ns).
"""
from __future__ import annotations

import dataclasses

import pandas as pd


@dataclasses.dataclass(frozen=True)
class Column:
    name: str
    headers: tuple[str, ...]
    kind: str = "text"
    # A file without this column's first header is unusable (an error names what is missing).
    required: bool = False


Table = dict[str, Column]
REQUIRED = True


def _table(*columns: tuple) -> Table:
    """(name, headers[, kind[, REQUIRED]]) rows -> {name: Column}."""
    return {row[0]: Column(row[0], tuple(row[1]), *row[2:]) for row in columns}


def required(table: Table) -> tuple[str, ...]:
    """The headers a file of this table must have, for `ReadContext.csv(required=...)`."""
    return tuple(c.headers[0] for c in table.values() if c.required)


def find_header(df: pd.DataFrame, *headers: str) -> str | None:
    """First of `headers` that is a column of `df`: exact, then ignoring case."""
    for h in headers:
        if h in df.columns:
            return h
    lower = {c.lower(): c for c in df.columns}
    for h in headers:
        if h.lower() in lower:
            return lower[h.lower()]
    return None


def resolve(df: pd.DataFrame, table: Table) -> dict[str, str]:
    """{canonical name: the header `df` has for it}; columns the file lacks are absent."""
    out = {}
    for col in table.values():
        h = find_header(df, *col.headers)
        if h is not None:
            out[col.name] = h
    return out


# --------------------------------------------------------------------------- torch_npu / MindSpore 2.x
# ASCEND_PROFILER_OUTPUT/*.csv (docs/formats.md §2.3-2.12).

KERNEL_DETAILS = _table(
    ("step", ("Step Id", "Step ID"), "int"),
    ("device_id", ("Device_id", "Device ID"), "int"),
    ("name", ("Name", "Op Name"), "text", REQUIRED),
    ("type", ("Type", "OP Type"), "text"),
    ("core_type", ("Accelerator Core", "Task Type"), "text"),
    ("start_ns", ("Start Time(us)", "Task Start Time(us)"), "us", REQUIRED),
    ("dur_ns", ("Duration(us)", "Task Duration(us)"), "us", REQUIRED),
    ("wait_ns", ("Wait Time(us)", "Task Wait Time(us)"), "us"),
    ("stream_id", ("Stream ID", "Stream Id"), "int"),
    ("block_dim", ("Block Num", "Block Dim"), "int"),
    ("input_shapes", ("Input Shapes",), "shapes"),
    ("input_dtypes", ("Input Data Types",), "text"),
    ("output_shapes", ("Output Shapes",), "shapes"),
)
# Text headers of kernel_details / op_summary that are neither model columns nor numeric
# metrics (every other header is kept as a float metric column, e.g. PMU counters).
KERNEL_TEXT_HEADERS = frozenset({
    "Model ID", "Task ID", "OP State", "HF32 Eligible", "Input Formats", "Output Data Types",
    "Output Formats", "Context ID", "Mix Block Num", "Mix Block Dim", "Model Name",
    "Infer ID"})

OPERATOR_DETAILS = _table(
    ("name", ("Name",), "text", REQUIRED),
    ("input_shapes", ("Input Shapes",), "shapes"),
    ("call_stack", ("Call Stack",), "stack"),
    ("host_self_ns", ("Host Self Duration(us)",), "us"),
    ("host_total_ns", ("Host Total Duration(us)",), "us"),
    ("device_self_ns", ("Device Self Duration(us)",), "us"),
    ("device_total_ns", ("Device Total Duration(us)",), "us"),
    ("device_self_aicore_ns", ("Device Self Duration With AICore(us)",), "us"),
    ("device_total_aicore_ns", ("Device Total Duration With AICore(us)",), "us"),
)

STEP_TRACE_TIME = _table(
    ("step", ("Step", "Step Id", "Step ID"), "int"),
    ("device_id", ("Device_id", "Device ID"), "int"),
    ("bd_computing", ("Computing",), "us", REQUIRED),
    ("bd_communication_not_overlapped", ("Communication(Not Overlapped)",), "us", REQUIRED),
    ("bd_overlapped", ("Overlapped",), "us"),
    ("communication_ns", ("Communication",), "us"),
    ("bd_free", ("Free",), "us", REQUIRED),
    ("stage_ns", ("Stage",), "us"),
    ("bubble_ns", ("Bubble",), "us"),
    ("comm_not_overlapped_exclude_receive_ns",
     ("Communication(Not Overlapped and Exclude Receive)",), "us"),
    ("preparing_ns", ("Preparing",), "us"),
)

# msprof-analyze cluster_analysis_output/cluster_step_trace_time.csv: the per-rank
# step_trace_time.csv columns behind `Step, Type, Index` (rank rows: Index = rank id).
CLUSTER_STEP_TRACE_TIME = {
    **_table(("type", ("Type",), "text", REQUIRED), ("index", ("Index",), "text", REQUIRED)),
    **{k: v for k, v in STEP_TRACE_TIME.items() if k != "device_id"},
}
# cluster_analysis.db (docs/formats.md §2.26): model column -> the db column names (as
# "headers", preferred first, found by PRAGMA table_info) and the unit of its values.
CLUSTER_DB_STEP_TRACE = _table(      # ClusterStepTraceTime; µs
    ("step", ("step",), "text"), ("type", ("type",), "text"), ("index", ("index",), "text"),
    ("bd_computing", ("computing",), "us"),
    ("bd_communication_not_overlapped", ("communication_not_overlapped",), "us"),
    ("bd_overlapped", ("overlapped",), "us"), ("communication_ns", ("communication",), "us"),
    ("bd_free", ("free",), "us"), ("stage_ns", ("stage",), "us"), ("bubble_ns", ("bubble",), "us"),
    ("comm_not_overlapped_exclude_receive_ns",
     ("communication_not_overlapped_and_exclude_receive",), "us"),
    ("preparing_ns", ("preparing",), "us"),
)
CLUSTER_DB_COMM_TIME = _table(       # ClusterCommAnalyzerTime / ClusterCommunicationTime; ms
    ("step", ("step",), "text"), ("rank_id", ("rank_id",), "int"),
    ("op", ("hccl_op_name",), "text"), ("group", ("group_name",), "text"),
    ("start_us", ("start_timestamp",), "float"),
    ("elapse_ms", ("elapsed_time", "elapse_time"), "ms"), ("transit_ms", ("transit_time",), "ms"),
    ("wait_ms", ("wait_time",), "ms"), ("sync_ms", ("synchronization_time",), "ms"),
    ("idle_ms", ("idle_time",), "ms"),
)
CLUSTER_DB_COMM_BANDWIDTH = _table(  # ClusterCommAnalyzerBandwidth / ClusterCommunicationBandwidth
    ("step", ("step",), "text"), ("rank_id", ("rank_id",), "int"),
    ("op", ("hccl_op_name",), "text"), ("group", ("group_name",), "text"),
    ("band", ("band_type", "transport_type"), "text"), ("size_mb", ("transit_size",), "float"),
)
CLUSTER_DB_MATRIX = _table(          # ClusterCommAnalyzerMatrix / ClusterCommunicationMatrix
    ("step", ("step",), "text"), ("op", ("hccl_op_name",), "text"),
    ("group", ("group_name",), "text"), ("src", ("src_rank",), "text"),
    ("dst", ("dst_rank",), "text"), ("size_mb", ("transit_size",), "float"),
    ("time_ms", ("transit_time",), "ms"), ("bandwidth", ("bandwidth",), "float"),
    ("transport", ("transport_type",), "text"),
)

MEMORY_RECORD = _table(
    ("component", ("Component",), "text", REQUIRED),
    ("ts_ns", ("Timestamp(us)",), "us", REQUIRED),
    ("allocated_mb", ("Total Allocated(MB)",), "mb"),
    ("reserved_mb", ("Total Reserved(MB)",), "mb"),
    ("active_mb", ("Total Active(MB)",), "mb"),
    ("device", ("Device Type", "Device"), "text"),
)

OPERATOR_MEMORY = _table(
    ("name", ("Name",), "text", REQUIRED),
    ("size_kb", ("Size(KB)",), "float", REQUIRED),
    ("alloc_ns", ("Allocation Time(us)",), "us", REQUIRED),
    ("release_ns", ("Release Time(us)",), "us_or_missing"),
    ("duration_ns", ("Duration(us)",), "us_or_missing"),
    ("alloc_total_allocated_mb", ("Allocation Total Allocated(MB)",), "mb"),
    ("alloc_total_reserved_mb", ("Allocation Total Reserved(MB)",), "mb"),
    ("device", ("Device Type", "Device"), "text"),
)

# Reserved memory is MB in torch_npu, KB in older exports (one of the two is present).
NPU_MODULE_MEM = _table(
    ("component", ("Component",), "text", REQUIRED),
    ("ts_ns", ("Timestamp(us)",), "us", REQUIRED),
    ("reserved_mb", ("Total Reserved(MB)",), "float"),
    ("reserved_kb", ("Total Reserved(KB)",), "float"),
    ("device", ("Device", "Device_id"), "text"),
)

# --------------------------------------------------------------------------- msprof
# PROF_*/mindstudio_profiler_output or device_N/summary CSVs (docs/formats.md §2.21).

# The device column every msprof summary may carry (rows of other devices are dropped).
MSPROF_DEVICE = _table(("device_id", ("Device_id", "Device ID"), "int"))

OP_SUMMARY = _table(
    ("name", ("Op Name", "Name"), "text", REQUIRED),
    ("type", ("OP Type", "Type"), "text"),
    ("core_type", ("Task Type", "Accelerator Core"), "text"),
    ("start_ns", ("Task Start Time(us)", "Start Time(us)"), "us"),
    ("dur_ns", ("Task Duration(us)", "Duration(us)"), "us"),
    ("wait_ns", ("Task Wait Time(us)", "Wait Time(us)"), "us"),
    ("device_id", ("Device_id",), "int"),
    ("stream_id", ("Stream ID",), "int"),
    ("block_dim", ("Block Num", "Block Dim"), "int"),
    ("input_shapes", ("Input Shapes",), "text"),
    ("input_dtypes", ("Input Data Types",), "text"),
    ("output_shapes", ("Output Shapes",), "text"),
)
# Headers of op_summary that are not numeric metrics (the rest are kept as float columns).
OP_SUMMARY_TEXT_HEADERS = KERNEL_TEXT_HEADERS | frozenset({
    "Device_id", "Stream ID", "Op Name", "OP Type", "Task Type", "Task Start Time(us)",
    "Task Duration(us)", "Task Wait Time(us)", "Block Num", "Block Dim", "Input Shapes",
    "Input Data Types", "Output Shapes"})

MSPROF_STEP_TRACE = _table(
    ("step", ("Iteration ID",), "int", REQUIRED),
    ("model", ("Model ID",), "text"),
    ("end_ns", ("Iteration End(us)", "Iteration End"), "us"),
    ("total_ns", ("Iteration Time(us)", "Iteration Time"), "us"),
    ("fp_bp_ns", ("FP to BP Time(us)", "FP to BP Time"), "us"),
    ("refresh_ns", ("Iteration Refresh(us)", "Iteration Refresh"), "us"),
)

NPU_MEM = _table(
    ("component", ("event",), "text", REQUIRED),
    ("ts_ns", ("timestamp(us)", "Timestamp(us)"), "us"),
    ("reserved_mb", ("memory(KB)",), "kb"),
)

MSPROF_MEMORY_RECORD = _table(
    ("component", ("Component",), "text", REQUIRED),
    ("ts_ns", ("Timestamp(us)",), "us"),
    ("allocated_mb", ("Total Allocated(KB)",), "kb"),
    ("reserved_mb", ("Total Reserved(KB)",), "kb"),
)

MSPROF_NPU_MODULE_MEM = _table(
    ("component", ("Component",), "text", REQUIRED),
    ("ts_ns", ("Timestamp(us)",), "us"),
    ("reserved_mb", ("Total Reserved(KB)",), "kb"),
)

MSPROF_OPERATOR_MEMORY = _table(
    ("name", ("Name",), "text", REQUIRED),
    ("size_kb", ("Size(KB)",), "float"),
    ("alloc_ns", ("Allocation Time(us)",), "us"),
    ("release_ns", ("Release Time(us)",), "us"),
    ("duration_ns", ("Duration(us)",), "us"),
    ("alloc_total_allocated_mb", ("Allocation Total Allocated(KB)",), "kb"),
    ("alloc_total_reserved_mb", ("Allocation Total Reserved(KB)",), "kb"),
)

# Device of a memory row: the numeric id (-> "NPU:{id}") or the device text as written.
MSPROF_MEMORY_DEVICE = _table(
    ("device_id", ("Device_id",), "int"),
    ("device", ("Device", "Device Type"), "text"),
)

# --------------------------------------------------------------------------- MindSpore <= 2.3
# profiler*/ flat files (docs/formats.md §2.23).

STEP_TRACE_RAW = _table(
    ("step", ("step_num",), "int", REQUIRED),
    ("start_ns", ("start_point",), "ticks", REQUIRED),
    ("end_ns", ("end_point",), "ticks", REQUIRED),
    ("total_ns", ("total",), "ticks", REQUIRED),
    ("bd_iteration_interval", ("iteration_interval",), "ticks", REQUIRED),
    ("bd_fp_and_bp", ("fp_and_bp",), "ticks", REQUIRED),
    ("bd_tail", ("tail",), "ticks", REQUIRED),
)

OUTPUT_TIMELINE_DATA = _table(
    ("op_name", ("op_name",), "text", REQUIRED),
    ("stream_id", ("stream_id",), "int", REQUIRED),
    ("start_ns", ("start_time(ms)",), "ms", REQUIRED),
    ("dur_ns", ("duration(ms)",), "ms", REQUIRED),
)

# Names of the AI Core / AI CPU ops in the intermediate files (core type of a kernel).
AICORE_DETAIL = _table(("op", ("full_op_name", "full_kernel_name")))
AICORE_TYPE = _table(("op_type", ("kernel_type", "op_type")))
AICPU = _table(("op", ("op_type", "kernel_type", "op_name", "full_op_name")))
