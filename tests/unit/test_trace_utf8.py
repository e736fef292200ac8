"""Invalid UTF-8 inside a Chrome trace (an op name, a category, an args value, a process name)
keeps every event, for every producer and for .json and .json.gz, with one warning per file
that names the file and the count.

Each fixture's trace is rewritten twice by the stdlib `json` module: once clean, once with a
0xFF byte appended to one slice name, one category, one slice args value and one
`process_name`. The expectation (same row counts, names ending in U+FFFD) comes from the
clean file read the same way, not from the decoder under test.
"""
from __future__ import annotations

import collections
import gzip
import json
import os
import shutil

import pytest

from tb_plugin import discovery
from tb_plugin import readers

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
MARK = "@@INVALID-UTF8@@"
BAD = b"\xff"
CASES = ["torch_npu_level1", "torch_npu_legacy_2023", "kineto_gpu", "real/kineto_resnet50_w0",
         "real/mindinsight_msprof_cann63", "msprof_paddle", "mindspore_2x",
         "real/mindspore_legacy_run1"]


def _load(path: str):
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8"))


def _events(doc):
    return doc.get("traceEvents") if isinstance(doc, dict) else doc


def _trace_files(span) -> list[str]:
    out = []
    for p in span.files:
        if not p.endswith((".json", ".json.gz")):
            continue
        try:
            doc = _load(p)
        except (ValueError, UnicodeDecodeError, OSError):
            continue
        evs = _events(doc) if isinstance(doc, (dict, list)) else None
        if isinstance(evs, list) and any(isinstance(e, dict) and e.get("ph") == "X"
                                         for e in evs):
            out.append(p)
    return out


def _plant(doc) -> dict:
    """Append MARK to one X name, one category, one args string and one process_name; returns
    what was marked (kind -> original text)."""
    evs = _events(doc)
    xs = [e for e in evs if isinstance(e, dict) and e.get("ph") == "X"
          and isinstance(e.get("name"), str) and e.get("dur", 0) not in (0, "0")]
    marked = {}
    ev = xs[len(xs) // 2]
    marked["name"] = ev["name"]
    ev["name"] = ev["name"] + MARK
    with_cat = [e for e in xs if isinstance(e.get("cat"), str) and e is not ev]
    if with_cat:
        c = with_cat[len(with_cat) // 3]
        marked["cat"] = c["cat"]
        c["cat"] = c["cat"] + MARK
    with_args = [e for e in xs if isinstance(e.get("args"), dict)
                 and any(isinstance(v, str) for v in e["args"].values())]
    if with_args:
        a = with_args[-1]["args"]
        k = next(k for k, v in a.items() if isinstance(v, str))
        marked["args"] = a[k]
        a[k] = a[k] + MARK
    procs = [e for e in evs if isinstance(e, dict) and e.get("ph") == "M"
             and e.get("name") == "process_name" and isinstance(e.get("args"), dict)
             and isinstance(e["args"].get("name"), str)]
    if procs:
        marked["process"] = procs[0]["args"]["name"]
        procs[0]["args"]["name"] = procs[0]["args"]["name"] + MARK
    return marked


def _write(path: str, doc, mark_as: bytes) -> None:
    data = json.dumps(doc).encode("utf-8").replace(MARK.encode(), mark_as)
    if path.endswith(".gz"):
        data = gzip.compress(data)
    with open(path, "wb") as fh:
        fh.write(data)


def _copy_fixture(name: str, dest: str) -> str:
    out = os.path.join(dest, name)
    shutil.copytree(os.path.join(FIXTURES, name), out, symlinks=True)
    return out


def _first_span(logdir: str):
    runs, _ = discovery.discover(logdir)
    spans = [s for r in runs.values() for s in r.spans()]
    spans.sort(key=lambda s: (s.producer, s.root))
    return next(s for s in spans if _trace_files(s))


def _read(span):
    profile = readers.read(span, None, stage="all")
    return profile


def _names(profile, table: str, col: str) -> collections.Counter:
    if not profile.has(table):
        return collections.Counter()
    return collections.Counter(profile.table(table)[col].astype(str))


@pytest.mark.parametrize("fixture", CASES)
def test_invalid_utf8_keeps_every_event(fixture, tmp_path):
    clean_dir = _copy_fixture(fixture, str(tmp_path / "clean"))
    bad_dir = _copy_fixture(fixture, str(tmp_path / "bad"))
    clean_span, bad_span = _first_span(clean_dir), _first_span(bad_dir)
    # The file each reader takes its timeline from (msprof ignores task_time_* when
    # msprof_*.json exist).
    files = _trace_files(clean_span)
    target = next((p for p in files if os.path.basename(p).startswith(
        ("msprof", "trace_view", "timeline_display"))), files[0])
    rel = os.path.relpath(target, clean_dir)
    doc = _load(target)
    marked = _plant(doc)
    _write(target, doc, b"")                       # same formatting, valid text
    _write(os.path.join(bad_dir, rel), doc, BAD)   # one 0xFF byte per marked string

    clean, bad = _read(clean_span), _read(bad_span)
    # (kernels/operators may differ: a category with U+FFFD is no longer a known one)
    for table in ("slices", "flows", "counters", "instants"):
        if clean.has(table):
            assert len(bad.table(table)) == len(clean.table(table)), table

    # The slice whose name got the byte is still there, with U+FFFD, and only it changed.
    expected = _names(clean, "slices", "name")
    orig = marked["name"]
    if expected[orig]:
        expected[orig] -= 1
        expected[orig + "\ufffd"] += 1
        assert _names(bad, "slices", "name") == +expected
    if "cat" in marked and clean.has("slices"):
        assert (orig_cat := marked["cat"] + "\ufffd") in _names(bad, "slices", "cat")
        assert _names(bad, "slices", "cat")[orig_cat] >= 1
    # (with several files of one device, another file may name the same process)
    if "process" in marked and len(files) == 1 and clean.has("tracks"):
        if marked["process"] in _names(clean, "tracks", "process"):
            assert marked["process"] + "\ufffd" in _names(bad, "tracks", "process")

    # One warning for that file, with the count; nothing else new.
    clean_errors = {(e.path, e.message) for e in clean.errors}
    new = [e for e in bad.errors if (e.path, e.message) not in clean_errors]
    assert len(new) == 1, new
    rel_to_logdir = os.path.relpath(os.path.join(bad_dir, rel), bad_span.logdir)
    assert new[0].path == rel_to_logdir
    assert "UTF-8" in new[0].message
    assert f"{len(marked)} invalid byte sequence" in new[0].message


def test_invalid_utf8_in_top_level_metadata_is_counted(tmp_path):
    """A bad byte in deviceProperties (outside the event array) keeps the metadata."""
    from tb_plugin.readers.trace_json import read_traces

    src = os.path.join(FIXTURES, "kineto_gpu", "worker1.1623200000000.pt.trace.json.gz")
    doc = _load(src)
    assert isinstance(doc, dict) and doc.get("deviceProperties")
    doc["deviceProperties"][0]["name"] = doc["deviceProperties"][0]["name"] + MARK
    path = str(tmp_path / "t.json")
    _write(path, doc, BAD)
    tt = read_traces([path])
    assert tt.metadata["deviceProperties"][0]["name"].endswith("\ufffd")
    assert tt.event_count == len(_events(doc))
    assert len(tt.errors) == 1 and "1 invalid byte sequence" in tt.errors[0][1]
