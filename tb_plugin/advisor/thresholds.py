"""Every number the advisor's rules compare against, as data: one table, documented.

Each entry: name, value, unit, what it means, and where the number comes from. Rules read
them through `Thresholds` (`t["aicpu_min_us"]`), never as literals in their code.

Overrides, for a team that wants stricter or looser rules:
- `NPU_PROFILER_ADVISOR_THRESHOLDS=/path/to/file.json`, a JSON object {name: number}, read
  by `load()` (TensorBoard and the `npu-profiler` command both use it), or
- `load({"aicpu_min_us": 50})` / `Thresholds(...)` from Python.
Unknown names and non-numbers are rejected with a message naming the file and the entry.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os

ENV_VAR = "NPU_PROFILER_ADVISOR_THRESHOLDS"


@dataclasses.dataclass(frozen=True)
class Threshold:
    name: str
    value: float
    unit: str
    doc: str
    source: str


_MSPROF = "msprof-analyze advisor"
_GUIDE_PT = "Ascend PyTorch Profiler guide"
_GUIDE_PADDLE = "PaddlePaddle + msprof tuning guide"
_TB = "torch-tb-profiler recommendations"
_OURS = "this plugin (estimate; see the rule's doc string)"
_MS_BOTTLENECK = "MindSpore minddata_analyzer.py (BottleneckAnalyzer)"
_MI_PIPELINE = "MindInsight minddata_pipeline_analyser.py / minddata_pipeline_proposer.py"

TABLE: tuple[Threshold, ...] = (
    # severity from the estimated share of step time a fix would save
    Threshold("severity_high_pct", 10.0, "% of step", "a finding that would save at least this "
              "share of the step time is high severity", _OURS),
    Threshold("severity_medium_pct", 3.0, "% of step", "at least this share is medium; below is "
              "low", _OURS),
    # host_dispatch
    Threshold("dispatch_gap_us", 1000.0, "µs", "a gap between consecutive task-queue Dequeue "
              "events longer than this counts as a dispatch stall", _GUIDE_PT),
    Threshold("dispatch_min_gap_pct", 5.0, "% of step", "fire when the stalls add up to at least "
              "this share of the step time", _OURS),
    Threshold("dispatch_bound_idle_pct", 15.0, "% of step", "without Dequeue gaps: fire when the "
              "device idles waiting for the next launch (dispatch-bound idle) at least this "
              "share of the step time", _OURS),
    Threshold("dispatch_queue_backlog_us", 500.0, "µs", "a median task-queue wait above this "
              "means the task-queue thread (launching) is the bottleneck, not the main thread",
              _OURS),
    # fused_optimizer
    Threshold("fused_optimizer_min_kernels", 20.0, "kernels per step", "an unfused framework "
              "optimizer launching at least this many kernels per step", _OURS),
    Threshold("fused_optimizer_saving", 0.5, "fraction", "share of the optimizer's time a fused "
              "optimizer is assumed to save (impact estimate)", _OURS),
    # transdata
    Threshold("transdata_min_pct", 1.0, "% of device time", "format-conversion kernels taking at "
              "least this share of device time", _OURS),
    # aicpu_ops
    Threshold("aicpu_min_us", 20.0, "µs", "AI_CPU tasks longer than this are reported",
              _MSPROF + " (AICPU checker, _MIN_TASK_DURATION)"),
    # dominant_op_type
    Threshold("dominant_op_pct", 40.0, "% of device time", "one op type above this share of "
              "device time is suspicious", _GUIDE_PADDLE),
    # long_tasks
    Threshold("long_task_us", 1000.0, "µs", "tasks with a Task Duration above this deserve "
              "attention", _GUIDE_PADDLE),
    # op_time_spread
    Threshold("op_spread_ratio", 3.0, "max / mean", "an op type whose longest call is this many "
              "times its mean", _OURS),
    Threshold("op_spread_min_calls", 3.0, "calls", "only op types called at least this often",
              _OURS),
    Threshold("op_spread_min_us", 50.0, "µs", "only when the longest call exceeds the mean by at "
              "least this much", _OURS),
    # task_wait
    Threshold("task_wait_ratio", 10.0, "× median", "a Task Wait Time this many times the "
              "profile's median wait is a spike", _OURS),
    Threshold("task_wait_min_us", 200.0, "µs", "and at least this long", _OURS),
    Threshold("task_wait_min_pct", 2.0, "% of step", "fire when the avoidable spikes add up to "
              "this share of the step time", _OURS),
    # recompilation
    Threshold("recompile_min_count", 20.0, "events", "aclopCompileAndExecute / opCompile events "
              "in the profile", _MSPROF + " (MAX_OP_COMPILE_NUM)"),
    # iteration_gap
    Threshold("iteration_gap_pct", 10.0, "% of step", "device idle between the last task of a "
              "step and the first of the next, as a share of the mean step time", _OURS),
    # straggler / slow_link
    Threshold("straggler_excess_pct", 5.0, "%", "a rank whose computing time per step exceeds "
              "the ranks' median by more than this (used when no collective votes)",
              _MSPROF + " (slow rank, RATIO_THRESHOLD 0.05)"),
    Threshold("straggler_vote_gap_pct", 5.0, "%", "a collective votes for the rank with the "
              "shortest duration only when it is at least this much below the median", _OURS),
    Threshold("straggler_vote_share", 0.2, "fraction", "a rank is a straggler when it got the "
              "vote of at least this share of the collectives compared", _OURS),
    Threshold("slow_link_ratio", 0.5, "fraction", "a link below this fraction of the median "
              "bandwidth of its transport is slow", _OURS),
    # msprof-analyze schedule checkers
    Threshold("sync_stream_ratio", 0.5, "fraction", "share of Node@launch events followed by "
              "aclrtSynchronizeStream", _MSPROF + " (min_co_occurrence_ratio)"),
    Threshold("gc_min_us", 1000.0, "µs", "Python GC pauses at least this long",
              _MSPROF + " (gc_threshold)"),
    Threshold("memory_ops_min_us", 10000.0, "µs", "total time of aclMallocMemInner / aclrtFree "
              "/ aclrtFreePhysical", _MSPROF + " (max_total_duration)"),
    Threshold("aclnn_cache_limit", 10000.0, "entries", "ACLNN_CACHE_LIMIT below this (or unset) "
              "on a host-bound profile", _MSPROF + " (environment checker)"),
    Threshold("host_bound_free_pct", 10.0, "% of step", "device free time above which a profile "
              "counts as host-bound for the environment checker", _OURS),
    # kineto (torch-tb-profiler)
    Threshold("dataloader_pct", 5.0, "% of step", "DataLoader time above this share of the step",
              _TB),
    Threshold("communication_pct", 10.0, "% of step", "communication time above this share of "
              "the step", _TB),
    Threshold("low_device_util_pct", 50.0, "% of step", "device busy (kernel time) below this "
              "share of the step", _TB),
    # operator_no_bound, cube_efficiency, vector_efficiency (AI Core PMU counters)
    Threshold("operator_bound_ratio", 0.8, "ratio", "a kernel with no pipe ratio (mac, vec, "
              "scalar, mte1, mte2, mte3) above this is bound by no pipe",
              _MSPROF + " (config.ini operator_bound_ratio)"),
    Threshold("no_bound_min_us", 20.0, "µs", "only calls longer than this are checked for "
              "operator_no_bound", _MSPROF + " (Operator No Bound, _MIN_TASK_DURATION)"),
    Threshold("cube_mac_ratio", 0.8, "ratio", "a MatMul kernel with mean mac ratio at least "
              "this is cube-bound", _MSPROF + " (aicore_performance.yaml)"),
    Threshold("cube_mte2_ratio", 0.95, "ratio", "a MatMul kernel with mean mte2 ratio at least "
              "this is memory-bound", _MSPROF + " (aicore_performance.yaml)"),
    Threshold("vector_sum_ratio", 0.9, "ratio", "a vector kernel with vec + mte2 + mte3 at "
              "least this is bound", _MSPROF + " (aicore_performance.yaml)"),
    Threshold("vector_pipe_ratio", 0.7, "ratio", "a vector kernel with vec, mte2 or mte3 at "
              "least this is bound by that pipe", _MSPROF + " (aicore_performance.yaml)"),
    Threshold("core_perf_min_pct", 1.0, "% of device time", "cube / vector kernels below this "
              "share of device time are not checked for efficiency",
              _MSPROF + " (AI Core Performance, vector selection)"),
    Threshold("amp_min_gemm_pct", 10.0, "% of device time", "single-precision GEMM / convolution "
              "kernels above this share of device time while no half-precision kernel runs", _OURS),
    # data_pipeline (MindSpore MindData; analysis/data_pipeline.py)
    Threshold("pipeline_cpu_high_pct", 75.0, "% per worker", "an op whose CPU per worker is "
              "above this is CPU-bound: more num_parallel_workers help", _MS_BOTTLENECK),
    Threshold("pipeline_cpu_low_pct", 20.0, "% per worker", "an op whose CPU per worker is below "
              "this (with more than one worker) is not CPU-bound", _MS_BOTTLENECK),
    Threshold("pipeline_leaf_queue_low_pct", 50.0, "% of capacity", "a leaf (source) op whose "
              "output queue is used less than this reads too slowly", _MS_BOTTLENECK),
    Threshold("pipeline_input_queue_low_pct", 10.0, "% of capacity", "an op whose input queue is "
              "used less than this is starved by its children", _MS_BOTTLENECK),
    Threshold("pipeline_queue_diff_pct", 50.0, "percentage points", "input-queue usage above "
              "output-queue usage by more than this: the op consumes too slowly", _MS_BOTTLENECK),
    Threshold("pipeline_device_input_empty_pct", 60.0, "% of samples", "the queue feeding the "
              "device queue op empty more often than this: the host cannot keep up",
              _MS_BOTTLENECK),
    Threshold("pipeline_queue_high_pct", 80.0, "% of capacity", "every non-root queue at least "
              "this full: the root op is the suspect", _MI_PIPELINE),
    Threshold("pipeline_queue_low_pct", 60.0, "% of capacity", "a leaf op whose output queue is "
              "used less than this is a suspect", _MI_PIPELINE),
    Threshold("pipeline_child_diff_pct", 10.0, "percentage points", "a child's queue fuller than "
              "its parent's by more than this: the parent is a suspect", _MI_PIPELINE),
    Threshold("device_queue_empty_pct", 30.0, "% of batches", "the device (host to device) queue "
              "empty in more than this share of batches: data processing is the bottleneck",
              "MindInsight minddata_analyser.py (DEVICE_QUEUE_EMPTY_WARNING_THRESHOLD)"),
    Threshold("host_cpu_saturated_pct", 80.0, "% of CPU", "host CPU busy (100 - idle) above "
              "this: the data pipeline may be starved of CPU",
              "MindInsight minddata_proposer.py (CPU utilization rule)"),
)

DEFAULTS: dict[str, float] = {t.name: t.value for t in TABLE}


class Thresholds:
    """The effective thresholds (defaults with overrides applied)."""

    def __init__(self, overrides: dict | None = None, origin: str = "argument"):
        values = dict(DEFAULTS)
        for name, value in (overrides or {}).items():
            if name not in DEFAULTS:
                raise ValueError(f"{origin}: unknown advisor threshold {name!r}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value):
                raise ValueError(f"{origin}: threshold {name!r} must be a finite number")
            values[name] = float(value)
        self._values = values
        self.overridden = sorted(n for n in values if values[n] != DEFAULTS[n])

    def __getitem__(self, name: str) -> float:
        return self._values[name]

    def fingerprint(self) -> str:
        """Short hash of the values, part of the advice cache key."""
        doc = json.dumps(sorted(self._values.items())).encode()
        return hashlib.sha256(doc).hexdigest()[:12]

    def to_json(self) -> list[dict]:
        return [{**dataclasses.asdict(t), "value": self._values[t.name],
                 "default": t.value} for t in TABLE]


def load(overrides: dict | None = None) -> Thresholds:
    """Defaults, then the JSON file named by $NPU_PROFILER_ADVISOR_THRESHOLDS, then
    `overrides`."""
    merged: dict = {}
    origin = "argument"
    path = os.environ.get(ENV_VAR)
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: cannot read advisor thresholds: {exc}") from None
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: advisor thresholds must be a JSON object")
        Thresholds(doc, origin=path)  # validate with the file's name in the message
        merged.update(doc)
        origin = path
    if overrides:
        merged.update(overrides)
    return Thresholds(merged, origin=origin)
