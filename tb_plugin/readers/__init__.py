"""Readers: one module per producer, turning a span's files into a normalized `Profile`.

Contract: `read(span: SpanSource, work_dir: str | None) -> Profile`.
- Shape: a reader is a list of small named steps over one `context.ReadContext`, run by
  `context.run_steps`; each step is guarded (an exception becomes a `FileError` naming the
  file and the reason, the later steps still run). Data a step hands on is a field declared
  on the reader's context class; the profile's `meta` (`model.ProfileMeta`) holds only what
  is stored with the profile.
- `work_dir` is a private, writable directory for this span (the cache entry being built);
  the shared trace step (`context.read_trace`) writes the args side file there as
  `ARGS_FILE` and sets `profile.meta.args_file`. With `work_dir=None` (tests) args stay in
  memory in `profile.meta.args_table`.
- Never raises for bad input: a file that cannot be read adds a `FileError` (path relative
  to the logdir, a reason a user understands) to `profile.errors`, and the rest still loads.
- Never analyses: readers fill the model tables with what the files say. Derived numbers
  (step breakdowns computed from events, operator device time from kernels) belong to
  `tb_plugin.analysis.derive`, which runs after the reader.
- Shared parsing lives in `trace_json` (Chrome-trace JSON -> tracks/slices/flows/counters),
  `tolerant` (CSV / JSON files and their quirks), `text_cells` (checks and cleanups of text
  cells), `us_text` (numbers given as text: exact timestamp parsing) and `columns` (CSV
  header variants).

A new reader is one module here plus one line in `READERS`.
"""
from __future__ import annotations

from ..span_source import SpanSource


ARGS_FILE = "slice_args.arrow"


# producer -> (module, function); modules are imported on first use (`import_readers`
# imports them all ahead, where a process is set up to read).
READERS = {
    "torch_npu": ("torch_npu", "read"),
    "mindspore": ("torch_npu", "read_mindspore"),
    "msprof": ("msprof", "read"),
    "kineto": ("kineto", "read"),
    "mindspore_legacy": ("mindspore_legacy", "read"),
    "chrome_trace": ("chrome_trace", "read"),
    "cluster_analysis": ("cluster_analysis", "read"),
}


# Producers whose views can be read without the trace (their CSVs carry everything).
STAGED = {"torch_npu", "mindspore"}


def _reader_module(module: str):
    """The reader module `module` of `READERS` (imported on first use)."""
    import importlib

    return importlib.import_module(f"{__name__}.{module}")


def import_readers() -> None:
    """Import every reader module of `READERS`: the fork server the reader processes are
    forked from does (loading/build.py `import_and_freeze`), so that each reader does not
    import its reader (~15 ms for torch_npu and what it uses) on its first span again."""
    for module in sorted({module for module, _ in READERS.values()}):
        _reader_module(module)


def read(span: SpanSource, work_dir: str | None = None, stage: str = "all"):
    """Dispatch to the producer's reader.

    stage: "all" reads everything; "views" may leave the trace for later (the reader sets
    meta.trace_deferred) so the views are ready sooner; "trace" reads only the trace.
    """
    module, func = READERS[span.producer]
    fn = getattr(_reader_module(module), func)
    if span.producer in STAGED:
        return fn(span, work_dir, stage=stage)
    if stage == "trace":
        return None  # read whole in the first stage
    return fn(span, work_dir)


def deferred_trace(span: SpanSource) -> str | None:
    """The trace file this span's views stage leaves to the timeline stage (`read` with
    stage="views" sets meta.trace_deferred for it), or None: the same decision, made
    without reading anything but the span's file list."""
    if span.producer not in STAGED:
        return None
    module, _ = READERS[span.producer]
    return _reader_module(module).deferred_trace(span)
