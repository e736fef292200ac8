"""The data pipeline view (MindSpore MindData): the op graph with its queues, the device and
get_next queues, host CPU, and the bottleneck op by MindSpore's and MindInsight's rules
(each threshold, with the source it comes from, is a row of advisor/thresholds.py).

Input: the `pipeline_*` tables of readers/minddata.py. Thresholds come from the advisor's
table (advisor/thresholds.py, overridable), passed in by the caller as a mapping.

Rules, in the order they decide the bottleneck:
1. MindSpore's BottleneckAnalyzer (needs per-op CPU): walk the ops from the highest id (the
   source) to the root, skipping the device queue and the ops that are not multi-threaded;
   the last op matching wins: CPU per worker above `pipeline_cpu_high_pct` (CPU-bound), or
   below `pipeline_cpu_low_pct` with an abnormal queue (input queue usage under
   `pipeline_input_queue_low_pct`, or output above input by `pipeline_queue_diff_pct`).
2. MindInsight's queue filter (queues only): an op whose child's queue is fuller than its own
   by more than `pipeline_child_diff_pct` points, a leaf whose queue is used less than
   `pipeline_queue_low_pct`; when every non-root queue is at least `pipeline_queue_high_pct`
   full, only the root. Of the suspects the emptiest queue wins (then the lower id).
3. No op named, but the device queue is empty in more than `device_queue_empty_pct` of the
   batches: the host pipeline as a whole (op_id null).
Every rule that matched is listed in `details.findings`, whichever decides.
"""
from __future__ import annotations

import math
import re
from typing import Mapping

import numpy as np

from ..lazy import pd
from ..model import Profile

TABLES = ("pipeline_ops", "pipeline_queues", "pipeline_summary")

# Ops MindSpore's analyzer does not judge: they have no workers of their own to tune.
NOT_MULTITHREADED = frozenset({"Barrier", "Concat", "EpochCtrl", "Rename", "Repeat", "Shuffle",
                               "Skip", "Take", "Zip"})
_DEVICE_QUEUE = frozenset({"DeviceQueue", "DataQueue"})

ADVICE_WORKERS = "raise num_parallel_workers of this op"
ADVICE_TRANSFORMS = ("do not mix Python and C++ transforms in one map (each switch costs a "
                     "copy and the GIL); prefer the C++ vision/text transforms")
ADVICE_SINK = "train with dataset_sink_mode=True so batches are pushed to the device ahead"
ADVICE_PREFETCH = "raise the prefetch size (ds.config.set_prefetch_size) so queues stay full"
ADVICE_SOURCE = ("read faster: more num_parallel_workers for the dataset, and a faster "
                 "format (MindRecord) or storage")
ADVICE_PYTHON = "optimise the Python function (GeneratorDataset / pyfunc) or move it to C++ ops"


def available(profile: Profile) -> bool:
    return any(profile.has(t) for t in TABLES)


def base_type(op_type: str) -> str:
    """`MapOp` -> `Map` (MindSpore wrote both spellings)."""
    t = str(op_type)
    return t[:-2] if t.endswith("Op") and len(t) > 2 else t


def _f(v) -> float | None:
    """JSON-safe float (NaN / NA -> None)."""
    if v is None or v is pd.NA:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _i(v) -> int | None:
    x = _f(v)
    return int(x) if x is not None else None


def _ids(text) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", str(text or ""))]


def ops(profile: Profile) -> list[dict]:
    """The ops of the pipeline graph, root first (ascending id)."""
    df = profile.table("pipeline_ops")
    if not len(df):
        return []
    df = df.sort_values("op_id", kind="stable")
    out = []
    for r in df.itertuples(index=False):
        workers = _i(r.num_workers)
        cpu = _f(r.cpu_pct)
        out.append({
            "op_id": int(r.op_id), "op_type": str(r.op_type), "num_workers": workers,
            "parent_id": _i(r.parent_id), "children_ids": _ids(r.children_ids),
            "queue_avg_size": _f(r.queue_avg_size), "queue_capacity": _i(r.queue_capacity),
            "queue_usage_pct": _f(r.queue_usage_pct), "queue_empty_pct": _f(r.queue_empty_pct),
            "cpu_pct_per_worker": (cpu / workers if cpu is not None and workers else cpu),
        })
    return out


