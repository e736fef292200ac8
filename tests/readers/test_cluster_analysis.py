"""readers/cluster_analysis.py and discovery of `cluster_analysis_output/`: values computed
here from the files with csv / json / sqlite3; bad input per file; the committed
fixtures are what the generator renders."""
from __future__ import annotations

import csv
import dataclasses
import filecmp
import json
import os
import shutil
import sqlite3

import pytest

from fixtures import generate as g
from tb_plugin import discovery as D
from tb_plugin.advisor import thresholds
from tb_plugin.analysis import distributed as dist
from tb_plugin.analysis import rank_summary
from tb_plugin.readers import read
from tests.tb_server import FIXTURES

RAW = "torch_npu_dist4"


@pytest.fixture(scope="module")
def job_dir(tmp_path_factory):
    """The dist4 job rendered with both exports (text and db) next to its raw ranks."""
    root = tmp_path_factory.mktemp("cluster")
    for export in ("text", "db"):
        g.write_run(dataclasses.replace(g.FIXTURES[RAW], cluster_analysis=export),
                    str(root / export))
    return root


def _profiles(run):
    return {w.rank: read(w.spans[D.CLUSTER_SPAN]) for w in run.sorted_workers()}


def _discover(path):
    runs, _ = D.discover(str(path))
    return runs


@pytest.mark.parametrize("export", ["text", "db"])
def test_discovery_lists_one_worker_per_rank(job_dir, export):
    runs = _discover(job_dir / export)
    run = runs["cluster_analysis_output"]
    assert [(w.name, w.rank, w.producer) for w in run.sorted_workers()] == \
        [(f"rank{r}", r, "cluster_analysis") for r in range(4)]
    spans = [w.spans[D.CLUSTER_SPAN] for w in run.sorted_workers()]
    assert {s.root for s in spans} == {str(job_dir / export / "cluster_analysis_output")}
    assert [s.device_id for s in spans] == [0, 1, 2, 3]  # distinct cache keys
    assert "." in runs  # the raw ranks stay a run of their own


def _csv_rank_rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["Type"] == "rank"]


def test_text_steps_are_the_rank_rows(job_dir):
    out = job_dir / "text" / "cluster_analysis_output"
    rows = _csv_rank_rows(out / "cluster_step_trace_time.csv")
    profiles = _profiles(_discover(job_dir / "text")["cluster_analysis_output"])
    for rank, prof in profiles.items():
        assert prof.errors == []
        mine = [r for r in rows if int(r["Index"]) == rank]
        steps = prof.table("steps")
        assert steps["step"].tolist() == [int(r["Step"]) for r in mine]
        for (_, s), r in zip(steps.iterrows(), mine):
            assert s["bd_computing"] == round(float(r["Computing"]) * 1000)
            assert s["bd_free"] == round(float(r["Free"]) * 1000)
            assert s["total_ns"] == s["bd_computing"] + s["bd_communication_not_overlapped"] \
                + s["bd_free"]


def test_text_comm_ops_are_the_rank_entries(job_dir):
    doc = json.load(open(job_dir / "text" / "cluster_analysis_output" /
                         "cluster_communication.json", encoding="utf-8"))
    expected: dict = {}
    for steps in doc.values():
        for ops in steps.values():
            for key, per_rank in ops.items():
                if key.startswith("Total Op Info"):
                    continue
                for rank, info in per_rank.items():
                    e = expected.setdefault(int(rank), [0, 0.0, 0.0])
                    e[0] += 1
                    e[1] += info["Communication Time Info"]["Elapse Time(ms)"]
                    e[2] += info["Communication Time Info"]["Wait Time(ms)"]
    profiles = _profiles(_discover(job_dir / "text")["cluster_analysis_output"])
    assert set(expected) == set(profiles)
    for rank, prof in profiles.items():
        ops = prof.table("communication_ops")
        assert len(ops) == expected[rank][0]
        assert ops["elapse_ns"].sum() == pytest.approx(expected[rank][1] * 1e6, abs=len(ops))
        assert ops["wait_ns"].sum() == pytest.approx(expected[rank][2] * 1e6, abs=len(ops))
        assert set(ops["kind"].astype(str)) == {"collective"}


