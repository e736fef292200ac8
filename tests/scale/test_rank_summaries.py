"""Rank summaries are made by the readers (right after a rank's views stage) and kept with
its cache entry, so the distributed view over any number of ranks opens no rank's tables in
TensorBoard's process."""
from __future__ import annotations

import os
import shutil
import time

from tb_plugin import cache as cache_mod
from tb_plugin.analysis import rank_summary
from tb_plugin.http import api_distributed
from tb_plugin.loading import Loader
from tests.tb_server import FIXTURES


def _loaded(tmp_path, run="torch_npu_dist4") -> Loader:
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    shutil.copytree(os.path.join(FIXTURES, run), logdir / run)
    loader = Loader(str(logdir), cache=cache_mod.ProfileCache(str(tmp_path / "cache")))
    loader.scan()
    deadline = time.time() + 300
    while time.time() < deadline:
        states = loader.span_states(run)
        if states and all(st.state in ("ready", "error") for st in states):
            return loader
        time.sleep(0.1)
    raise AssertionError("not loaded")


def test_each_rank_summary_is_in_the_cache_when_its_views_are_ready(tmp_path):
    loader = _loaded(tmp_path)
    try:
        run = loader.run("torch_npu_dist4")
        states = loader.span_states(run.name)
        assert len(states) == 4 and all(st.state == "ready" for st in states)
        for st in states:
            path = loader.cache.derived_path("distributed", st.key, rank_summary.SUMMARY_SUFFIX)
            assert os.path.isfile(path)
        # The route's summaries come from those documents alone: opening a profile fails.
        ranked = api_distributed._rank_spans(loader, run, None, 0)
        keys = tuple((r, w.name, s, st.key) for r, w, s, st in ranked)
        opened = []
        real_profile_for = loader.profile_for
        loader.profile_for = lambda st: opened.append(st) or real_profile_for(st)
        got = api_distributed._summaries_for(loader, run, keys)
        assert opened == [] and len(got) == 4
        # ... and they equal summaries made now from the opened profiles.
        for s, st in zip(got, [x[3] for x in ranked]):
            fresh = rank_summary.rank_summary(real_profile_for(st))
            assert {k: v for k, v in s.items() if k not in ("worker", "span", "rank")} == \
                {k: v for k, v in fresh.items() if k != "rank"}
    finally:
        loader.stop(terminate_readers=True)