def _queue_stats(q: pd.DataFrame, full: bool) -> dict | None:
    sizes = q[q["record"].astype(str) == "size"]
    if not len(sizes):
        return None
    v = sizes["value"].to_numpy(dtype=np.float64)
    n = int(len(v))
    empty = int((v == 0).sum())
    out = {"batches": n, "empty": empty}
    if full:
        cap = sizes["capacity"].to_numpy(dtype=np.float64, na_value=np.nan)
        out["full"] = int(((v == cap) & ~np.isnan(cap)).sum())
    out["empty_pct"] = 100.0 * empty / n
    return out


def queues(profile: Profile) -> tuple[dict | None, dict | None, dict | None, str | None]:
    """(device_queue, get_next, batch_times, device queue source) as MindInsight counts them:
    a size record of 0 is an empty batch, one equal to the capacity a full one; times are the
    means of the recorded batches (ms)."""
    q = profile.table("pipeline_queues")
    name = q["queue"].astype(str)
    dq_rows = q[name.isin(["device_queue", "dataset_iterator"])]
    source = str(dq_rows["queue"].astype(str).iloc[0]) if len(dq_rows) else None
    gn_rows = q[name == "get_next"]
    times = {}
    for key, rows, record in (("get_ms", dq_rows, "get_ms"), ("push_ms", dq_rows, "push_ms"),
                              ("batch_ms", dq_rows, "batch_ms"),
                              ("get_next_wait_ms", gn_rows, "wait_ms")):
        v = rows.loc[rows["record"].astype(str) == record, "value"].to_numpy(dtype=np.float64)
        v = v[~np.isnan(v)]
        times[key] = float(v.mean()) if len(v) else None
    if not len(dq_rows):  # MindSpore 2.x: its summary's per-batch averages
        figures = summary_figures(profile)
        for key, fig in (("get_ms", "per_pipeline_time"), ("push_ms", "per_push_queue_time"),
                         ("batch_ms", "per_batch_time")):
            times[key] = figures.get(fig)
    batch_times = times if any(v is not None for v in times.values()) else None
    return _queue_stats(dq_rows, True), _queue_stats(gn_rows, False), batch_times, source


def host_cpu(profile: Profile) -> dict | None:
    c = profile.table("pipeline_cpu")
    dev = c[c["scope"].astype(str) == "device"] if len(c) else c
    if not len(dev):
        return None
    idle = dev["idle_pct"].to_numpy(dtype=np.float64)
    if (~np.isnan(idle)).any():
        util = 100.0 - float(np.nanmean(idle))  # MindInsight: active CPU = 100 - idle
    else:
        util = float(np.nanmean(dev["user_pct"].to_numpy(dtype=np.float64))
                     + np.nanmean(dev["sys_pct"].to_numpy(dtype=np.float64)))
    return {"host_util_pct": util}


def summary_figures(profile: Profile) -> dict:
    s = profile.table("pipeline_summary")
    return {str(k): _f(v) for k, v in zip(s["key"], s["value"])} if len(s) else {}


def stages(profile: Profile) -> list[dict]:
    s = profile.table("pipeline_stages")
    return [{"operation": str(r.operation), "stage": str(r.stage),
             "occurrences": int(r.occurrences), "avg_us": _f(r.avg_us),
             "custom_info": str(r.custom_info)} for r in s.itertuples(index=False)]


# --------------------------------------------------------------------------- rules

def _advice_for(op_type: str, reason_kind: str) -> list[str]:
    t = base_type(op_type)
    if reason_kind == "prefetch":
        return [ADVICE_PREFETCH, ADVICE_WORKERS, ADVICE_SINK]
    if t == "Map":
        return [ADVICE_WORKERS, ADVICE_TRANSFORMS, ADVICE_PYTHON, ADVICE_SINK]
    if t == "Generator":
        return [ADVICE_WORKERS, ADVICE_PYTHON, ADVICE_SOURCE, ADVICE_SINK]
    if t == "Batch":
        return [ADVICE_WORKERS, ADVICE_PREFETCH, ADVICE_SINK]
    return [ADVICE_WORKERS, ADVICE_SOURCE, ADVICE_PREFETCH, ADVICE_SINK]