def test_db_tables_give_the_same_profiles_as_text(job_dir):
    text = _profiles(_discover(job_dir / "text")["cluster_analysis_output"])
    db = _profiles(_discover(job_dir / "db")["cluster_analysis_output"])
    for rank in text:
        assert db[rank].errors == []
        a, b = rank_summary.rank_summary(text[rank]), rank_summary.rank_summary(db[rank])
        assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_db_links_are_the_total_rows_of_their_source_rank(job_dir):
    path = job_dir / "db" / "cluster_analysis_output" / "cluster_analysis.db"
    con = sqlite3.connect(str(path))
    rows = con.execute("SELECT src_rank, dst_rank, transit_size FROM ClusterCommAnalyzerMatrix "
                       "WHERE hccl_op_name = 'Total Op Info'").fetchall()
    con.close()
    profiles = _profiles(_discover(job_dir / "db")["cluster_analysis_output"])
    for rank, prof in profiles.items():
        links = prof.table("communication_links")
        mine = sorted((int(s), int(d), round(z, 6)) for s, d, z in rows if int(s) == rank)
        got = sorted((int(s), int(d), round(z, 6)) for s, d, z in
                     zip(links["src_rank"], links["dst_rank"], links["transit_size_mb"]))
        assert got == mine and mine
        assert links["aggregate"].all()


def test_summaries_equal_the_raw_ranks(job_dir):
    runs = _discover(job_dir / "text")
    raw = {w.rank: read(w.spans[w.sorted_spans()[0]]) for w in runs["."].sorted_workers()}
    cluster = _profiles(runs["cluster_analysis_output"])

    def view(profiles):
        out = []
        for rank in sorted(profiles):
            s = rank_summary.rank_summary(profiles[rank])
            out.append({**s, "rank": rank, "worker": f"rank{rank}"})
        return dist.run_view(out, thresholds.load())

    a, b = view(raw), view(cluster)
    assert [f["rank"] for f in b["findings"] if f["kind"] == "straggler"] == [2]
    assert [f["link"] for f in b["findings"] if f["kind"] == "slow_link"] == ["1-2"]
    for key in ("slowest", "comm_ops", "matrix", "heatmap"):
        assert json.dumps(a[key], sort_keys=True) == json.dumps(b[key], sort_keys=True), key


# ---- bad input ----------------------------------------------------------------------------------

def _copy_text(job_dir, tmp_path):
    dst = tmp_path / "cluster_analysis_output"
    shutil.copytree(job_dir / "text" / "cluster_analysis_output", dst)
    return dst


def test_truncated_comm_json_is_a_file_error_and_the_rest_loads(job_dir, tmp_path):
    out = _copy_text(job_dir, tmp_path)
    p = out / "cluster_communication.json"
    p.write_bytes(p.read_bytes()[:5000])
    prof = _profiles(_discover(tmp_path)["cluster_analysis_output"])[1]
    assert [e.path for e in prof.errors] == ["cluster_analysis_output/cluster_communication.json"]
    assert "JSON" in prof.errors[0].message
    assert len(prof.table("steps")) == 2 and len(prof.table("communication_links")) > 0
    assert len(prof.table("communication_ops")) == 0


def test_step_csv_without_required_column(job_dir, tmp_path):
    out = _copy_text(job_dir, tmp_path)
    p = out / "cluster_step_trace_time.csv"
    text = p.read_text(encoding="utf-8").replace("Computing,", "Computed,", 1)
    p.write_text(text, encoding="utf-8")
    prof = _profiles(_discover(tmp_path)["cluster_analysis_output"])[0]
    assert [e.path for e in prof.errors] == ["cluster_analysis_output/cluster_step_trace_time.csv"]
    assert "Computing" in prof.errors[0].message
    assert len(prof.table("communication_ops")) > 0


