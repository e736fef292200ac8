"""The plugin's entry point (`NpuProfilerLoader`): loading starts when TensorBoard has parsed
its flags (`fix_flags`), and the plugin TensorBoard makes later (`load`) serves from that
same Loader; nothing starts for a TensorBoard that will not serve, and a plugin made for
another logdir than the flags named reads its own."""
import argparse
import os
import shutil

import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin

from tb_plugin.plugin import NpuProfilerLoader, NpuProfilerPlugin
from tests.tb_server import FIXTURES

DIST4 = os.path.join(FIXTURES, "torch_npu_dist4")


def _spans_on_disk(logdir: str) -> int:
    return sum(name.endswith("_ascend_pt") for _, dirs, _ in os.walk(logdir) for name in dirs)


@pytest.fixture
def logdirs(tmp_path, monkeypatch):
    monkeypatch.setenv("NPU_PROFILER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NPU_PROFILER_LOGDIR", raising=False)
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(DIST4, first / "dist4")
    shutil.copytree(os.path.join(FIXTURES, "torch_npu_level1"), second / "level1")
    return str(first), str(second)


def _flags(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"logdir": "", "inspect": False, "version_tb": False, **kw})


def _span_count(plugin) -> int:
    return sum(len(st_list) for st_list in
               (plugin.loader.span_states(r.name) for r in plugin.loader.runs()))


def test_tensorboard_takes_the_entry_point_as_a_loader():
    assert isinstance(application.make_plugin_loader(NpuProfilerLoader), NpuProfilerLoader)


def test_loading_starts_at_fix_flags_and_the_plugin_serves_from_that_loader(logdirs):
    first, _ = logdirs
    entry = NpuProfilerLoader()
    entry.fix_flags(_flags(logdir=first))
    early = entry._early
    assert early is not None
    started = early.loader()  # made before TensorBoard makes the plugin
    assert started.wait_scanned(60)
    plugin = entry.load(base_plugin.TBContext(logdir=first))
    try:
        assert isinstance(plugin, NpuProfilerPlugin)
        assert plugin.loader is started
        assert plugin.logdir == first
        assert _span_count(plugin) == _spans_on_disk(first) == 4
        assert entry._early is None  # handed over once
    finally:
        plugin.loader.stop(terminate_readers=True)


@pytest.mark.parametrize("flags", [dict(logdir=""), dict(version_tb=True), dict(inspect=True)],
                         ids=["no logdir", "--version_tb", "--inspect"])
def test_nothing_starts_for_a_tensorboard_that_will_not_serve_a_logdir(logdirs, flags):
    first, _ = logdirs
    entry = NpuProfilerLoader()
    entry.fix_flags(_flags(**{"logdir": first, **flags}) if "logdir" not in flags
                    else _flags(**flags))
    assert entry._early is None


def test_a_plugin_made_for_another_logdir_reads_its_own(logdirs):
    first, second = logdirs
    entry = NpuProfilerLoader()
    entry.fix_flags(_flags(logdir=first))
    early_loader = entry._early.loader()
    plugin = entry.load(base_plugin.TBContext(logdir=second))
    try:
        assert plugin.loader is not early_loader
        assert early_loader.stopped
        assert plugin.loader.logdir == second
        assert plugin.loader.wait_scanned(60)
        assert [r.name for r in plugin.loader.runs()] == ["level1"]
    finally:
        plugin.loader.stop(terminate_readers=True)


def test_the_plugin_logdir_variable_wins_over_the_flags(logdirs, monkeypatch):
    first, second = logdirs
    monkeypatch.setenv("NPU_PROFILER_LOGDIR", second)
    entry = NpuProfilerLoader()
    entry.fix_flags(_flags(logdir=first))
    assert entry._early.logdir == second
    plugin = entry.load(base_plugin.TBContext(logdir=first))
    try:
        assert plugin.loader.logdir == second
    finally:
        plugin.loader.stop(terminate_readers=True)
