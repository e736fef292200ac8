"""Graph-mode step phases, op-type statistics, AI CPU tasks and MindSpore 2.x operators.

Expected values are computed here from the files with stdlib csv/json, and for the real
MindInsight sample (`fixtures/real/mindspore_legacy_run1`, MindInsight's own test data) they
are MindInsight's expected values from its public test suite:
- step-trace summary: mindspore-ai/mindinsight tests/st/func/profiler/test_analyse.py
  `test_summary_for_step_trace` and `test_graph_api` (average row's stream_540 segment);
- AI Core op types: tests/st/func/profiler/test_op_analyser.py `test_query_aicore_type_1`.
"""
from __future__ import annotations

import csv
import glob
import json
import os
import shutil
from decimal import Decimal

import pytest

from tb_plugin.analysis import derive, op_types, overview, step_phases
from tb_plugin.readers import mindspore_legacy, msprof, torch_npu
from tb_plugin.span_source import SpanSource

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
LEGACY = os.path.join(ROOT, "fixtures", "real", "mindspore_legacy_run1", "profiler")
CANN63 = glob.glob(os.path.join(ROOT, "fixtures", "real", "mindinsight_msprof_cann63", "PROF_*"))[0]
PADDLE = glob.glob(os.path.join(ROOT, "fixtures", "msprof_paddle", "PROF_*"))[0]
MS2X = glob.glob(os.path.join(ROOT, "fixtures", "mindspore_2x", "*_ascend_ms"))[0]


def _span(root, producer, device_id=None, worker="w"):
    return SpanSource(logdir=os.path.dirname(root), run="r", worker=worker, span="s",
                      producer=producer, root=root, files=(), device_id=device_id)


