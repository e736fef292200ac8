"""Traces of any name: the sniffer (`discovery.sniff_trace` / `sniff_file`) and what
discovery makes of a logdir full of JSON that is and is not a trace."""
from __future__ import annotations

import builtins
import gzip
import json
import os
import random
import shutil

import pytest

from tb_plugin import discovery as D
from tests.tb_server import FIXTURES

KINETO_OBJ = {"schemaVersion": 1, "deviceProperties": [],
              "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1,
                               "tid": 1, "ts": 1, "dur": 2}]}
PLAIN_OBJ = {"traceEvents": [{"ph": "X", "name": "work", "pid": 1, "tid": 1, "ts": 1,
                              "dur": 2}], "displayTimeUnit": "ms"}
ASCEND_LIST = [{"ph": "M", "name": "process_name", "pid": 3, "tid": 0,
                "args": {"name": "Ascend Hardware"}},
               {"ph": "X", "name": "ProfilerStep#1", "cat": "cpu_op", "pid": 9, "tid": 9,
                "ts": "1.0", "dur": 2}]


def sniff(obj) -> str | None:
    raw = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return D.sniff_trace(raw[:D.SNIFF_BYTES])


@pytest.mark.parametrize("obj, kind", [
    (KINETO_OBJ, "kineto"),
    (PLAIN_OBJ, "chrome_trace"),
    ({"displayTimeUnit": "ns", "traceEvents": []}, "chrome_trace"),
    (ASCEND_LIST, "chrome_trace"),                      # cpu_op, but an Ascend timeline
    ([{"name": "a", "ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "pid": 0, "tid": 7}],
     "kineto"),
    ([{"name": "Iteration 1", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "ph": "X"}],
     "chrome_trace"),                                   # `ph` last in the first event
])
def test_traces(obj, kind):
    assert sniff(obj) == kind


@pytest.mark.parametrize("obj", [
    {"name": "demo", "version": "1.0.0"},                      # package.json
    {"rank_id": 0, "config": {"common_config": {}}},           # profiler_info.json
    {"step1": {"collective": {}, "p2p": {}}},                  # communication.json
    {"traceEvents": 5},                                        # key, but not a list
    {"meta": {"traceEvents": []}},                             # not at the top level
    {"events": [{"ph": "X"}]},
    [1, 2, {"ph": "X"}],                                       # first element not an event
    [{"name": "x", "args": {"ph": "X"}}],                      # `ph` only nested deeper
    [],
    "traceEvents",
    b"",
    b"\x00\x01\x02binary \xff\xfe junk",
    b'{"traceEv',                                              # cut before the evidence
    b'{"data": "' + b"x" * (2 * 8192) + b'", "traceEvents": []}',  # evidence after prefix
])
def test_not_traces(obj):
    assert sniff(obj) is None


def test_truncated_after_the_evidence_is_a_trace():
    raw = b'{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "ts'
    assert D.sniff_trace(raw) == "chrome_trace"


def test_escaped_quotes_and_braces_in_strings_do_not_confuse_the_scanner():
    obj = {"note": 'a "quoted" {brace} [bracket] \\', "traceEvents": []}
    assert sniff(obj) == "chrome_trace"
    assert sniff({"note": '"traceEvents": [', "x": 1}) is None


def test_kineto_header_longer_than_the_prefix(tmp_path):
    # HTA's distributedInfo runs past the sniffed prefix before traceEvents starts.
    doc = {"schemaVersion": 1, "distributedInfo": {"pg_config": ["x" * 100] * 200},
           "traceEvents": []}
    raw = json.dumps(doc).encode()
    assert raw.index(b"traceEvents") > D.SNIFF_BYTES
    assert sniff(raw) == "kineto"


def test_real_hta_traces_sniff_as_kineto():
    for p in (os.path.join(FIXTURES, "real", "hta_cpu_only",
                           "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"),
              os.path.join(FIXTURES, "any_name", "hta", "rank-0.json.gz")):
        assert D.sniff_trace(D.read_prefix(p)) == "kineto"


def _write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


def test_gz_is_inflated_only_from_its_first_bytes(tmp_path):
    events = [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}
              for i in range(20000)]
    p = _write(tmp_path / "t.json.gz", gzip.compress(json.dumps({"traceEvents": events}).encode()))
    assert os.path.getsize(p) > 10 * D.SNIFF_GZ_BYTES
    prefix = D.read_prefix(p)
    assert 0 < len(prefix) <= D.SNIFF_BYTES
    assert D.sniff_trace(prefix) == "chrome_trace"
    assert D.read_prefix(_write(tmp_path / "bad.json.gz", b"not gzip at all")) == b""


def test_reads_at_most_a_few_kb(tmp_path, monkeypatch):
    # A valid start and a garbage tail: the verdict comes from the start alone, and the
    # bytes read are bounded however large the file.
    head = json.dumps(PLAIN_OBJ)[:-2].encode()
    tail = bytes(random.Random(3).randrange(256) for _ in range(1 << 20))
    p = _write(tmp_path / "x.json", head + tail)
    read_sizes = []
    real_open = builtins.open

    class Counting:
        def __init__(self, fh):
            self.fh = fh

        def read(self, n=-1):
            data = self.fh.read(n)
            read_sizes.append(len(data))
            return data

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    def counting_open(path, mode="r", *a, **k):
        fh = real_open(path, mode, *a, **k)
        return Counting(fh) if str(path) == p else fh

    monkeypatch.setattr(builtins, "open", counting_open)
    assert D.sniff_file(p) == "chrome_trace"
    assert 0 < sum(read_sizes) <= D.SNIFF_BYTES


def test_memoised_per_path_size_and_mtime(tmp_path, monkeypatch):
    p = _write(tmp_path / "m.json", json.dumps(PLAIN_OBJ).encode())
    calls = []
    real = D.read_prefix
    monkeypatch.setattr(D, "read_prefix", lambda path: calls.append(path) or real(path))
    assert D.sniff_file(p) == D.sniff_file(p) == "chrome_trace"
    assert calls == [p]
    _write(tmp_path / "m.json", json.dumps({"name": "now a package.json"}).encode())
    os.utime(p, ns=(1, 1))
    assert D.sniff_file(p) is None
    assert calls == [p, p]


def test_discovery_finds_exactly_the_traces(tmp_path):
    root = tmp_path
    _write(root / "job" / "chrome_trace_14.json", json.dumps(ASCEND_LIST).encode())
    _write(root / "job" / "rank-0.json.gz", gzip.compress(json.dumps(KINETO_OBJ).encode()))
    _write(root / "job" / "rank-1.json.gz", gzip.compress(json.dumps(KINETO_OBJ).encode()))
    _write(root / "job" / "profiler_info.json", json.dumps({"rank_id": 0}).encode())
    _write(root / "job" / "package.json", json.dumps(PLAIN_OBJ).encode())  # name: never opened
    _write(root / "job" / "events.out.tfevents.1.host", b"\x00\x01tfevents")
    _write(root / "job" / "config.json", json.dumps({"lr": 0.1}).encode())
    _write(root / "job" / "junk.json", b"\xff\xfe\x00junk")
    _write(root / "job" / "empty.json", b"")
    _write(root / "web" / "node_modules" / "x" / "trace.json", json.dumps(PLAIN_OBJ).encode())
    _write(root / "cache" / "tensorboard-plugin-npu-profiler" / "v3" / "t.json",
           json.dumps(PLAIN_OBJ).encode())
    # A trace inside a recognised span directory belongs to that span, not a run of its own.
    span = root / "npu" / "host_1_20240101000000000_ascend_pt"
    _write(span / "ASCEND_PROFILER_OUTPUT" / "trace_view.json", json.dumps(ASCEND_LIST).encode())
    _write(span / "ASCEND_PROFILER_OUTPUT" / "extra_copy.json", json.dumps(ASCEND_LIST).encode())
    _write(span / "profiler_info.json", b"{}")
    runs, _ = D.discover(str(root))
    assert sorted(runs) == ["job", "npu"]
    job = runs["job"]
    assert {w.name: (w.producer, list(w.spans)) for w in job.workers.values()} == {
        "chrome_trace_14": ("chrome_trace", ["default"]),
        "rank-0": ("kineto", ["default"]),
        "rank-1": ("kineto", ["default"]),
    }
    src = job.workers["rank-0"].spans["default"]
    assert src.root == src.files[0] == str(root / "job" / "rank-0.json.gz")
    assert [w.producer for w in runs["npu"].workers.values()] == ["torch_npu"]


def test_fixture_not_traces_folder_gives_no_run(tmp_path):
    shutil.copytree(os.path.join(FIXTURES, "any_name", "not_traces"), tmp_path / "not_traces")
    runs, _ = D.discover(str(tmp_path))
    assert runs == {}


def test_sniff_budget_bounds_one_scan(tmp_path, monkeypatch):
    for i in range(5):
        _write(tmp_path / f"t{i}.json", json.dumps(PLAIN_OBJ).encode())
    monkeypatch.setattr(D, "MAX_SNIFFS_PER_SCAN", 3)
    monkeypatch.setattr(D, "_sniff_memo", None)
    runs, _ = D.discover(str(tmp_path))
    assert len(runs["."].workers) == 3
    runs, _ = D.discover(str(tmp_path))  # the rest on the next scan; known ones are free
    assert len(runs["."].workers) == 5
