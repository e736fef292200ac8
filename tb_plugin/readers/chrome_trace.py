"""Any Chrome trace that is not kineto-shaped (discovery's sniffing, docs/formats.md §1.7)
-> `Profile` with the timeline and, when the trace has them, steps.

`span.root` is the trace file (`.json` or `.json.gz`, object with `traceEvents` or a bare
list of events): e.g. torch_npu's `prof.export_chrome_trace(...)`, an msprof timeline JSON
outside its `PROF_*` folder, a trace written by another tool. Decoded by
`trace_json.read_traces` like every trace; this module only maps it:

tracks    one per (pid, tid). kind: by process name as for torch_npu's trace_view.json
          (`Python` host, `CANN` cann, `Ascend Hardware` device, `HCCL`/`Communication`
          communication, `Overlap Analysis` overlap: torch_npu.py's table), `GPU n` labels
          device; otherwise "counter" for tracks with only counter samples, "other" for
          non-numeric pids, else "host". device_id: the digits of the `NPU n` / `GPU n`
          process label of device, communication, overlap and NPU counter tracks.
slices / flows / counters
          as decoded.
operators `cpu_op` / `operator` slices (not `ProfilerStep#*`), host self / total time from
          the op tree on each thread, exactly as the kineto reader computes them (the same
          function); device times 0 (no correlation ids). input_shapes / call_stack from
          `Input Dims` / `Call stack` args (`;\\r\\n` separators as in torch_npu).
steps     from the host `ProfilerStep#N` slices (`step_windows.profiler_step_windows`): window
          and total_ns = end - start; no breakdown (the trace states none).
meta      producer "chrome_trace"; device "npu" / "gpu" when a device track names one,
          else "cpu".
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..model import Profile, ProfileMeta
from ..span_source import SpanSource
from ..step_windows import profiler_step_windows
from .context import ReadContext, read_trace, run_steps
from .kineto import _operators
from .column_conversions import shapes_text
from .torch_npu import PROCESS_KIND

_ARGS = {"a_dims": "Input Dims", "a_stack": "Call stack"}

_GPU_LABEL = re.compile(r"^\s*GPU\s*\d+", re.I)
_NPU_LABEL = re.compile(r"^\s*NPU\s*\d+", re.I)


class _Ctx(ReadContext):
    def __init__(self, span: SpanSource, work_dir: str | None):
        super().__init__(span, work_dir, Profile(meta=ProfileMeta(producer="chrome_trace")))
        self.slices: pd.DataFrame | None = None
        self.trace_slices: pd.DataFrame | None = None  # as decoded, with the args columns


def read(span: SpanSource, work_dir: str | None = None) -> Profile:
    return run_steps(_Ctx(span, work_dir), [_read_trace, _read_operators, _read_steps])


def _read_trace(ctx: _Ctx) -> None:
    ctx.profile.meta.device = "cpu"
    tt = read_trace(ctx, [ctx.span.root], extract_args=_ARGS,
                    extract_for=lambda ph, cat: ph == "X" and cat.lower() in ("cpu_op", "operator"))
    if tt is None:
        return
    tracks = tt.tracks.copy()
    slice_tracks = set(tt.slices["track_id"].unique()) if len(tt.slices) else set()
    counter_tracks = set(tt.counters["track_id"].unique()) if len(tt.counters) else set()
    kinds, dev_ids = [], []
    devices = set()
    for tid_, pid, proc, lab in zip(tracks["track_id"], tracks["pid"],
                                    tracks["process"].astype(str),
                                    tracks["process_labels"].astype(str)):
        kind = PROCESS_KIND.get(proc.strip())
        if kind is None and _GPU_LABEL.search(lab):
            kind = "device"
        if kind is None:
            if tid_ in counter_tracks and tid_ not in slice_tracks:
                kind = "counter"
            elif not str(pid).lstrip("-").isdigit():
                kind = "other"
            else:
                kind = "host"
        dev = None
        if kind in ("device", "communication", "overlap") or \
                (kind == "counter" and _NPU_LABEL.search(lab)):
            m = re.search(r"(\d+)", lab)
            dev = int(m.group(1)) if m else None
            if kind == "device":
                devices.add("gpu" if _GPU_LABEL.search(lab) else "npu")
        kinds.append(kind)
        dev_ids.append(dev)
    tracks["kind"] = kinds
    tracks["device_id"] = pd.array(dev_ids, dtype="Int64")
    if devices:
        ctx.profile.meta.device = "npu" if "npu" in devices else "gpu"
    slices = tt.slices[["track_id", "start_ns", "dur_ns", "depth", "name", "cat", "args_row"]]
    ctx.set_trace_tables(tracks, slices, tt.flows, tt.counters)
    ctx.slices = slices
    ctx.trace_slices = tt.slices


def _read_operators(ctx: _Ctx) -> None:
    sl = ctx.trace_slices
    if sl is None or len(sl) == 0:
        return
    for col in _ARGS:
        if col not in sl.columns:
            sl[col] = None
    # torch_npu writes `Input Dims` as text ("4,512;\r\n1024;\r\n"): the one form the
    # views use ("4,512;1024", as torch_npu.py makes it); kineto's lists stay lists.
    dims = sl["a_dims"].to_numpy(dtype=object)
    text = np.array([isinstance(v, str) for v in dims], dtype=bool)
    if text.any():
        dims = dims.copy()
        dims[text] = shapes_text(pd.Series(dims[text], dtype="string")).to_numpy(dtype=object)
    sl["a_dims"] = pd.Series([v if isinstance(v, (str, list)) else None for v in dims],
                             index=sl.index, dtype=object)
    n = len(sl)
    cat_l = sl["cat"].astype("string").fillna("").str.lower().to_numpy(dtype=object)
    names = sl["name"].astype("string").fillna("").to_numpy(dtype=object)
    # No device kernels and no runtime launches to link here: no correlation / External ids.
    no_ids = pd.Series(pd.array([None] * n, dtype="Int64"), index=sl.index)
    _operators(ctx.profile, sl, cat_l, names, np.zeros(n, bool), no_ids, no_ids)


def _read_steps(ctx: _Ctx) -> None:
    if ctx.slices is None or len(ctx.slices) == 0:
        return
    win = profiler_step_windows(ctx.slices)
    if len(win) == 0:
        return
    steps = win.copy()
    steps["total_ns"] = (steps["end_ns"] - steps["start_ns"]).astype(np.int64)
    ctx.profile.set("steps", steps[["step", "start_ns", "end_ns", "total_ns"]])
