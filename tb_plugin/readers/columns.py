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

import numpy as np
from ..lazy import pd


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
    return _Headers(df).find(headers)


def resolve(df: pd.DataFrame, table: Table) -> dict[str, str]:
    """{canonical name: the header `df` has for it}; columns the file lacks are absent."""
    names = _Headers(df)
    out = {}
    for col in table.values():
        h = names.find(col.headers)
        if h is not None:
            out[col.name] = h
    return out


class _Headers:
    """A frame's column names, read once for many look-ups (a kernel file is matched
    against ~150 counters; iterating a pandas column index costs per name each time)."""

    def __init__(self, df):
        # (a pandas frame, or a pyarrow Table, whose `columns` are its arrays)
        names = getattr(df, "column_names", None)
        self.names = list(names if names is not None else df.columns)
        self.exact = set(self.names)
        self._lower: dict[str, str] | None = None

    def find(self, headers) -> str | None:
        for h in headers:
            if h in self.exact:
                return h
        if self._lower is None:
            self._lower = {c.lower(): c for c in self.names}
        for h in headers:
            if h.lower() in self._lower:
                return self._lower[h.lower()]
        return None


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

# --------------------------------------------------------------------------- MindSpore data pipeline
# minddata files of MindSpore <= 2.3 profiler*/ dirs and of 2.x ASCEND_PROFILER_OUTPUT
# (docs/formats.md §2.22, §2.23; readers/minddata.py).

MINDDATA_PIPELINE_RAW = _table(
    ("op_id", ("op_id",), "int", REQUIRED),
    ("op_type", ("op_type",), "text", REQUIRED),
    ("num_workers", ("num_workers",), "int"),
    ("queue_sizes", ("output_queue_size",), "text"),  # "[10, 20, 30]"
    ("queue_avg_size", ("output_queue_average_size",), "float"),
    ("queue_capacity", ("output_queue_length",), "int"),
    ("queue_usage_rate", ("output_queue_usage_rate",), "float"),  # a fraction 0-1
    ("parent_id", ("parent_id",), "int"),
    ("children_ids", ("children_id", "children_ids"), "text"),  # "[2, 3]"
)

# MindSpore 2.x dataset.csv (MST ms_dataset_viewer.py); the unit header was written with and
# without a space.
DATASET = _table(
    ("operation", ("Operation",), "text", REQUIRED),
    ("stage", ("Stage",), "text"),
    ("occurrences", ("Occurrences",), "int"),
    ("avg_us", ("Avg. time(us)", "Avg. time (us)", "Avg time(us)"), "float"),
    ("custom_info", ("Custom Info",), "text"),
)

# data_preprocess.csv (msprof aicpu): only the GetNext rows matter to the pipeline (the
# chip-side dequeue of each batch). Older CANN wrote ms columns (docs/formats.md §2.13).
DATA_PREPROCESS = _table(
    ("node", ("Node", "Op Name", "op_name"), "text", REQUIRED),
    ("ts_us", ("Timestamp(us)", "Start Time(us)"), "us"),
    ("total_us", ("Total_time(us)", "Total Time(us)"), "float"),
    ("total_ms", ("Total_time(ms)", "Total Time(ms)"), "float"),
)

# --------------------------------------------------------------------------- graph mode
# Step phases, op-type / API statistics and AI CPU tasks (docs/formats.md §2.9, §2.10, §2.13,
# §2.21, §2.23).

# The phase points of step_trace_raw (10 ns ticks); reduce segments are the
# `stream_{s}_parallel_{k}[_start_point|_end_point]` columns, found by pattern.
STEP_TRACE_RAW_POINTS = _table(
    ("step", ("step_num",), "int", REQUIRED),
    ("start", ("start_point",), "ticks", REQUIRED),
    ("end", ("end_point",), "ticks", REQUIRED),
    ("fp", ("fp_point", "fp"), "ticks"),
    ("bp", ("bp_point",), "ticks"),
)