def _input_usage(op: dict, by_id: dict) -> float | None:
    vals = [by_id[c]["queue_usage_pct"] for c in op["children_ids"]
            if c in by_id and by_id[c]["queue_usage_pct"] is not None]
    return float(np.mean(vals)) if vals else None


def mindspore_rule(op_list: list[dict], t: Mapping[str, float]) -> tuple[dict | None, list[dict]]:
    """MindSpore's CPU + queue analysis: (the bottleneck match, every finding)."""
    by_id = {o["op_id"]: o for o in op_list}
    findings, winner = [], None
    for op in sorted(op_list, key=lambda o: -o["op_id"]):
        typ = base_type(op["op_type"])
        if typ in _DEVICE_QUEUE or typ in NOT_MULTITHREADED:
            continue
        cpu = op["cpu_pct_per_worker"]
        inp = _input_usage(op, by_id)
        out = op["queue_usage_pct"]
        name = f"{op['op_type']}(id={op['op_id']})"
        if not op["children_ids"] and out is not None and typ != "Batch" \
                and out < t["pipeline_leaf_queue_low_pct"]:
            findings.append({"rule": "leaf_queue_low", "source": "MindSpore", "op_id": op["op_id"],
                             "message": f"{name} is a leaf whose output queue is {out:.1f}% used "
                                        f"(< {t['pipeline_leaf_queue_low_pct']:g}%): it reads too "
                                        "slowly; more workers speed up I/O"})
        if inp is not None and out is not None and typ != "Batch" \
                and inp - out > t["pipeline_queue_diff_pct"]:
            findings.append({"rule": "queue_diff", "source": "MindSpore", "op_id": op["op_id"],
                             "message": f"{name}: input queue {inp:.1f}% used, output {out:.1f}%:"
                                        " it consumes slower than its children produce"})
        if cpu is None:
            continue
        workers = op["num_workers"] or 0
        if cpu > t["pipeline_cpu_high_pct"]:
            msg = (f"{name} uses {cpu:.1f}% CPU per worker (> {t['pipeline_cpu_high_pct']:g}%)"
                   f" with {workers} worker(s): CPU-bound, raise num_parallel_workers above "
                   f"{workers}")
            findings.append({"rule": "cpu_high", "source": "MindSpore", "op_id": op["op_id"],
                             "message": msg})
            winner = {"op": op, "reason": msg, "kind": "workers"}
        elif cpu < t["pipeline_cpu_low_pct"]:
            abnormal = inp is not None and (inp < t["pipeline_input_queue_low_pct"] or
                                            (out is not None and out - inp >
                                             t["pipeline_queue_diff_pct"]))
            if workers > 1:
                findings.append({"rule": "cpu_low", "source": "MindSpore", "op_id": op["op_id"],
                                 "message": f"{name} uses {cpu:.1f}% CPU per worker "
                                            f"(< {t['pipeline_cpu_low_pct']:g}%): more workers "
                                            "will not help"})
            if abnormal:
                msg = (f"{name} uses {cpu:.1f}% CPU per worker (< {t['pipeline_cpu_low_pct']:g}%)"
                       f" while its input queue is {inp:.1f}% used"
                       + (f" and its output {out:.1f}%" if out is not None else "")
                       + ": it waits on its input; raise the prefetch size")
                winner = {"op": op, "reason": msg, "kind": "prefetch"}
    return winner, findings


