"""One worker-span as discovery found it: where its files are (`SpanSource`). Discovery makes
them, the loader schedules them, the readers read them; it sits below all three.
"""
from __future__ import annotations

import dataclasses
import os


@dataclasses.dataclass(frozen=True)
class SpanSource:
    """Where one worker-span's data lives, as found by discovery (names and sizes only).

    producer: torch_npu | mindspore | msprof | kineto | mindspore_legacy | chrome_trace |
              cluster_analysis
    root:     absolute path of the span's directory (`*_ascend_pt`, `*_ascend_ms`,
              `PROF_*`, `cluster_analysis_output`) or, for kineto / chrome_trace, of the
              trace file itself.
    files:    absolute paths of every input file the reader may use (discovery lists them so
              the cache key covers them); readers may still look inside `root`.
    device_id: for msprof, the `device_N` the worker stands for; for mindspore_legacy
              (root = the `profiler*` dir), the `{id}` in the file names; for
              cluster_analysis (all ranks share root and files), the rank (None otherwise).
    """

    logdir: str
    run: str
    worker: str
    span: str
    producer: str
    root: str
    files: tuple[str, ...]
    rank: int | None = None
    device_id: int | None = None

    def rel(self, path: str) -> str:
        """Path relative to the logdir, as shown to users in errors."""
        try:
            return os.path.relpath(path, self.logdir)
        except ValueError:
            return path
