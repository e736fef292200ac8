"""SQLite export schemas as data: for every table the db reader takes, its canonical columns
and the column names each has been written under across producers and versions
(docs/formats.md §2.20), like `columns.py` does for CSV headers.

A table maps a canonical column to the accepted column names in preference order (the first
one `PRAGMA table_info` reports wins, compared ignoring case) and a kind, which decides the
SQL expression `sqlite_export` selects for it:

- ns:   integer ns; some writers declare the column TEXT (torch_npu's PYTORCH_API startNs), so
        it is CAST to INTEGER, which is exact for decimal text;
- int:  integer; the invalid markers below become NULL;
- str:  an id into STRING_IDS (msprof / torch_npu) or, where a writer stored the text itself,
        the text: both are accepted per row (`typeof`);
- text: plain text;
- real: a number as written;
- bytes: bytes, read as MiB (/ 1024**2);
- kb:   bytes, read as KB (/ 1024).
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class DbColumn:
    name: str
    columns: tuple[str, ...]
    kind: str = "int"
    # A table without this column cannot be used (the error names it).
    required: bool = False


DbTable = dict[str, DbColumn]
REQUIRED = True

# Values writers use for "no value": DB_INVALID_VALUE (uint32 max), uint64 max (stored by
# SQLite as a REAL, so compared as >= 2**63), and -1 for an invalid connection.
INVALID_INT = (4294967295, -1)
INVALID_FROM = 2 ** 63


def _table(*rows: tuple) -> DbTable:
    return {r[0]: DbColumn(r[0], tuple(r[1]), *r[2:]) for r in rows}


def resolve(present: dict[str, str], table: DbTable) -> dict[str, str]:
    """{canonical: the column the db has} for the columns of `table` the db table has
    (`present`: lower-case name -> name as declared, from PRAGMA table_info)."""
    out = {}
    for col in table.values():
        for c in col.columns:
            if c.lower() in present:
                out[col.name] = present[c.lower()]
                break
    return out


def missing_required(present: dict[str, str], table: DbTable) -> list[str]:
    found = resolve(present, table)
    return [c.columns[0] for c in table.values() if c.required and c.name not in found]


# --------------------------------------------------------------------------- msprof / CANN tables
# (also in torch_npu and MindSpore dbs: torch_npu moves msprof's db and adds its own tables)

STRING_IDS = _table(("id", ("id",), "int", REQUIRED), ("value", ("value",), "text", REQUIRED))

META_DATA = _table(("name", ("name",), "text", REQUIRED), ("value", ("value",), "text", REQUIRED))

TASK = _table(
    ("start_ns", ("startNs",), "ns", REQUIRED),
    ("end_ns", ("endNs",), "ns", REQUIRED),
    ("device_id", ("deviceId",), "int"),
    ("connection_id", ("connectionId",), "int"),
    ("global_task_id", ("globalTaskId",), "int", REQUIRED),
    ("task_type", ("taskType",), "str"),
    ("stream_id", ("streamId",), "int"),
    ("task_id", ("taskId",), "int"),
)

# `blockDim`/`mixBlockDim` and `waitNs` in CANN <= 8.3 dbs; `blockNum` since.
COMPUTE_TASK_INFO = _table(
    ("global_task_id", ("globalTaskId",), "int", REQUIRED),
    ("name", ("name",), "str", REQUIRED),
    ("type", ("opType",), "str"),
    ("core_type", ("taskType",), "str"),
    ("block_dim", ("blockNum", "blockDim"), "int"),
    ("input_shapes", ("inputShapes",), "str"),
    ("input_dtypes", ("inputDataTypes",), "str"),
    ("output_shapes", ("outputShapes",), "str"),
    ("wait_ns", ("waitNs",), "ns"),
)

# Newer CANN adds timestampNs: a globalTaskId can be reused by several TASK rows, and the
# PMU rows of one run of it are those whose time falls in that TASK's [startNs, endNs].
TASK_PMU_INFO = _table(
    ("global_task_id", ("globalTaskId",), "int", REQUIRED),
    ("metric", ("name",), "str", REQUIRED),
    ("value", ("value",), "real", REQUIRED),
    ("timestamp_ns", ("timestampNs",), "ns"),
)

COMMUNICATION_OP = _table(
    ("name", ("opName",), "str", REQUIRED),
    ("start_ns", ("startNs",), "ns", REQUIRED),
    ("end_ns", ("endNs",), "ns", REQUIRED),
    ("connection_id", ("connectionId",), "int"),
    ("group", ("groupName",), "str"),
    ("op_id", ("opId",), "int"),
    ("type", ("opType",), "str"),
    ("device_id", ("deviceId",), "int"),
)

CANN_API = _table(
    ("start_ns", ("startNs",), "ns", REQUIRED),
    ("end_ns", ("endNs",), "ns", REQUIRED),
    ("level", ("type",), "int"),
    ("global_tid", ("globalTid",), "int"),
    ("connection_id", ("connectionId",), "int"),
    ("name", ("name",), "str", REQUIRED),
)

NPU_MODULE_MEM = _table(
    ("module", ("moduleId",), "int", REQUIRED),
    ("ts_ns", ("timestampNs",), "ns", REQUIRED),
    ("reserved_mb", ("totalReserved",), "bytes", REQUIRED),
    ("device_id", ("deviceId",), "int"),
)

# NPU_MEM: app / device memory samples (bytes); msprof's npu_mem CSV names the two "APP" and
# "Device".
NPU_MEM = _table(
    ("component", ("type",), "str", REQUIRED),
    ("ddr_mb", ("ddr",), "bytes"),
    ("hbm_mb", ("hbm",), "bytes"),
    ("ts_ns", ("timestampNs",), "ns", REQUIRED),
    ("device_id", ("deviceId",), "int"),
)
NPU_MEM_COMPONENTS = {"app": "APP", "device": "Device"}

ENUM_MODULE = _table(("id", ("id",), "int", REQUIRED), ("name", ("name",), "text", REQUIRED))

RANK_DEVICE_MAP = _table(("rank", ("rankId",), "int", REQUIRED),
                         ("device_id", ("deviceId",), "int"))

# --------------------------------------------------------------------------- framework tables
# torch_npu TableColumnsManager; MindSpore writes the same tables.

PYTORCH_API = _table(
    ("start_ns", ("startNs",), "ns", REQUIRED),
    ("end_ns", ("endNs",), "ns", REQUIRED),
    ("global_tid", ("globalTid",), "int"),
    ("connection_id", ("connectionId",), "int"),
    ("name", ("name",), "str", REQUIRED),
    ("input_shapes", ("inputShapes",), "str"),
    ("callchain_id", ("callchainId",), "int"),
    ("api_type", ("type",), "int"),
)
# PYTORCH_API.type: 50001 op, 50002 queue, 50003 python trace, 50004 mstx (ENUM_API_TYPE).
API_TYPE_OP = 50001

CONNECTION_IDS = _table(("id", ("id",), "int", REQUIRED),
                        ("connection_id", ("connectionId",), "int", REQUIRED))

PYTORCH_CALLCHAINS = _table(
    ("id", ("id",), "int", REQUIRED),
    ("stack", ("stack",), "str", REQUIRED),
    ("depth", ("stackDepth",), "int", REQUIRED),
)

STEP_TIME = _table(("step", ("id",), "int", REQUIRED),
                   ("start_ns", ("startNs",), "ns", REQUIRED),
                   ("end_ns", ("endNs",), "ns", REQUIRED))

MEMORY_RECORD = _table(
    ("component", ("component",), "str", REQUIRED),
    ("ts_ns", ("timestamp", "timestampNs"), "ns", REQUIRED),
    ("allocated_mb", ("totalAllocated",), "bytes"),
    ("reserved_mb", ("totalReserved",), "bytes"),
    ("active_mb", ("totalActive",), "bytes"),
    ("device_id", ("deviceId",), "int"),
)

OP_MEMORY = _table(
    ("name", ("name",), "str", REQUIRED),
    ("size_kb", ("size",), "kb", REQUIRED),
    ("alloc_ns", ("allocationTime",), "ns", REQUIRED),
    ("release_ns", ("releaseTime",), "ns"),
    ("duration_ns", ("duration",), "ns"),
    ("alloc_total_allocated_mb", ("allocationTotalAllocated",), "bytes"),
    ("alloc_total_reserved_mb", ("allocationTotalReserved",), "bytes"),
    ("device_id", ("deviceId",), "int"),
)

# --------------------------------------------------------------------------- analysis.db
# torch_npu analysis.db / MindSpore communication_analyzer.db: the step_trace_time.csv and
# communication*.json numbers (times in ms, sizes in MB, as the text files).

STEP_TRACE_TIME = _table(
    ("device_id", ("deviceId",), "int"),
    ("step", ("step",), "text"),
    ("bd_computing", ("computing",), "real", REQUIRED),
    ("bd_communication_not_overlapped", ("communication_not_overlapped",), "real", REQUIRED),
    ("bd_overlapped", ("overlapped",), "real"),
    ("communication_ns", ("communication",), "real"),
    ("bd_free", ("free",), "real", REQUIRED),
    ("stage_ns", ("stage",), "real"),
    ("bubble_ns", ("bubble",), "real"),
    ("comm_not_overlapped_exclude_receive_ns",
     ("communication_not_overlapped_and_exclude_receive",), "real"),
    ("preparing_ns", ("preparing",), "real"),
)

COMM_ANALYZER_TIME = _table(
    ("name", ("hccl_op_name",), "text", REQUIRED),
    ("group", ("group_name",), "text"),
    ("start_us", ("start_timestamp",), "real"),
    ("elapse_ms", ("elapse_time",), "real", REQUIRED),
    ("transit_ms", ("transit_time",), "real"),
    ("wait_ms", ("wait_time",), "real"),
    ("sync_ms", ("synchronization_time",), "real"),
    ("idle_ms", ("idle_time",), "real"),
    ("step", ("step",), "text"),
    ("kind", ("type",), "text"),
)

COMM_ANALYZER_BANDWIDTH = _table(
    ("name", ("hccl_op_name",), "text", REQUIRED),
    ("group", ("group_name",), "text"),
    ("transport", ("transport_type",), "text", REQUIRED),
    ("transit_size_mb", ("transit_size",), "real", REQUIRED),
    ("step", ("step",), "text"),
    ("kind", ("type",), "text"),
)

COMM_ANALYZER_MATRIX = _table(
    ("op", ("hccl_op_name",), "text", REQUIRED),
    ("group", ("group_name",), "text"),
    ("src_rank", ("src_rank",), "int", REQUIRED),
    ("dst_rank", ("dst_rank",), "int", REQUIRED),
    ("transport", ("transport_type",), "text"),
    ("transit_size_mb", ("transit_size",), "real"),
    ("transit_ms", ("transit_time",), "real"),
    ("bandwidth_gbps", ("bandwidth",), "real"),
    ("step", ("step",), "text"),
    ("kind", ("type",), "text"),
    ("op_name", ("op_name",), "text"),
)

# The db files of each producer (file-name patterns, under the span's output folder).
DB_FILES = {
    "torch_npu": (r"^ascend_pytorch_profiler(?:_\d+)?\.db$", "analysis.db"),
    "mindspore": (r"^ascend_mindspore_profiler(?:_\d+)?\.db$", "communication_analyzer.db"),
    "msprof": (r"^msprof_\d+\.db$", "communication_analyzer.db"),
}

# The text deliverable that, when present, is the source of a model table (text first: the
# db fills only the tables whose text file is absent or gave no rows; docs/formats.md §2.20).
TEXT_SOURCE = {
    "kernels": ("kernel_details.csv",),
    "operators": ("operator_details.csv",),
    "steps": ("step_trace_time.csv",),
    "memory_records": ("memory_record.csv",),
    "memory_allocations": ("operator_memory.csv",),
    "module_memory": ("npu_module_mem.csv",),
    "communication_ops": ("communication.json",),
    "communication_links": ("communication_matrix.json",),
    "slices": ("trace_view.json", "trace_view.json.gz"),
}