# msprof step_trace_*.csv points; `Reduce Start(us)` / `Reduce Duration(us)` pairs repeat
# (pandas names the repeats `.1`, `.2`, ...).
MSPROF_STEP_TRACE_POINTS = _table(
    ("step", ("Iteration ID",), "int", REQUIRED),
    ("model", ("Model ID",), "text"),
    ("fp_start", ("FP Start(us)", "FP Start"), "us"),
    ("bp_end", ("BP End(us)", "BP End"), "us"),
    ("end", ("Iteration End(us)", "Iteration End"), "us"),
    ("total", ("Iteration Time(us)", "Iteration Time"), "us"),
    ("data_aug", ("Data Aug Bound(us)", "Data Aug Bound"), "us"),
)

# op_statistic.csv / op_statistic_*.csv (µs).
OP_STATISTIC = _table(
    ("type", ("OP Type", "Op Type"), "text", REQUIRED),
    ("core_type", ("Core Type", "Task Type"), "text"),
    ("calls", ("Count",), "int"),
    ("total", ("Total Time(us)",), "us"),
    ("min", ("Min Time(us)",), "us"),
    ("avg", ("Avg Time(us)",), "us"),
    ("max", ("Max Time(us)",), "us"),
    ("ratio", ("Ratio(%)",), "float"),
)

# api_statistic.csv / api_statistic_*.csv (µs).
API_STATISTIC = _table(
    ("name", ("API Name",), "text", REQUIRED),
    ("level", ("Level",), "text"),
    ("total", ("Time(us)",), "us"),
    ("calls", ("Count",), "int"),
    ("avg", ("Avg(us)",), "us"),
    ("min", ("Min(us)",), "us"),
    ("max", ("Max(us)",), "us"),
)

# MindSpore <= 2.3 aicore_intermediate_{id}_type.csv: per type total (ms), count, percent.
AICORE_TYPE_STATS = _table(
    ("type", ("kernel_type", "op_type"), "text", REQUIRED),
    ("total", ("total_time",), "ms"),
    ("calls", ("execution_frequency",), "int"),
    ("percent", ("percent",), "float"),
)

# AI CPU tasks: data_preprocess.csv / msprof aicpu_*.csv (µs, older CANN ms).
AICPU_TASKS = _table(
    ("name", ("Node", "Op Name"), "text", REQUIRED),
    ("start", ("Timestamp(us)",), "us"),
    ("total_us", ("Total_time(us)", "Total Time(us)"), "us"),
    ("total_ms", ("Total_time(ms)",), "ms"),
    ("compute_us", ("Compute_time(us)",), "us"),
    ("compute_ms", ("Compute_time(ms)",), "ms"),
    ("stream", ("Stream ID",), "int"),
)

# MindSpore <= 2.3 aicpu_intermediate_{id}.csv (ms; run_start / run_end raw µs; the 6-column
# pre-2021 variant has no execution_time).
LEGACY_AICPU_TASKS = _table(
    ("name", ("op_type", "kernel_type"), "text", REQUIRED),
    ("start", ("run_start",), "us"),
    ("total_ms", ("total_time",), "ms"),
    ("compute_ms", ("execution_time",), "ms"),
)

# --------------------------------------------------------------------------- AI Core PMU counters
# kernel_details / op_summary columns of the `aic_metrics` sets (docs/formats.md §2.3, PMU).
# A counter is written once per core kind: `aic_*` for the AI Core (cube side), `aiv_*` for
# the vector core; Ascend 910 (no vector core) wrote the AI Core ones without a prefix
# (`mac_ratio`, `total_cycles`). Units are in the header (`(us)`, `(GB/s)`, `(KB)`) or absent
# in older exports. A ratio written with `(%)` is in percent and is scaled to 0..1.
# In the model each counter is one float64 column `pmu_{aic|aiv}_{stem}` (unit dropped from
# the name, kept in `PmuCounter.unit`); a cell without a number (`N/A` on tasks too long for
# the counters and on tasks of other cores, or empty) is NaN and counted in
# `ProfileMeta.pmu_na_cells`.

