"""Any Chrome trace that is not kineto-shaped (discovery's sniffing, docs/formats.md §1.7)
-> `Profile` with the timeline and, when the trace has them, steps.

`span.root` is the trace file (`.json` or `.json.gz`, object with `traceEvents` or a bare
list of events): e.g. torch_npu's `prof.export_chrome_trace(...)`, an msprof timeline JSON
outside its `PROF_*` folder, a trace written by another tool. Decoded by
`trace_json.read_traces` like every trace; this module only maps it:

tracks    one per (pid, tid). kind: "device" for processes whose label names a device
          (`Ascend Hardware`, `NPU`, `GPU n`, `Stream`), "communication" for `HCCL` /
          `Communication`, "counter" for tracks with only counter samples, "other" for
          non-numeric pids, else "host". device_id: the digits of a device label.
slices / flows / counters
          as decoded.
steps     from the host `ProfilerStep#N` slices (`model.profiler_step_windows`): window
          and total_ns = end - start; no breakdown (the trace states none).
meta      producer "chrome_trace"; device "npu" / "gpu" when a device track names one,
          else "cpu".
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..model import Profile, ProfileMeta, profiler_step_windows
from . import SpanSource
from .context import ReadContext, read_trace, run_steps

_DEVICE_LABEL = re.compile(r"ascend hardware|\bnpu\b|^\s*gpu\s*\d+|stream", re.I)
_COMM_LABEL = re.compile(r"hccl|communication|nccl", re.I)


class _Ctx(ReadContext):
    def __init__(self, span: SpanSource, work_dir: str | None):
        super().__init__(span, work_dir, Profile(meta=ProfileMeta(producer="chrome_trace")))
        self.slices: pd.DataFrame | None = None


def read(span: SpanSource, work_dir: str | None = None) -> Profile:
    return run_steps(_Ctx(span, work_dir), [_read_trace, _read_steps])


def _read_trace(ctx: _Ctx) -> None:
    ctx.profile.meta.device = "cpu"
    tt = read_trace(ctx, [ctx.span.root])
    if tt is None:
        return
    tracks = tt.tracks.copy()
    slice_tracks = set(tt.slices["track_id"].unique()) if len(tt.slices) else set()
    counter_tracks = set(tt.counters["track_id"].unique()) if len(tt.counters) else set()
    kinds, dev_ids = [], []
    devices = set()
    for tid_, pid, lab in zip(tracks["track_id"], tracks["pid"],
                              tracks["process_labels"].astype(str)):
        if _DEVICE_LABEL.search(lab):
            kinds.append("device")
            m = re.search(r"(\d+)", lab)
            dev_ids.append(int(m.group(1)) if m else None)
            devices.add("gpu" if re.search(r"gpu", lab, re.I) else "npu")
        elif _COMM_LABEL.search(lab):
            kinds.append("communication")
            dev_ids.append(None)
        elif tid_ in counter_tracks and tid_ not in slice_tracks:
            kinds.append("counter")
            dev_ids.append(None)
        elif not str(pid).lstrip("-").isdigit():
            kinds.append("other")
            dev_ids.append(None)
        else:
            kinds.append("host")
            dev_ids.append(None)
    tracks["kind"] = kinds
    tracks["device_id"] = pd.array(dev_ids, dtype="Int64")
    if devices:
        ctx.profile.meta.device = "npu" if "npu" in devices else "gpu"
    slices = tt.slices[["track_id", "start_ns", "dur_ns", "depth", "name", "cat", "args_row"]]
    ctx.set_trace_tables(tracks, slices, tt.flows, tt.counters)
    ctx.slices = slices


def _read_steps(ctx: _Ctx) -> None:
    if ctx.slices is None or len(ctx.slices) == 0:
        return
    win = profiler_step_windows(ctx.slices)
    if len(win) == 0:
        return
    steps = win.copy()
    steps["total_ns"] = (steps["end_ns"] - steps["start_ns"]).astype(np.int64)
    ctx.profile.set("steps", steps[["step", "start_ns", "end_ns", "total_ns"]])
