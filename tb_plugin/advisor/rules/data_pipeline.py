"""data_pipeline (MindSpore): the data pipeline cannot feed the device. Reads the
`pipeline_*` tables (readers/minddata.py) through analysis/data_pipeline.py, which names the
bottleneck op by MindSpore's BottleneckAnalyzer rule (CPU per worker above
`pipeline_cpu_high_pct`, or below `pipeline_cpu_low_pct` with an abnormal queue), else by
MindInsight's queue rule (`pipeline_queue_low_pct`, `pipeline_child_diff_pct`,
`pipeline_queue_high_pct`), else by the device queue being empty in more than
`device_queue_empty_pct` of the batches. Fires when a bottleneck is named; high severity when
the device queue also ran empty that often (the device waited), else medium. No time
estimate: the files do not say how long the device waited.
"""
from __future__ import annotations

from ...analysis import data_pipeline as pipeline_view
from ..core import NotApplicable, Rule


def evidence(ctx) -> dict | None:
    """The pipeline facts other rules cite (iteration_gap); None without pipeline data."""
    if not pipeline_view.available(ctx.profile):
        return None
    doc = pipeline_view.analyse(ctx.profile, ctx.t)
    b = doc["bottleneck"]
    return {"bottleneck_op_id": b["op_id"] if b else None,
            "bottleneck_op_type": b["op_type"] if b else None,
            "bottleneck_reason": b["reason"] if b else None,
            "device_queue": doc["device_queue"], "get_next": doc["get_next"],
            "host_util_pct": (doc["cpu"] or {}).get("host_util_pct")}


def check(ctx):
    if not pipeline_view.available(ctx.profile):
        raise NotApplicable("no data pipeline (MindData) files in this profile")
    doc = pipeline_view.analyse(ctx.profile, ctx.t)
    b = doc["bottleneck"]
    if b is None:
        return []
    dq = doc["device_queue"]
    starved = dq is not None and dq["empty_pct"] > ctx.t["device_queue_empty_pct"]
    op = next((o for o in doc["ops"] if o["op_id"] == b["op_id"]), None)
    who = f"{b['op_type']} (op {b['op_id']})" if b["op_id"] is not None else "The host pipeline"
    msg = f"{who} is the data pipeline's bottleneck: {b['reason']}."
    if dq is not None:
        msg += (f" The device queue was empty in {dq['empty']} of {dq['batches']} batches "
                f"({dq['empty_pct']:.1f}%).")
    evidence = {"op_id": b["op_id"], "op_type": b["op_type"], "reason": b["reason"],
                "op": op, "device_queue": dq, "get_next": doc["get_next"], "cpu": doc["cpu"],
                "findings": doc["details"]["findings"],
                "threshold_device_queue_empty_pct": ctx.t["device_queue_empty_pct"]}
    text = "; ".join(b["advice"])
    advice = text[:1].upper() + text[1:] + "."
    key = f"op{b['op_id']}" if b["op_id"] is not None else "host"
    return [ctx.finding("data_pipeline", key, "Data pipeline bottleneck", msg, advice, None,
                        evidence, [ctx.link("data_pipeline")],
                        severity="high" if starved else "medium")]


RULE = Rule("data_pipeline", "Data pipeline (MindData) bottleneck", check)