PMU_SETS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    # (set name, its (stem, unit) rows); unit "" = a count or a 0..1 ratio
    ("PipeUtilization", (
        ("time", "us"), ("total_cycles", ""),
        ("vec_time", "us"), ("vec_ratio", ""), ("mac_time", "us"), ("mac_ratio", ""),
        ("scalar_time", "us"), ("scalar_ratio", ""), ("fixpipe_time", "us"),
        ("fixpipe_ratio", ""), ("mte1_time", "us"), ("mte1_ratio", ""),
        ("mte2_time", "us"), ("mte2_ratio", ""), ("mte3_time", "us"), ("mte3_ratio", ""),
        ("icache_miss_rate", ""))),
    ("ArithmeticUtilization", (
        ("mac_fp16_ratio", ""), ("mac_int8_ratio", ""), ("vec_fp32_ratio", ""),
        ("vec_fp16_ratio", ""), ("vec_int32_ratio", ""), ("vec_misc_ratio", ""),
        ("cube_fops", ""), ("vector_fops", ""))),
    ("Memory", (
        ("ub_read_bw", "GB/s"), ("ub_write_bw", "GB/s"), ("l1_read_bw", "GB/s"),
        ("l1_write_bw", "GB/s"), ("l2_read_bw", "GB/s"), ("l2_write_bw", "GB/s"),
        ("main_mem_read_bw", "GB/s"), ("main_mem_write_bw", "GB/s"))),
    ("MemoryL0", (
        ("l0a_read_bw", "GB/s"), ("l0a_write_bw", "GB/s"), ("l0b_read_bw", "GB/s"),
        ("l0b_write_bw", "GB/s"), ("l0c_read_bw", "GB/s"), ("l0c_write_bw", "GB/s"),
        ("l0c_read_bw_cube", "GB/s"), ("l0c_write_bw_cube", "GB/s"))),
    ("MemoryUB", (
        ("ub_read_bw_vector", "GB/s"), ("ub_write_bw_vector", "GB/s"),
        ("ub_read_bw_scalar", "GB/s"), ("ub_write_bw_scalar", "GB/s"))),
    ("ResourceConflictRatio", (
        ("vec_bankgroup_cflt_ratio", ""), ("vec_bank_cflt_ratio", ""),
        ("vec_resc_cflt_ratio", ""))),
    ("MemoryAccess", (
        ("read_main_memory_datas", "KB"), ("write_main_memory_datas", "KB"),
        ("gm_to_l1_datas", "KB"), ("l0c_to_l1_datas", "KB"), ("l0c_to_gm_datas", "KB"),
        ("gm_to_ub_datas", "KB"), ("ub_to_gm_datas", "KB"))),
    ("L2Cache", (
        ("write_cache_hit", ""), ("write_cache_miss_allocate", ""),
        *((f"r{n}_read_cache_hit", "") for n in range(4)),
        *((f"r{n}_read_cache_miss_allocate", "") for n in range(4)),
        # Ascend 950 names
        ("read_local_l2_hit", ""), ("read_local_l2_miss", ""), ("read_local_l2_victim", ""),
        ("write_local_l2_hit", ""), ("write_local_l2_miss", ""),
        ("write_local_l2_victim", ""))),
)
PMU_CORES = ("aic", "aiv")
# Pipes of PipeUtilization a kernel can be bound by (msprof-analyze's Operator No Bound
# checks these six `*_ratio` columns).
PIPES = ("mac", "vec", "scalar", "mte1", "mte2", "mte3")


def pipe_ratio_columns(pipe: str) -> tuple[str, ...]:
    """The model columns of one pipe's ratio (AI Core and vector core)."""
    return tuple(f"pmu_{core}_{pipe}_ratio" for core in PMU_CORES)


# Counters of L2 cache hits and misses (hit rate = hit / (hit + miss)).
_L2 = dict(PMU_SETS)["L2Cache"]
L2_HIT_STEMS = tuple(s for s, _ in _L2 if s.endswith("_hit"))
L2_MISS_STEMS = tuple(s for s, _ in _L2 if s.endswith("_miss_allocate") or s.endswith("_miss"))


@dataclasses.dataclass(frozen=True)
class PmuCounter:
    name: str                  # model column, e.g. pmu_aic_mac_ratio
    headers: tuple[str, ...]   # accepted headers, preference order
    unit: str                  # us | GB/s | KB | % | "" (count or 0..1 ratio)
    metric_set: str            # the aic_metrics set that writes it
    # headers whose cells are percent of a 0..1 ratio (divided by 100 when read)
    percent_headers: tuple[str, ...] = ()
    kind: str = "float"


