"""Tests of the fixture generator: determinism and the docs/formats.md §3.1 cross-file invariants.

The invariants are checked by reading the generated files with the stdlib csv/json modules,
independently of the generator's internals.
"""
import csv
import filecmp
import gzip
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from fixtures import generate as g  # noqa: E402

FIX = os.path.join(ROOT, "fixtures")


def ns(ts: str) -> int:
    ts = ts.strip()
    a, b = ts.split(".")
    return int(a) * 1000 + int(b.ljust(3, "0")[:3])


def dns(d) -> int:
    return int(round(float(d) * 1000))


def read_csv(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def load_trace(out):
    p = os.path.join(out, "trace_view.json")
    if os.path.exists(p):
        return json.load(open(p, encoding="utf-8"))
    return json.load(gzip.open(p + ".gz", "rt", encoding="utf-8"))


def span_dirs(run_dir):
    return sorted(os.path.join(run_dir, d) for d in os.listdir(run_dir) if d.endswith(("_ascend_pt", "_ascend_ms")))


def all_files(d):
    out = []
    for base, _, files in os.walk(d):
        for f in files:
            out.append(os.path.relpath(os.path.join(base, f), d))
    return sorted(out)


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    """Generate every synthetic fixture twice into tmp dirs."""
    a = tmp_path_factory.mktemp("a")
    b = tmp_path_factory.mktemp("b")
    jobs = {}
    for name, cfg in g.FIXTURES.items():
        sub = g.FIXTURE_DIRS.get(name, name)
        jobs[name] = g.write_run(cfg, str(a / sub))
        g.write_run(cfg, str(b / sub))
    return str(a), str(b), jobs


def test_deterministic(gen):
    a, b, _ = gen
    fa, fb = all_files(a), all_files(b)
    assert fa == fb and fa
    for f in fa:
        assert filecmp.cmp(os.path.join(a, f), os.path.join(b, f), shallow=False), f


def test_committed_fixtures_up_to_date(gen):
    a, _, _ = gen
    for f in all_files(a):
        committed = os.path.join(FIX, f)
        assert os.path.exists(committed), "missing committed fixture file %s (run fixtures/generate.py)" % f
        if f.endswith(".db"):
            # A SQLite file's bytes also carry the library's version and may lay pages out
            # differently in another SQLite: compare what it holds.
            assert _db_content(os.path.join(a, f)) == _db_content(committed), "stale fixture %s" % f
            continue
        assert filecmp.cmp(os.path.join(a, f), committed, shallow=False), "stale fixture %s" % f


def _db_content(path):
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(con.iterdump())
    finally:
        con.close()


TORCH_RUNS = ["torch_npu_level1", "torch_npu_dist4", "torch_npu_legacy_2023", "torch_npu_pmu"]


def _spans(gen, name):
    a, _, jobs = gen
    return span_dirs(os.path.join(a, name)), jobs[name]


@pytest.mark.parametrize("name", TORCH_RUNS)
def test_kernel_details_match_trace(gen, name):
    for d in _spans(gen, name)[0]:
        out = os.path.join(d, "ASCEND_PROFILER_OUTPUT")
        tr = load_trace(out)
        pnames = {e["pid"]: e["args"]["name"] for e in tr if e.get("ph") == "M" and e["name"] == "process_name"}
        hw = {(e["name"], str(e["ts"]) if isinstance(e["ts"], str) else None, ): e for e in tr
              if e.get("ph") == "X" and pnames.get(e["pid"]) == "Ascend Hardware"}
        rows = read_csv(os.path.join(out, "kernel_details.csv"))
        assert rows
        legacy = "Device_id" not in rows[0]
        if legacy:
            # numeric ts in the 2023 trace: compare as integer ns on the raw text
            raw = open(os.path.join(out, "trace_view.json.gz"), "rb").read()
            txt = gzip.decompress(raw).decode()
        n = 0
        for r in rows:
            assert r["Start Time(us)"].endswith("\t")
            ts = r["Start Time(us)"][:-1]
            assert len(ts.split(".")[0]) == 16 and len(ts.split(".")[1]) == 3
            if r["Accelerator Core"] in ("COMMUNICATION", "HCCL"):
                if not legacy:
                    assert r["Task ID"] == "N/A" and r["Stream ID"] == "N/A"
                continue
            if legacy:
                assert '"ts":%s,' % ts in txt
                n += 1
                continue
            e = hw[(r["Name"], ts)]
            assert dns(e["dur"]) == dns(r["Duration(us)"])
            assert e["tid"] == int(r["Stream ID"]) == e["args"]["Physic Stream Id"]
            assert e["args"]["Task Id"] == int(r["Task ID"])
            assert e["pid"] & 31 == int(r["Device_id"])
            n += 1
        assert n == sum(1 for e in tr if e.get("ph") == "X" and pnames.get(e["pid"]) == "Ascend Hardware")


@pytest.mark.parametrize("name", TORCH_RUNS)
def test_steps_agree(gen, name):
    dirs, job = _spans(gen, name)
    for d in dirs:
        out = os.path.join(d, "ASCEND_PROFILER_OUTPUT")
        tr = load_trace(out)
        steps = sorted(e["name"].split("#")[1] for e in tr if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
        assert steps and int(steps[0]) > 1
        kd = {r["Step Id"] for r in read_csv(os.path.join(out, "kernel_details.csv"))}
        assert kd <= set(steps)
        stt = read_csv(os.path.join(out, "step_trace_time.csv"))
        assert sorted(r["Step"] for r in stt) == steps
        cj = os.path.join(out, "communication.json")
        if os.path.exists(cj):
            keys = set(json.load(open(cj)))
            assert keys <= {"step" + s for s in steps}
    truth_steps = sorted(s for r in job.runs for s in r.step_ids)
    assert truth_steps == sorted(truth_steps)


@pytest.mark.parametrize("name", ["torch_npu_level1", "torch_npu_dist4"])
def test_operator_details_device_self(gen, name):
    for d in _spans(gen, name)[0]:
        out = os.path.join(d, "ASCEND_PROFILER_OUTPUT")
        tr = load_trace(out)
        kd = read_csv(os.path.join(out, "kernel_details.csv"))
        od = read_csv(os.path.join(out, "operator_details.csv"))
        assert not any(r["Name"].startswith("ProfilerStep#") for r in od)
        comp = [r for r in kd if r["Accelerator Core"] != "COMMUNICATION"]
        assert sum(dns(r["Device Self Duration(us)"]) for r in od) == sum(dns(r["Duration(us)"]) for r in comp)
        # per op name via torch_to_npu flows: s at the op start, f at the kernel start
        py_ops = {e["ts"]: e["name"] for e in tr if e.get("ph") == "X" and e.get("cat") == "cpu_op"}
        kdur = {r["Start Time(us)"].strip(): dns(r["Duration(us)"]) for r in comp}
        s_ev = {e["id"]: e for e in tr if e.get("ph") == "s" and e.get("name") == "torch_to_npu"}
        by_name = {}
        for e in tr:
            if e.get("ph") == "f" and e.get("name") == "torch_to_npu":
                s = s_ev[e["id"]]
                assert e["id"] == ns(e["ts"])
                assert ns(s["ts"]) < ns(e["ts"])
                by_name[py_ops[s["ts"]]] = by_name.get(py_ops[s["ts"]], 0) + kdur[e["ts"]]
        od_by = {}
        for r in od:
            od_by[r["Name"]] = od_by.get(r["Name"], 0) + dns(r["Device Self Duration(us)"])
            assert dns(r["Host Total Duration(us)"]) >= dns(r["Host Self Duration(us)"]) >= 0
            assert dns(r["Device Total Duration(us)"]) >= dns(r["Device Self Duration(us)"])
        assert {k: v for k, v in od_by.items() if v} == by_name


def _union_len(iv):
    tot, cur = 0, None
    for a, b in sorted(iv):
        if cur is None or a > cur[1]:
            if cur:
                tot += cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    if cur:
        tot += cur[1] - cur[0]
    return tot


@pytest.mark.parametrize("name", ["torch_npu_level1", "torch_npu_dist4"])
def test_step_trace_time_totals(gen, name):
    dirs, job = _spans(gen, name)
    for d in dirs:
        out = os.path.join(d, "ASCEND_PROFILER_OUTPUT")
        tr = load_trace(out)
        kd = read_csv(os.path.join(out, "kernel_details.csv"))
        stt = read_csv(os.path.join(out, "step_trace_time.csv"))
        assert list(stt[0])[:2] == ["Device_id", "Step"] and len(stt[0]) == 11
        ov = {}
        for e in tr:
            if e.get("ph") == "X" and e["name"] in ("Computing", "Communication", "Communication(Not Overlapped)", "Free"):
                ov[e["name"]] = ov.get(e["name"], 0) + dns(e["dur"])
        for key, col in (("Computing", "Computing"), ("Communication", "Communication"),
                         ("Communication(Not Overlapped)", "Communication(Not Overlapped)"), ("Free", "Free")):
            assert abs(sum(dns(r[col]) for r in stt) - ov.get(key, 0)) <= len(stt)
        for r in stt:
            ks = [(ns(x["Start Time(us)"]), ns(x["Start Time(us)"]) + dns(x["Duration(us)"])) for x in kd
                  if x["Step Id"] == r["Step"] and x["Accelerator Core"] != "COMMUNICATION"]
            cs = [(ns(x["Start Time(us)"]), ns(x["Start Time(us)"]) + dns(x["Duration(us)"])) for x in kd
                  if x["Step Id"] == r["Step"] and x["Accelerator Core"] == "COMMUNICATION"]
            assert abs(dns(r["Computing"]) - _union_len(ks)) <= 1
            assert abs(dns(r["Communication"]) - _union_len(cs)) <= 1
            assert abs(dns(r["Overlapped"]) - (dns(r["Communication"]) - dns(r["Communication(Not Overlapped)"]))) <= 1
            assert float(r["Bubble"]) == 0.0
            assert float(r["Preparing"]) > 0
            run = next(x for x in job.runs if x.dir_name == os.path.basename(d))
            st = next(s for s in run.steps if s.step_id == r["Step"])
            assert abs(st.breakdown_us["computing"] - float(r["Computing"])) < 1e-3
            assert abs(st.breakdown_us["free"] - float(r["Free"])) < 1e-3


@pytest.mark.parametrize("name", ["torch_npu_level1", "torch_npu_dist4", "torch_npu_legacy_2023"])
def test_memory_invariants(gen, name):
    for d in _spans(gen, name)[0]:
        out = os.path.join(d, "ASCEND_PROFILER_OUTPUT")
        rows = read_csv(os.path.join(out, "memory_record.csv"))
        comps = {r["Component"] for r in rows}
        assert {"PTA", "GE", "PTA+GE", "APP"} <= comps
        last = {}
        max_pta_res = 0.0
        for r in rows:
            c = r["Component"]
            if c == "PTA":
                assert float(r["Total Allocated(MB)"]) <= float(r["Total Reserved(MB)"])
                max_pta_res = max(max_pta_res, float(r["Total Reserved(MB)"]))
            if c == "PTA+GE" and "PTA" in last and "GE" in last:
                exp = float(last["PTA"]["Total Allocated(MB)"]) + float(last["GE"]["Total Allocated(MB)"])
                assert abs(float(r["Total Allocated(MB)"]) - exp) < 1e-3
            last[c] = r
        app = [float(r["Total Reserved(MB)"]) for r in rows if r["Component"] == "APP"]
        assert min(app) >= 0 and max(app) >= max_pta_res
        om = read_csv(os.path.join(out, "operator_memory.csv"))
        for r in om:
            assert r["Allocation Time(us)"].endswith("\t")
            assert ns(r["Release Time(us)"]) >= ns(r["Allocation Time(us)"])


def test_communication_multi_rank(gen):
    dirs, job = _spans(gen, "torch_npu_dist4")
    assert len(dirs) == 4
    names_by_rank = {}
    for d in dirs:
        infos = [f for f in os.listdir(d) if f.startswith("profiler_info_")]
        assert len(infos) == 1
        rank = json.load(open(os.path.join(d, infos[0])))["rank_id"]
        assert infos[0] == "profiler_info_%d.json" % rank
        out = os.path.join(d, "ASCEND_PROFILER_OUTPUT")
        tr = load_trace(out)
        tnames = {e["name"] for e in tr if e.get("ph") == "X" and e["name"].startswith("hcom_")}
        cj = json.load(open(os.path.join(out, "communication.json")))
        ops = set()
        for step in cj.values():
            for k, v in step["collective"].items():
                if k == "Total Op Info":
                    continue
                ops.add(k.split("@")[0])
                t = v["Communication Time Info"]
                assert t["Elapse Time(ms)"] + 1e-6 >= t["Transit Time(ms)"] + t["Wait Time(ms)"]
                assert 0 <= t["Wait Time Ratio"] <= 1 and 0 <= t["Synchronization Time Ratio"] <= 1
        assert ops == tnames
        names_by_rank[rank] = ops
        assert json.load(open(os.path.join(out, "communication_matrix.json")))
    assert len({frozenset(v) for v in names_by_rank.values()}) == 1
    # planted straggler / slow link are visible in the truth
    assert job.straggler_rank == 2 and job.slow_link == (1, 2)
    comp = {r.rank: sum(s.breakdown_us["computing"] for s in r.steps) for r in job.runs}
    assert max(comp, key=comp.get) == 2
    bw = {r.rank: min(c.bandwidth_gbps for c in r.comm_ops) for r in job.runs}
    assert min(bw, key=bw.get) == 1
    # non-straggler ranks start each op at nearly the same time (< 100 us apart)
    for i in range(len(job.run(0).comm_ops)):
        starts = [job.run(r).comm_ops[i].start_ns for r in (0, 1, 3)]
        assert max(starts) - min(starts) < 100_000


def test_other_producers_parse(gen):
    a, _, jobs = gen
    ms = span_dirs(os.path.join(a, "mindspore_2x"))[0]
    rows = read_csv(os.path.join(ms, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv"))
    assert "Step ID" in rows[0] and "Device_id" not in rows[0]
    stt = read_csv(os.path.join(ms, "ASCEND_PROFILER_OUTPUT", "step_trace_time.csv"))
    assert len(stt) == 1 and stt[0]["Step"] == "0"
    kin = os.path.join(a, "kineto_gpu")
    files = sorted(os.listdir(kin))
    assert any(f.endswith(".pt.trace.json") for f in files) and any(f.endswith(".pt.trace.json.gz") for f in files)
    for f in files:
        d = json.load(gzip.open(os.path.join(kin, f), "rt")) if f.endswith(".gz") else json.load(open(os.path.join(kin, f)))
        cats = {e.get("cat") for e in d["traceEvents"]}
        assert {"kernel", "cuda_runtime", "cpu_op", "ac2g", "gpu_memcpy"} <= cats or {"Kernel", "Runtime", "Operator"} <= cats
    prof = os.path.join(a, "msprof_paddle")
    p = os.listdir(prof)[0]
    outs = os.listdir(os.path.join(prof, p, "mindstudio_profiler_output"))
    assert len([f for f in outs if f.startswith("op_summary_slice_")]) == 2
    json.load(open(os.path.join(prof, p, "mindstudio_profiler_output", [f for f in outs if f.startswith("msprof_")][0])))


def test_large_mode_streaming(tmp_path):
    cfg = g.Config(producer="torch_npu", layers=6, keep_detail=False, seed=9, host="big", base_pid=40000)
    cfg.steps = g.calibrate_steps(cfg, 5)
    job = g.write_run(cfg, str(tmp_path))
    out = os.path.join(str(tmp_path), job.runs[0].dir_name, "ASCEND_PROFILER_OUTPUT")
    size = os.path.getsize(os.path.join(out, "trace_view.json"))
    assert 4e6 < size < 7e6
    json.load(open(os.path.join(out, "trace_view.json")))
    kd = read_csv(os.path.join(out, "kernel_details.csv"))
    assert len(kd) == job.runs[0].kernel_count
    assert not job.runs[0].steps[0].kernels  # keep_detail=False keeps aggregates only
    assert job.runs[0].steps[0].kernel_time_us_by_name
