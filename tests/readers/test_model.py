"""Model-level pieces readers and analyses share: ProfileMeta, step windows, step categories."""
import dataclasses
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from tb_plugin import step_categories, step_windows
from tb_plugin.cache import open_profile, write_profile
from tb_plugin.model import Profile, ProfileMeta


# ----------------------------------------------------------------------------- ProfileMeta

def test_every_meta_field_is_typed_and_documented():
    for f in dataclasses.fields(ProfileMeta):
        assert f.type and f.type != "Any" or f.name == "args_table", f.name
        assert len(f.metadata["doc"]) > 10, f.name


def test_meta_by_name_accepts_declared_fields_only():
    m = ProfileMeta(producer="msprof", rank=3)
    assert m["rank"] == 3 and m.get("rank") == 3 and "rank" in m
    assert "world_size" not in m and m.get("world_size", 7) == 7
    with pytest.raises(KeyError):
        m["world_size"]
    with pytest.raises(KeyError):
        m["step_windows"] = [[1, 2, 3]]  # not metadata: a table
    with pytest.raises(KeyError):
        m.get("_task_type")
    assert "_task_type" not in m
    with pytest.raises(TypeError):
        Profile(meta={"no_such_key": 1})
    m.update({"world_size": 8})
    assert m.world_size == 8 and m.pop("world_size") == 8 and m.world_size is None


def test_meta_round_trips_through_the_cache_entry(tmp_path):
    p = Profile(meta={"producer": "kineto", "device": "gpu", "rank": np.int64(2),
                      "versions": {"schema": 1}, "trace_deferred": True,
                      "args_table": pa.table({"args": ["{}"]}),
                      "step_categories": ["kernel", "other"]})
    p.set("steps", pd.DataFrame({"step": [1], "total_ns": [4], "bd_kernel": [3],
                                 "bd_other": [1]}), keep_extra=True)
    write_profile(str(tmp_path), p)
    doc = json.loads((tmp_path / "meta.json").read_text())
    # Only what differs from the defaults, no in-memory args, numpy numbers as JSON numbers.
    assert doc["meta"] == {"producer": "kineto", "device": "gpu", "rank": 2,
                           "versions": {"schema": 1}, "trace_deferred": True,
                           "step_categories": ["kernel", "other"]}
    back = open_profile(str(tmp_path))
    assert back.meta == ProfileMeta(producer="kineto", device="gpu", rank=2,
                                    versions={"schema": 1}, trace_deferred=True,
                                    step_categories=["kernel", "other"])
    assert back.table("steps")["bd_kernel"].tolist() == [3]


def test_meta_from_a_newer_writer_ignores_unknown_keys():
    m = ProfileMeta.from_json({"producer": "torch_npu", "added_later": 1, "args_table": 5})
    assert m == ProfileMeta(producer="torch_npu")


# ----------------------------------------------------------------------------- step windows

def _slices(rows):
    return pd.DataFrame(rows, columns=["track_id", "start_ns", "dur_ns", "name"]).astype(
        {"name": "category"})


def test_profiler_step_windows_take_the_widest_window_per_step():
    s = _slices([(1, 100, 50, "ProfilerStep#2"), (2, 90, 20, "ProfilerStep#2"),
                 (1, 10, 30, "ProfilerStep#1"), (1, 12, 3, "aten::mm"),
                 (1, 5, 1, "ProfilerStep#x"), (1, 7, 1, "MyProfilerStep#9")])
    w = step_windows.profiler_step_windows(s)
    assert w.to_dict("list") == {"step": [1, 2], "start_ns": [10, 90], "end_ns": [40, 150]}
    assert w.dtypes.tolist() == [np.int64] * 3


def test_step_windows_prefer_the_producers_own():
    p = Profile()
    p.set("slices", _slices([(1, 0, 10, "ProfilerStep#1")]))
    assert step_windows.step_windows(p).to_dict("list") == {"step": [1], "start_ns": [0],
                                                     "end_ns": [10]}
    p.set("step_windows", pd.DataFrame({"step": [5, 4], "start_ns": [20, 0],
                                        "end_ns": [30, 20]}))
    assert step_windows.step_windows(p).to_dict("list") == {"step": [4, 5], "start_ns": [0, 20],
                                                     "end_ns": [20, 30]}
    assert len(step_windows.step_windows(Profile())) == 0


# ----------------------------------------------------------------------------- categories

GROUPS = [step_categories.NPU_STEP_CATEGORIES, step_categories.MSPROF_STEP_CATEGORIES,
          step_categories.MINDSPORE_LEGACY_STEP_CATEGORIES, step_categories.GPU_STEP_CATEGORIES]


def test_step_categories_have_one_label_per_name():
    labels = {}
    for group in GROUPS:
        names = [c.name for c in group]
        assert len(set(names)) == len(names)
        for c in group:
            assert c.column == "bd_" + c.name and c.label
            assert labels.setdefault(c.name, c.label) == c.label
    assert step_categories.step_category_label("communication_not_overlapped") == \
        "Communication (not overlapped)"
    assert step_categories.step_category_label("cpu_exec") == "CPU Exec"
    assert step_categories.step_category_label("made_up_part") == "Made up part"