def _pmu_counters() -> dict[str, PmuCounter]:
    out: dict[str, PmuCounter] = {}
    for set_name, rows in PMU_SETS:
        for stem, unit in rows:
            for core in PMU_CORES:
                # the AI Core's busy time is `aicore_time(us)`, the vector core's `aiv_time(us)`
                base = "aicore_time" if (core, stem) == ("aic", "time") else f"{core}_{stem}"
                names = [base]
                if core == "aic":
                    names.append(stem if stem != "time" else "aicore_time")
                headers: list[str] = []
                percent: list[str] = []
                for n in dict.fromkeys(names):
                    if unit:
                        headers += [f"{n}({unit})", n]
                    elif stem.endswith("_ratio") or stem.endswith("_rate"):
                        headers += [n, f"{n}(%)"]
                        percent.append(f"{n}(%)")
                    else:
                        headers.append(n)
                name = f"pmu_{core}_{stem}"
                out[name] = PmuCounter(name, tuple(headers), unit, set_name, tuple(percent))
    out["pmu_memory_bound"] = PmuCounter(  # msprof's own mte2 / max(mac, vec) per task
        "pmu_memory_bound", ("memory_bound",), "", "PipeUtilization")
    out["pmu_cube_utilization"] = PmuCounter(
        "pmu_cube_utilization", ("cube_utilization(%)", "cube_utilization"), "%",
        "PipeUtilization")
    return out


PMU_COUNTERS: dict[str, PmuCounter] = _pmu_counters()
_pmu_by_header = {h.lower(): c.name for c in PMU_COUNTERS.values() for h in c.headers
                  if h not in c.percent_headers}


def pmu_column(metric: str) -> str | None:
    """The model column of a PMU metric named as a CSV header names it (the SQLite export's
    TASK_PMU_INFO metric strings, e.g. `aic_mac_ratio`), or None for an unknown metric."""
    return _pmu_by_header.get(metric.strip().lower())


def resolve_pmu(df: pd.DataFrame) -> dict[str, str]:
    """{PMU column name: the header `df` has for it} for every counter the file carries."""
    out = {}
    names = _Headers(df)
    for counter in PMU_COUNTERS.values():
        h = names.find(counter.headers)
        if h is not None:
            out[counter.name] = h
    return out


def parse_numbers(s, to_float) -> np.ndarray:
    """`to_float(s)`, by one Arrow cast when every cell is a plain number (the usual case:
    the CSV reader already made N/A and not-finite cells missing); a kernel file carries
    dozens of counter columns, and to_float's pandas parse cost ~1 ms each. A cell the cast
    refuses (spaces, junk) sends the whole column to to_float."""
    import pyarrow as pa

    if isinstance(s, pa.ChunkedArray):  # a column of `ReadContext.csv_table`
        arrow = s
        s = None
    elif s.dtype.kind in "fiu":
        return to_float(s)
    else:
        arrow = pa.array(s, from_pandas=True)

    def parsed_by_pandas() -> np.ndarray:  # (the text column as `read_csv` makes it)
        from .tolerant import text_series

        return to_float(s if s is not None else text_series(arrow))

    try:
        values = arrow.cast(pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
        return parsed_by_pandas()
    out = np.array(values.to_numpy(zero_copy_only=False), dtype=np.float64)
    if (np.signbit(out) & (out == 0)).any():
        return parsed_by_pandas()  # "-0" is an integer 0 to pandas, -0.0 to Arrow
    out[np.isinf(out)] = np.nan  # as to_float: "inf" is no measurement
    return out


def read_pmu(df: pd.DataFrame) -> tuple[dict, dict[str, int], set[str]]:
    """The PMU counters of a kernel_details / op_summary frame.

    Returns ({column: float64 array}, {column: cells without a number (N/A or empty)},
    the headers used). A counter whose cells are all N/A is still a column (all NaN)."""
    from .us_text import to_float  # readers' number parsing; columns stays import-light

    cols: dict = {}
    na: dict[str, int] = {}
    used: set[str] = set()
    for name, header in resolve_pmu(df).items():
        values = parse_numbers(df[header], to_float)
        # the CSV reader already turned N/A (and empty) cells into missing values
        bad = int(np.isnan(values).sum())
        if header in PMU_COUNTERS[name].percent_headers or (
                header.lower().endswith("(%)") and PMU_COUNTERS[name].unit != "%"):
            values = values / 100.0
        cols[name] = values
        if bad:
            na[name] = bad
        used.add(header)
    return cols, na, used