def _rows(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def _close(got, want, rel=0.005):
    assert abs(got - want) <= rel * abs(want) + 1e-9, (got, want)


# ----------------------------------------------------------------- MindSpore <= 2.3 (real)

@pytest.fixture(scope="module")
def legacy():
    prof = mindspore_legacy.read(_span(LEGACY, "mindspore_legacy", 1), None)
    assert prof.errors == []
    return prof


def test_legacy_phases_match_the_file(legacy):
    rows = _rows(os.path.join(LEGACY, "step_trace_raw_1_detail_time.csv"))
    steps = [r for r in rows if r["step_num"] not in ("-", "0")]
    ph = legacy.table("step_phases")
    for r in (steps[0], steps[100], steps[-1]):
        got = ph[ph["step"] == int(r["step_num"])]
        by = {(p, n): (s, d) for p, n, s, d in zip(got["phase"].astype(str), got["name"],
                                                   got["start_ns"], got["dur_ns"])}
        assert by[("iteration_interval", "")] == (int(r["start_point"]) * 10,
                                                  int(r["iteration_interval"]) * 10)
        assert by[("fp_and_bp", "")] == (int(r["fp_point"]) * 10, int(r["fp_and_bp"]) * 10)
        assert by[("tail", "")] == (int(r["bp_point"]) * 10, int(r["tail"]) * 10)
        streams = [k for k in r if k.startswith("stream_") and k.endswith("_parallel_0")]
        assert len(streams) == 11
        for s in streams:
            assert by[("reduce", s)] == (int(r[s + "_start_point"]) * 10, int(r[s]) * 10)


def test_legacy_summary_is_mindinsights(legacy):
    s = overview.summary(legacy)["phases"]
    a = s["average"]
    assert s["steps_total"] == 322 and len(s["steps"]) == 322 and s["average_source"] == "producer"
    # MindInsight test_summary_for_step_trace (ms)
    _close(a["total_us"] / 1000, 205.3809)
    _close(a["iteration_interval_us"] / 1000, 0.2038)
    _close(a["fp_and_bp_us"] / 1000, 118.054)
    _close(a["tail_us"] / 1000, 87.1231)
    assert (a["iteration_interval_pct"], a["fp_and_bp_pct"], a["tail_pct"]) == (0.1, 57.48, 42.42)
    # MindInsight test_graph_api: the last stream of the average step starts at 118.3705 ms
    last = [r for r in a["reduce"] if r["name"] == "stream_540_parallel_0"][0]
    _close(last["offset_us"] / 1000, 118.3705)
    _close(last["dur_us"] / 1000, 49.281)
    assert len(a["reduce"]) == 11
    # the mean over the 322 steps agrees with the producer's average row within 0.5 %
    rows = [r for r in _rows(os.path.join(LEGACY, "step_trace_raw_1_detail_time.csv"))
            if r["step_num"] not in ("-", "0")]
    mean_fpbp = sum(int(r["fp_and_bp"]) for r in rows) / len(rows) / 100  # ticks -> µs
    per_step = [x for st in s["steps"] for x in st["phases"] if x["phase"] == "fp_and_bp"]
    _close(sum(x["dur_us"] for x in per_step) / len(per_step), mean_fpbp, 1e-9)


def test_legacy_aicore_op_types_are_mindinsights(legacy):
    t = op_types.table(legacy)
    assert op_types.source(legacy) == "file"
    got = {r.type: r for r in t.itertuples()}
    # MindInsight test_query_aicore_type_1: [op_type, total_time(µs), count, total_percent, avg]
    expect = [['MatMul', 2807.82, 25, 5760.0, 112.313], ['Cast', 104.32, 27, 214.0, 3.864],
              ['TransData', 86.12, 9, 177.0, 9.569], ['ApplyMomentumD', 56.68, 24, 116.0, 2.362],
              ['Conv2D', 38.97, 6, 80.0, 6.495], ['Mul', 4.29, 3, 9.0, 1.43],
              ['StreamSend', 0.03, 3, 0.0, 0.01]]
    assert len(t) == 24
    assert t["type"].tolist()[:3] == ["MatMul", "Cast", "TransData"]
    for name, total, calls, pct100, avg in expect:
        r = got[name]
        _close(r.total_us, total)
        assert r.calls == calls and r.core_type == "AI_CORE"
        _close(r.avg_us, avg)
        # MindInsight multiplies this file's (already %) percent by 100
        assert round(r.ratio_pct * 100) == pct100


# ----------------------------------------------------------------- msprof step_trace

def test_msprof_csv_phases(tmp_path):
    prof = msprof.read(_span(PADDLE, "msprof", 0), None)
    assert prof.errors == []
    f = glob.glob(os.path.join(PADDLE, "mindstudio_profiler_output", "step_trace_*.csv"))[0]
    rows = _rows(f)
    us = lambda v: int(Decimal(v.strip()) * 1000)  # noqa: E731 (exact µs -> ns)
    ph = prof.table("step_phases")
    for r in rows:
        got = ph[ph["step"] == int(r["Iteration ID"])]
        by = {p: (s, d) for p, s, d in zip(got["phase"].astype(str), got["start_ns"], got["dur_ns"])}
        end, total = us(r["Iteration End(us)"]), us(r["Iteration Time(us)"])
        fp, bp = us(r["FP Start(us)"]), us(r["BP End(us)"])
        assert abs(by["fp_and_bp"][1] - us(r["FP to BP Time(us)"])) <= 2
        assert abs(by["tail"][1] - us(r["Iteration Refresh(us)"])) <= 2
        assert abs(by["iteration_interval"][1] - (fp - (end - total))) <= 2
        if int(r["Iteration ID"]) > 1:  # back to back: the gap is Data Aug Bound
            assert abs(by["iteration_interval"][1] - us(r["Data Aug Bound(us)"])) <= 2
        assert abs(by["reduce"][0] - us(r["Reduce Start(us)"])) <= 1
        assert abs(by["reduce"][1] - us(r["Reduce Duration(us)"])) <= 1
        assert abs(by["tail"][0] - bp) <= 1
    a = step_phases.summary(prof)["average"]
    n = len(rows)
    _close(a["fp_and_bp_us"], sum(float(r["FP to BP Time(us)"]) for r in rows) / n, 1e-6)


def test_msprof_trace_phases_cann63():
    """No step_trace CSV: derive makes the phases from the Step Trace slices."""
    prof = msprof.read(_span(CANN63, "msprof", 0), None)
    assert not prof.has("step_phases")
    derive.complete(prof)
    ph = prof.table("step_phases")
    want = {}
    for f in glob.glob(os.path.join(CANN63, "device_0", "timeline", "msprof_0_2_*.json")):
        doc = json.load(open(f))
        for e in (doc if isinstance(doc, list) else doc["traceEvents"]):
            if e.get("ph") == "X" and str(e.get("name", "")).startswith("FP_BP Time "):
                want[int(e["name"].split()[-1])] = round(float(e["dur"]) * 1000)
    assert len(want) == 10
    got = ph[ph["phase"].astype(str) == "fp_and_bp"]
    assert sorted(got["step"].tolist()) == sorted(want)
    for s, d in zip(got["step"], got["dur_ns"]):
        assert abs(d - want[s]) <= 1
    assert (ph["phase"].astype(str) == "reduce").sum() == 10


# ----------------------------------------------------------------- op types / API / AI CPU

def test_op_statistic_file_used_and_computed_otherwise():
    prof = torch_npu.read_mindspore(_span(MS2X, "mindspore"), None)
    rows = _rows(os.path.join(MS2X, "ASCEND_PROFILER_OUTPUT", "op_statistic.csv"))
    t = op_types.table(prof)
    got = {(r.type, r.core_type): r for r in t.itertuples()}
    for r in rows:
        g = got[(r["OP Type"], r["Core Type"])]
        assert g.calls == int(r["Count"])
        _close(g.total_us, float(r["Total Time(us)"]), 1e-6)
        _close(g.ratio_pct, float(r["Ratio(%)"]), 1e-9)
    # without the file: computed from the kernels
    prof.rows["op_statistic"] = 0
    k = _rows(os.path.join(MS2X, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv"))
    c = op_types.table(prof)
    assert op_types.source(prof) == "kernels"
    total = sum(float(r["Duration(us)"]) for r in k)
    mm = [r for r in k if r["Type"] == "MatMulV2"]
    row = c[c["type"] == "MatMulV2"].iloc[0]
    assert row["calls"] == len(mm)
    _close(row["total_us"], sum(float(r["Duration(us)"]) for r in mm), 1e-6)
    _close(row["ratio_pct"], sum(float(r["Duration(us)"]) for r in mm) / total * 100, 1e-6)
    a = op_types.api_table(prof)
    api = _rows(os.path.join(MS2X, "ASCEND_PROFILER_OUTPUT", "api_statistic.csv"))
    assert len(a) == len(api)
    top = max(api, key=lambda r: float(r["Time(us)"]))
    assert a.iloc[0]["name"] == top["API Name"]
    _close(a.iloc[0]["total_us"], float(top["Time(us)"]), 1e-6)


def test_aicpu_tasks_join_the_kernels(tmp_path):
    root = tmp_path / "x_ascend_ms"
    shutil.copytree(MS2X, root)
    out = root / "ASCEND_PROFILER_OUTPUT"
    lines = ["Device_id,Timestamp(us),Node,Compute_time(us),Memcpy_time(us),Task_time(us),"
             "Dispatch_time(us),Total_time(us),Stream ID,Task ID",
             "0,1733000000001100.500\t,GetNext,12.250,1.0,14.0,2.0,16.5,3,1",
             "0,1733000000002100.000\t,GetNext,10.000,1.0,12.0,2.0,14.0,3,2",
             "0,1733000000003100.000\t,DropoutGenMask,5.125,1.0,7.0,2.0,9.0,3,3"]
    (out / "data_preprocess.csv").write_text("\n".join(lines) + "\n")
    (out / "op_statistic.csv").unlink()
    prof = torch_npu.read_mindspore(_span(str(root), "mindspore"), None)
    assert prof.errors == []
    k = prof.table("kernels")
    cpu = k[k["core_type"].astype(str) == "AI_CPU"]
    listed = [r for r in _rows(str(out / "kernel_details.csv")) if r["Accelerator Core"] == "AI_CPU"]
    assert sorted(cpu["name"].astype(str)) == sorted(
        [r["Name"] for r in listed] + ["DropoutGenMask", "GetNext", "GetNext"])
    added = cpu[cpu["type"].astype(str).isin(["GetNext", "DropoutGenMask"])]
    assert sorted(added["dur_ns"]) == [5125, 10000, 12250]
    t = op_types.table(prof, core="AI_CPU")
    g = {r.type: r for r in t.itertuples()}
    assert g["GetNext"].calls == 2 and g["GetNext"].total_us == 22.25
    assert g["DropoutGenMask"].calls == 1
    # a task kernel_details lists already (an AI_CPU kernel of that name) is not added twice
    dup = listed[0]
    (out / "data_preprocess.csv").write_text(
        lines[0] + "\n" + "0,%s,%s,1.0,1.0,1.0,1.0,1.0,3,9\n" % (dup["Start Time(us)"], dup["Name"]))
    prof = torch_npu.read_mindspore(_span(str(root), "mindspore"), None)
    k = prof.table("kernels")
    assert (k["core_type"].astype(str) == "AI_CPU").sum() == len(listed)


# ----------------------------------------------------------------- MindSpore 2.x operators

def test_mindspore_operators_from_the_trace():
    prof = torch_npu.read_mindspore(_span(MS2X, "mindspore"), None, stage="views")
    assert prof.errors == [] and not prof.meta.trace_deferred
    assert prof.meta.operator_durations is True
    doc = json.load(open(os.path.join(MS2X, "ASCEND_PROFILER_OUTPUT", "trace_view.json")))
    ev = doc if isinstance(doc, list) else doc["traceEvents"]
    ns = lambda v: int(Decimal(str(v)) * 1000)  # noqa: E731 (exact µs text -> ns)
    ms = [e for e in ev if e.get("ph") == "X" and e.get("pid") == 1
          and not e["name"].startswith("ProfilerStep#")]
    dev = {(e["pid"], e["tid"], ns(e["ts"])): ns(e["dur"]) for e in ev
           if e.get("ph") == "X" and e.get("pid") != 1}
    starts = {str(e["id"]): e for e in ev if e.get("ph") == "s" and e.get("name") == "mindspore_to_npu"}
    ends = {str(e["id"]): e for e in ev if e.get("ph") == "f" and e.get("name") == "mindspore_to_npu"}
    # device self: the kernels of flows starting at the op's own start (innermost op there)
    self_ns = {}
    for fid, s in starts.items():
        f = ends[fid]
        at = [e for e in ms if ns(e["ts"]) <= ns(s["ts"]) < ns(e["ts"]) + ns(e["dur"])]
        inner = min(at, key=lambda e: ns(e["dur"]))
        key = (inner["name"], ns(inner["ts"]))
        self_ns[key] = self_ns.get(key, 0) + dev[(f["pid"], f["tid"], ns(f["ts"]))]
    o = prof.table("operators")
    assert len(o) == len(ms)
    got = {("Kernel::KernelLaunch::" + n, s): (ht, ds, dt) for n, s, ht, ds, dt in zip(
        o["name"].astype(str), o["start_ns"], o["host_total_ns"], o["device_self_ns"],
        o["device_total_ns"])}
    for e in ms:
        ht, ds, dt = got[(e["name"], ns(e["ts"]))]
        assert abs(ht - ns(e["dur"])) <= 1
        assert abs(ds - self_ns.get((e["name"], ns(e["ts"])), 0)) <= len(ev)
        assert dt >= ds
    assert (o["device_total_ns"] > 0).any() and (o["host_self_ns"] > 0).all()
    # every flow's kernel is counted once as device self time
    assert abs(int(o["device_self_ns"].sum()) - sum(self_ns.values())) <= len(starts)


def test_mindspore_whole_run_row_split_by_the_trace():
    prof = torch_npu.read_mindspore(_span(MS2X, "mindspore"), None)
    assert prof.table("steps")["step"].tolist() == [0]
    derive.complete(prof)
    st = prof.table("steps")
    doc = json.load(open(os.path.join(MS2X, "ASCEND_PROFILER_OUTPUT", "trace_view.json")))
    ev = doc if isinstance(doc, list) else doc["traceEvents"]
    want = sorted(int(e["name"].split("#")[1]) for e in ev
                  if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
    assert st["step"].tolist() == want and len(want) >= 2
    row = _rows(os.path.join(MS2X, "ASCEND_PROFILER_OUTPUT", "step_trace_time.csv"))[0]
    _close(st["bd_computing"].sum() / 1000, float(row["Computing"]), 0.001)


# ----------------------------------------------------------------- generated graph-mode run

MS2X_GRAPH = glob.glob(os.path.join(ROOT, "fixtures", "mindspore_2x_graph", "*_ascend_ms"))[0]


def test_graph_launch_run_operators_equal_the_trace():
    """fixtures/mindspore_2x_graph (graph_launch, aicpu_tasks): every MindSpore-layer event is
    an operator whose host self / device total are computed here from the events."""
    prof = torch_npu.read_mindspore(_span(MS2X_GRAPH, "mindspore"), None, stage="views")
    assert prof.errors == []
    out = os.path.join(MS2X_GRAPH, "ASCEND_PROFILER_OUTPUT")
    doc = json.load(open(os.path.join(out, "trace_view.json")))
    ev = doc if isinstance(doc, list) else doc["traceEvents"]
    ns = lambda v: int(Decimal(str(v)) * 1000)  # noqa: E731
    host = [e for e in ev if e.get("ph") == "X" and e.get("pid") == 1]
    iv = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]) for e in host]

    def parent(i):  # smallest event strictly enclosing event i
        s, t, _ = iv[i]
        best = None
        for j, (a, b, _) in enumerate(iv):
            if j != i and a <= s and t <= b and (b - a) > (t - s) and \
                    (best is None or (b - a) < (iv[best][1] - iv[best][0])):
                best = j
        return best

    parents = [parent(i) for i in range(len(iv))]
    kdur = {ns(e["ts"]): ns(e["dur"]) for e in ev if e.get("ph") == "X" and e.get("pid") != 1}
    flow_s = {str(e["id"]): ns(e["ts"]) for e in ev if e.get("ph") == "s" and e.get("name") == "mindspore_to_npu"}
    flow_f = {str(e["id"]): ns(e["ts"]) for e in ev if e.get("ph") == "f" and e.get("name") == "mindspore_to_npu"}
    dev_self = [0] * len(iv)
    for fid, ts in flow_s.items():
        inner = min((i for i, (a, b, _) in enumerate(iv) if a <= ts < b), key=lambda i: iv[i][1] - iv[i][0])
        dev_self[inner] += kdur[flow_f[fid]]
    dev_total = list(dev_self)
    for i in range(len(iv)):  # add each op's own kernels to every ancestor
        j = parents[i]
        while j is not None:
            dev_total[j] += dev_self[i]
            j = parents[j]
    child = [0] * len(iv)
    for i, j in enumerate(parents):
        if j is not None:
            child[j] += iv[i][1] - iv[i][0]
    o = prof.table("operators")
    got = {(n, s): r for n, s, r in zip(o["name"].astype(str), o["start_ns"],
                                        o[["host_self_ns", "device_self_ns", "device_total_ns"]].itertuples(index=False))}
    graph = 0
    for i, (a, b, name) in enumerate(iv):
        if name.startswith("ProfilerStep#"):
            continue
        r = got[(name.split("Kernel::KernelLaunch::", 1)[-1], a)]
        assert r.host_self_ns == (b - a) - child[i], name
        assert r.device_self_ns == dev_self[i], name
        assert r.device_total_ns == dev_total[i], name
        if name.startswith("RuntimeFramework::GraphLaunch::"):
            graph += 1
            assert r.device_total_ns > 0 and r.device_self_ns == 0
    assert graph == 3
    assert len(o) == sum(1 for _, _, n in iv if not n.startswith("ProfilerStep#"))
    # AI CPU: the GetNext tasks join the kernels, the NonZero kernels are not doubled
    k = prof.table("kernels")
    dp = _rows(os.path.join(out, "data_preprocess.csv"))
    kd = _rows(os.path.join(out, "kernel_details.csv"))
    cpu = k[k["core_type"].astype(str) == "AI_CPU"]
    assert len(cpu) == sum(r["Accelerator Core"] == "AI_CPU" for r in kd) + \
        sum(r["Node"] == "GetNext" for r in dp)
    assert (cpu["name"].astype(str) == "GetNext").sum() == 3
    # steps: one per ProfilerStep of the trace after derive (step_trace_time has one row)
    derive.complete(prof)
    assert prof.table("steps")["step"].tolist() == [1, 2, 3]


def test_legacy_flops_and_aicpu_intermediate(tmp_path):
    """flops_summary / flops_scope (MindSpore's sankey shape) reach the overview answer;
    aicpu_intermediate rows are AI CPU op types counted as MindInsight's AICPU table does."""
    d = tmp_path / "profiler"
    shutil.copytree(LEGACY, d)
    summary = {"FLOPs": 3344.5, "FLOPS": 12.25, "FLOPS_Utilization": 0.375}
    (d / "flops_summary_1.json").write_text(json.dumps(summary))
    scope = {"data": {"nodes": [{"name": "Total"}, {"name": "Default"}, {"name": "Gradients"},
                                {"name": "network(0_Default)"}],
                      "links": [{"source": "Total", "target": "Default", "value": 1000.5},
                                {"source": "Total", "target": "Gradients", "value": 2344.0},
                                {"source": "Default", "target": "network(0_Default)", "value": 1000.5}]},
             "max_scope_num": 2}
    (d / "flops_scope_1.json").write_text(json.dumps(scope))
    (d / "aicpu_intermediate_1.csv").write_text(
        "serial_number,op_type,total_time,dispatch_time,execution_time,run_start,run_end\n"
        "1,InitData,8.0,0.094,7.906,100,108000\n2,GetNext,0.3,0.01,0.29,200,500\n"
        "3,GetNext,0.31,0.01,0.3005,900,1210\n4,EndOfSequence,0.31,0.01,0.15,1300,1610\n"
        "5,EndOfSequence,0.31,0.01,0.1535,1700,1900\n")
    prof = mindspore_legacy.read(_span(str(d), "mindspore_legacy", 1), None)
    assert prof.errors == []
    flops = overview.summary(prof)["flops"]
    assert {k: flops[k] for k in summary} == summary
    assert flops["scopes"] == [{"name": "Gradients", "value": 2344.0}, {"name": "Default", "value": 1000.5}]
    t = op_types.table(prof, core="AI_CPU")
    g = {r.type: r for r in t.itertuples()}
    total = 7.906 + 0.29 + 0.3005 + 0.15 + 0.1535
    assert g["GetNext"].calls == 2 and g["EndOfSequence"].calls == 2
    _close(g["GetNext"].total_us, (0.29 + 0.3005) * 1000, 1e-9)
    _close(g["InitData"].ratio_pct, 7.906 / total * 100, 1e-9)
    assert [r for r in t["type"]] == ["InitData", "GetNext", "EndOfSequence"]
    # These rows carry the per-type execution times of MindInsight's run_2 sample, whose
    # expected AICPU type table (mindspore-ai/mindinsight tests/st/func/profiler/
    # test_aicpu_analyser.py test_query_aicpu_type) is InitData 89.84 %, GetNext 6.71 %,
    # EndOfSequence 3.45 %: the same counting rule (share of the AI CPU execution total).
    assert [round(g[n].ratio_pct, 2) for n in ("InitData", "GetNext", "EndOfSequence")] == \
        [89.84, 6.71, 3.45]
    # the timeline file has no AI_CPU rows, so the tasks join the kernels
    k = prof.table("kernels")
    assert (k["core_type"].astype(str) == "AI_CPU").sum() == 5


def test_msprof_aicpu_csv_tasks_join_the_kernels(tmp_path):
    root = tmp_path / os.path.basename(PADDLE)
    shutil.copytree(PADDLE, root)
    out = root / "mindstudio_profiler_output"
    (out / "aicpu_20240830064100.csv").write_text(
        "Device_id,Timestamp(us),Node,Compute_time(us),Memcpy_time(us),Task_time(us),"
        "Dispatch_time(us),Total_time(us),Stream ID,Task ID\n"
        "0,1725000000001500.250\t,DropoutDoMask,7.5,1.0,9.0,1.0,11.0,4,1\n"
        "1,1725000000001600.000\t,DropoutDoMask,9.5,1.0,9.0,1.0,11.0,4,2\n")
    before = msprof.read(_span(PADDLE, "msprof", 0), None).table("kernels")
    prof = msprof.read(_span(str(root), "msprof", 0), None)
    assert prof.errors == []
    k = prof.table("kernels")
    assert len(k) == len(before) + 1  # device 1's row is not this span's
    row = k[k["name"].astype(str) == "DropoutDoMask"].iloc[0]
    assert (row["core_type"], row["dur_ns"], row["start_ns"]) == ("AI_CPU", 7500, 1725000000001500250)
    assert int(row["device_id"]) == 0