def mindinsight_rule(op_list: list[dict], t: Mapping[str, float]) -> tuple[dict | None, list[dict]]:
    """MindInsight's queue filter (minddata_pipeline_analyser): the suspects and the pick."""
    by_id = {o["op_id"]: o for o in op_list}
    hi, lo, diff = t["pipeline_queue_high_pct"], t["pipeline_queue_low_pct"], \
        t["pipeline_child_diff_pct"]
    root, suspects, all_high, any_queue = None, [], True, False
    for op in op_list:
        if op["parent_id"] is None:
            root = op
            continue
        usage = op["queue_usage_pct"] or 0.0  # MindInsight reads a missing rate as 0
        any_queue = any_queue or op["queue_usage_pct"] is not None
        if usage < hi:
            all_high = False
        name = f"{op['op_type']}(id={op['op_id']})"
        if not op["children_ids"]:
            if usage < lo:
                suspects.append((op, f"{name} is a leaf whose output queue is {usage:.1f}% used "
                                     f"(< {lo:g}%): the source reads too slowly"))
            continue
        for c in op["children_ids"]:
            cu = (by_id.get(c) or {}).get("queue_usage_pct")
            if cu is not None and cu - usage > diff:
                suspects.append((op, f"{name}: its child's queue is {cu:.1f}% used but its own "
                                     f"{usage:.1f}% (more than {diff:g} points lower): it "
                                     "processes too slowly"))
                break
    if not any_queue:
        return None, []
    if all_high and root is not None:
        suspects = [(root, f"every queue below {root['op_type']}(id={root['op_id']}) is at least "
                           f"{hi:g}% full: the ops below keep up, {root['op_type']} is the slowest")]
    findings = [{"rule": "queue_suspect", "source": "MindInsight", "op_id": op["op_id"],
                 "message": msg} for op, msg in suspects]
    if not suspects:
        return None, findings
    op, msg = min(suspects, key=lambda s: ((s[0]["queue_usage_pct"] or 0.0), s[0]["op_id"]))
    kind = "prefetch" if base_type(op["op_type"]) == "Batch" else "workers"
    return {"op": op, "reason": msg, "kind": kind}, findings


def analyse(profile: Profile, t: Mapping[str, float]) -> dict:
    """The `/data_pipeline` document (docs/http_api.md)."""
    op_list = ops(profile)
    device_queue, get_next, batch_times, source = queues(profile)
    cpu = host_cpu(profile)
    ms_pick, ms_findings = mindspore_rule(op_list, t)
    mi_pick, mi_findings = mindinsight_rule(op_list, t)
    findings = ms_findings + mi_findings
    dq_empty = device_queue is not None and device_queue["empty_pct"] > t["device_queue_empty_pct"]
    if dq_empty:
        findings.append({"rule": "device_queue_empty", "source": "MindInsight", "op_id": None,
                         "message": f"the device queue was empty in {device_queue['empty']} of "
                                    f"{device_queue['batches']} batches "
                                    f"({device_queue['empty_pct']:.1f}% > "
                                    f"{t['device_queue_empty_pct']:g}%): data processing on the "
                                    "host is the bottleneck"})
    saturated = cpu is not None and cpu["host_util_pct"] > t["host_cpu_saturated_pct"]
    if saturated:
        findings.append({"rule": "host_cpu_saturated", "source": "MindInsight", "op_id": None,
                         "message": f"the host CPU is {cpu['host_util_pct']:.1f}% busy (> "
                                    f"{t['host_cpu_saturated_pct']:g}%): more workers cannot "
                                    "run faster; reduce per-sample work"})
    pick = ms_pick or mi_pick
    bottleneck = None
    if pick is not None:
        op = pick["op"]
        reason = f"{pick['reason']} ({'MindSpore' if pick is ms_pick else 'MindInsight'} rule)"
        if dq_empty:
            reason += f"; the device queue was empty in {device_queue['empty_pct']:.1f}% of batches"
        bottleneck = {"op_id": op["op_id"], "op_type": op["op_type"], "reason": reason,
                      "advice": _advice_for(op["op_type"], pick["kind"])}
    elif dq_empty:
        bottleneck = {"op_id": None, "op_type": None,
                      "reason": findings[-2 if saturated else -1]["message"],
                      "advice": [ADVICE_WORKERS, ADVICE_TRANSFORMS, ADVICE_PREFETCH, ADVICE_SINK]}
    return {
        "ops": op_list, "device_queue": device_queue, "get_next": get_next, "cpu": cpu,
        "bottleneck": bottleneck,
        "details": {"device_queue_source": source, "batch_times": batch_times,
                    "host_cpu_saturated": bool(saturated), "findings": findings,
                    "summary": summary_figures(profile), "stages": stages(profile)},
    }
