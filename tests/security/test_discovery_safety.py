"""Discovery and the readers' file lookup on a real file system: symlinks out of the logdir
are not followed (unless the user opts in), and names that are not UTF-8 become escaped
names that still address the same run."""
from __future__ import annotations

import json
import os

import pytest

from tb_plugin import discovery, readers
from tb_plugin.discovery import EXTERNAL_SYMLINK, FOLLOW_EXTERNAL_SYMLINKS_ENV
from tests.security.conftest import (BAD_RUN_NAME, BAD_WORKER_NAME, SECRET, SECRET_OP,
                                     build_logdir)


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    monkeypatch.delenv(FOLLOW_EXTERNAL_SYMLINKS_ENV, raising=False)
    return build_logdir(str(tmp_path))


def _all_files(runs) -> list[str]:
    return [f for r in runs.values() for s in r.spans() for f in (s.root, *s.files)]


def test_symlinks_out_of_the_logdir_are_not_followed(dirs):
    logdir, outside = dirs
    runs, notes = discovery.discover(logdir)
    real_outside = os.path.realpath(outside)
    # Nothing discovery hands to readers resolves outside the logdir.
    assert [f for f in _all_files(runs)
            if os.path.realpath(f).startswith(real_outside + os.sep)] == []
    # The linked run directory and the linked kineto file are named, with the reason.
    assert runs["extrun"].workers == {}
    assert runs["extrun"].errors == [{"path": "extrun", "message": EXTERNAL_SYMLINK}]
    assert runs["kinlink"].workers == {}
    assert runs["kinlink"].errors == [{"path": "kinlink/w.1.pt.trace.json",
                                       "message": EXTERNAL_SYMLINK}]
    assert f"extrun: {EXTERNAL_SYMLINK}" in notes
    assert "NPU_PROFILER_FOLLOW_EXTERNAL_SYMLINKS=1" in EXTERNAL_SYMLINK
    # A linked file inside a span is left out of its file list.
    torch_span = runs["torch"].spans()[0]
    assert not any(f.endswith("trace_view.json") for f in torch_span.files)
    assert any(f.endswith("kernel_details.csv") for f in torch_span.files)


def test_reader_reports_a_linked_file_and_reads_the_rest(dirs):
    logdir, _ = dirs
    runs, _ = discovery.discover(logdir)
    prof = readers.read(runs["torch"].spans()[0])
    rel = "torch/" + os.path.basename(runs["torch"].spans()[0].root) + \
        "/ASCEND_PROFILER_OUTPUT/trace_view.json"
    assert [e.to_json() for e in prof.errors if e.path == rel] == \
        [{"path": rel, "message": EXTERNAL_SYMLINK}]
    assert prof.has("kernels") and not prof.has("slices")


def test_opt_in_follows_symlinks_out_of_the_logdir(dirs, monkeypatch):
    logdir, _ = dirs
    monkeypatch.setenv(FOLLOW_EXTERNAL_SYMLINKS_ENV, "1")
    runs, notes = discovery.discover(logdir)
    assert notes == []
    assert list(runs["extrun"].workers) == ["host"]
    assert list(runs["kinlink"].workers) == ["w"]
    prof = readers.read(runs["extrun"].spans()[0])
    assert SECRET_OP in set(prof.table("operators")["name"].astype(str))


def test_inside_logdir(tmp_path, monkeypatch):
    monkeypatch.delenv(FOLLOW_EXTERNAL_SYMLINKS_ENV, raising=False)
    logdir = tmp_path / "logs"
    (logdir / "run").mkdir(parents=True)
    (tmp_path / "logs-other").mkdir()
    (tmp_path / "secret").write_text(SECRET)
    os.symlink(tmp_path / "secret", logdir / "run" / "link")
    os.symlink(logdir / "run", logdir / "inner_link")
    L = str(logdir)
    assert discovery.inside_logdir(L, L)
    assert discovery.inside_logdir(f"{L}/run", L)
    assert discovery.inside_logdir(f"{L}/inner_link", L)  # a link that stays inside
    assert not discovery.inside_logdir(f"{L}/run/link", L)
    assert not discovery.inside_logdir(f"{L}/run/../../secret", L)
    assert not discovery.inside_logdir(f"{L}/..", L)
    assert not discovery.inside_logdir(str(tmp_path / "logs-other"), L)  # a prefix only
    assert not discovery.inside_logdir("/etc/passwd", L)
    monkeypatch.setenv(FOLLOW_EXTERNAL_SYMLINKS_ENV, "1")
    assert discovery.inside_logdir(f"{L}/run/link", L)
    # The opt-in is about symlinks only: `..` out of the logdir is never allowed.
    assert not discovery.inside_logdir(f"{L}/run/../../secret", L)


def test_names_that_are_not_utf8_are_escaped_and_json_safe(dirs):
    logdir, _ = dirs
    runs, _ = discovery.discover(logdir)
    run = runs[BAD_RUN_NAME]
    assert list(run.workers) == [BAD_WORKER_NAME]
    span = run.spans()[0]
    assert (span.run, span.worker) == (BAD_RUN_NAME, BAD_WORKER_NAME)
    # The real path keeps the original bytes, so the files are still found and read.
    assert os.fsencode(span.root).endswith(b"bad\xffrun/node01\xff_23456_20240601000000000"
                                           b"_ascend_pt")
    json.dumps([r.name for r in runs.values()], ensure_ascii=False).encode("utf-8")
    prof = readers.read(span)
    assert prof.has("kernels") and prof.has("steps") and prof.has("memory_records")


@pytest.mark.parametrize("raw, shown", [
    ("plain", "plain"),
    ("ünïcode ✓", "ünïcode ✓"),
    (os.fsdecode(b"a\xffb"), "a\\xffb"),
    (os.fsdecode(b"\xc3(x"), "\\xc3(x"),
    ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
])
def test_printable(raw, shown):
    assert discovery.printable(raw) == shown
    discovery.printable(raw).encode("utf-8")  # always valid UTF-8
