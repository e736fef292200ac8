"""Compare our kineto analysis with torch-tb-profiler 0.4.3's committed answers.

`ours(trace_path)` reads a trace with the kineto reader, runs the load-time derivations
(`analysis.derive.complete`, as the loader does) and answers with the same analysis
functions the routes call (`operators.table`, `kernels.table`, `overview.steps`).
`compare(ours_doc, reference_doc)` lists every value of the reference with ours next to it;
counts must be equal, times within `TOL_US` (torch-tb-profiler keeps µs as floats, so
float rounding of its absolute timestamps is below this).
"""
from __future__ import annotations

import json
import os

TOL_US = 1.0
HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "reference")
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
REAL = os.path.join(ROOT, "fixtures", "real")

STEP_KEYS = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader",
             "cpu_exec", "other", "total")
OP_TIMES = ("host_self_us", "host_total_us", "device_self_us", "device_total_us")
KERNEL_TIMES = ("total_us", "mean_us", "min_us", "max_us")


def traces() -> list[tuple[str, str]]:
    """(trace path, reference JSON path) of every committed reference answer."""
    with open(os.path.join(REFERENCE, "traces.json")) as f:
        listing = json.load(f)
    return [(os.path.join(ROOT, t), os.path.join(REFERENCE, r)) for t, r in listing.items()]


def ours(path: str) -> dict:
    from tb_plugin.analysis import derive, kernels, operators, overview
    from tb_plugin.readers import kineto
    from tb_plugin.span_source import SpanSource

    span = SpanSource(logdir=os.path.dirname(path), run="run", worker="w", span="1",
                      producer="kineto", root=path, files=(path,))
    prof = kineto.read(span, None)
    derive.complete(prof)
    by_name = operators.table(prof, "name")
    by_shape = operators.table(prof, "name_shape")
    ktab = kernels.table(prof, "name")
    steps = overview.steps(prof)
    return {
        "errors": list(prof.errors),
        "operators": {r["name"]: r for r in by_name.to_dict("records")},
        "operators_by_shape": _by_shape(by_shape),
        "kernels": {r["name"]: r for r in ktab.to_dict("records")},
        "steps": {str(s["step"]): s for s in steps["steps"]},
    }


def _by_shape(table) -> dict:
    """(name, shapes) -> row. torch-tb-profiler files an op without `Input Dims` under "[]";
    we keep such calls apart as "" ("no shapes recorded"): those rows are added to "[]"."""
    out: dict = {}
    for r in table.to_dict("records"):
        key = (r["name"], r["input_shapes"] or "[]")
        if key in out:
            merged = dict(out[key])
            for f in ("calls",) + OP_TIMES:
                merged[f] = merged[f] + r[f]
            out[key] = merged
        else:
            out[key] = r
    return out


def compare(mine: dict, ref: dict) -> list[dict]:
    """One row per reference value: {table, key, field, ref, ours, ok}."""
    rows = []

    def add(table, key, field, rv, ov, exact):
        if ov is None or rv is None:
            ok = ov == rv
        elif exact:
            ok = int(ov) == int(rv)
        else:
            ok = abs(float(ov) - float(rv)) <= TOL_US
        rows.append({"table": table, "key": key, "field": field, "ref": rv, "ours": ov,
                     "ok": bool(ok)})

    for r in ref["operators"]:
        o = mine["operators"].get(r["name"], {})
        add("operators", r["name"], "calls", r["calls"], o.get("calls"), True)
        for f in OP_TIMES:
            add("operators", r["name"], f, r[f], o.get(f), False)
    for r in ref["operators_by_shape"]:
        key = (r["name"], r["input_shape"])
        o = mine["operators_by_shape"].get(key, {})
        add("operators_by_shape", key, "calls", r["calls"], o.get("calls"), True)
        for f in OP_TIMES:
            add("operators_by_shape", key, f, r[f], o.get(f), False)
    for r in ref["kernels"]:
        o = mine["kernels"].get(r["name"], {})
        add("kernels", r["name"], "calls", r["calls"], o.get("calls"), True)
        for f in KERNEL_TIMES:
            add("kernels", r["name"], f, r[f], o.get(f.replace("mean", "avg")), False)
    for r in ref["steps"]:
        o = mine["steps"].get(r["step"])
        for k in STEP_KEYS:
            ov = None
            if o is not None:
                ov = o["total_us"] if k == "total" else o["breakdown"].get(k)
            add("steps", r["step"], k, r[f"{k}_us"], ov, False)
    # Rows we have and the reference has not are disagreements too.
    for table, key_of in (("operators", lambda r: r["name"]),
                          ("operators_by_shape", lambda r: (r["name"], r["input_shape"])),
                          ("kernels", lambda r: r["name"])):
        ref_keys = {key_of(r) for r in ref[table]}
        for k in mine[table]:
            if k not in ref_keys:
                rows.append({"table": table, "key": k, "field": "present", "ref": None,
                             "ours": True, "ok": False})
    ref_steps = {r["step"] for r in ref["steps"]}
    for k in mine["steps"]:
        if k not in ref_steps:
            rows.append({"table": "steps", "key": k, "field": "present", "ref": None,
                         "ours": True, "ok": False})
    return rows