def test_steps_and_ranks_beyond_any_integer_name_nothing(job_dir, tmp_path):
    """Found by the fuzz run (seed 31, `huge_numbers`): a step of 30 digits overflowed
    int64 and rank 0's steps were an internal error. A step or rank Index beyond int64
    (or not finite) names no step and no rank: those rows are left out, the rest is read."""
    out = _copy_text(job_dir, tmp_path)
    p = out / "cluster_step_trace_time.csv"
    with open(p, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    head, body = rows[0], rows[1:]
    step, index = head.index("Step"), head.index("Index")
    rows_of = {k: [i for i, r in enumerate(body)
                   if r[head.index("Type")] == "rank" and r[index] == str(k)] for k in range(4)}
    assert all(len(v) >= 2 for v in rows_of.values())
    body[rows_of[0][0]][step] = "123456789012345678901234567890"
    body[rows_of[1][0]][index] = "-1e308"
    body[rows_of[2][0]][index] = "inf"
    with open(p, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([head, *body])
    run = _discover(tmp_path)["cluster_analysis_output"]
    assert run.errors == []
    profiles = _profiles(run)
    assert sorted(profiles) == [0, 1, 2, 3]
    for rank, prof in profiles.items():
        assert prof.errors == [], (rank, prof.errors)
    assert profiles[0].table("steps")["step"].tolist() == \
        [int(body[i][step]) for i in rows_of[0][1:]]
    for rank in (1, 2):
        assert len(profiles[rank].table("steps")) == len(rows_of[rank]) - 1


def test_no_rank_rows_is_a_run_error(tmp_path):
    out = tmp_path / "cluster_analysis_output"
    out.mkdir()
    (out / "cluster_step_trace_time.csv").write_text("Step,Type,Index,Computing\n",
                                                     encoding="utf-8")
    run = _discover(tmp_path)["cluster_analysis_output"]
    assert run.workers == {}
    assert [e["path"] for e in run.errors] == ["cluster_analysis_output"]
    assert "no rank rows" in run.errors[0]["message"]


def test_wrong_schema_db(job_dir, tmp_path):
    out = tmp_path / "cluster_analysis_output"
    shutil.copytree(job_dir / "db" / "cluster_analysis_output", out)
    con = sqlite3.connect(str(out / "cluster_analysis.db"))
    con.execute("DROP TABLE ClusterCommAnalyzerTime")
    con.execute("CREATE TABLE ClusterCommAnalyzerTime (something TEXT)")
    con.commit()
    con.close()
    prof = _profiles(_discover(tmp_path)["cluster_analysis_output"])[0]
    assert [e.path for e in prof.errors] == ["cluster_analysis_output/cluster_analysis.db"]
    assert "cannot read the database" in prof.errors[0].message
    assert len(prof.table("steps")) == 2 and len(prof.table("communication_links")) > 0


def test_locked_db_is_a_file_error(job_dir, tmp_path):
    out = tmp_path / "cluster_analysis_output"
    shutil.copytree(job_dir / "db" / "cluster_analysis_output", out)
    ranks_before = _discover(tmp_path)["cluster_analysis_output"]
    span = ranks_before.workers["rank0"].spans[D.CLUSTER_SPAN]
    writer = sqlite3.connect(str(out / "cluster_analysis.db"))
    writer.execute("BEGIN EXCLUSIVE")
    try:
        prof = read(span)
    finally:
        writer.rollback()
        writer.close()
    assert prof.errors and {e.path for e in prof.errors} == \
        {"cluster_analysis_output/cluster_analysis.db"}
    assert "locked" in prof.errors[0].message
    assert read(span).errors == []  # retried once the writer is done


def test_not_a_database(tmp_path):
    out = tmp_path / "cluster_analysis_output"
    out.mkdir()
    (out / "cluster_analysis.db").write_bytes(b"this is not sqlite" * 100)
    run = _discover(tmp_path)["cluster_analysis_output"]
    assert run.workers == {} and "cannot list the ranks" in run.errors[0]["message"]


# ---- committed fixtures -----------------------------------------------------------------------

def _files(d):
    return sorted(os.path.relpath(os.path.join(b, f), d) for b, _, fs in os.walk(d) for f in fs)


def test_committed_cluster_and_any_name_fixtures_up_to_date(tmp_path):
    g._make_cluster_analysis(str(tmp_path))
    g._make_any_name(str(tmp_path))
    made = _files(tmp_path)
    assert made == ["any_name/chrome_trace_14.json",
                    "cluster_analysis/cluster_analysis_output/cluster_communication.json",
                    "cluster_analysis/cluster_analysis_output/cluster_communication_matrix.json",
                    "cluster_analysis/cluster_analysis_output/cluster_step_trace_time.csv"]
    for f in made:
        assert filecmp.cmp(tmp_path / f, os.path.join(FIXTURES, f), shallow=False), f
