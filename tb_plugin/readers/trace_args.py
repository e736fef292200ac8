"""The args side file of a trace: each event's `args` JSON text, by row (`args_row`).

What it holds: `_ArgsSink`, which collects the raw args of each chunk (one Arrow string
column over one buffer, no Python string per event) into an Arrow IPC file (`args_path`) or
in memory, and appends the files of other processes' sinks (`trace_ranges`); and
`read_args`, which fetches the args objects of given rows afterwards (details on demand).

Why it is separate: args are ~40% of a trace and never stay in memory with the tables; this
is the only part that writes a file of its own, and the only part read again long after
decoding (by `analysis/trace.py`, for one event's details).
"""
from __future__ import annotations

import msgspec
import numpy as np
import pyarrow as pa

from .trace_values import _ANY, _raw_array


class _ArgsSink:
    """Collects args JSON text in event order, to a file or in memory."""

    def __init__(self, path: str | None):
        self.path = path
        self.rows = 0
        self._writer = None
        self._batches: list[pa.RecordBatch] = []
        self._schema = pa.schema([("args", pa.string())])

    def add(self, texts: list) -> int:
        first = self.rows
        self._write(pa.record_batch([pa.array(texts, pa.string())], schema=self._schema))
        self.rows += len(texts)
        return first

    def add_raw(self, raws: list, lens: np.ndarray | None = None) -> int:
        """`add` of raw JSON args values (msgspec.Raw, valid UTF-8; `lens`: their lengths,
        when known): one buffer, no Python string per event; an event without args is a
        null."""
        return self.add_array(_raw_array(raws, pa.string(), lens))

    def add_array(self, texts: pa.Array) -> int:
        """`add` of args texts that are already one Arrow string array (nulls: no args)."""
        first = self.rows
        self._write(pa.record_batch([texts], schema=self._schema))
        self.rows += len(texts)
        return first

    def add_file(self, path: str) -> int:
        """Append the rows of another sink's args file; the row number of the first."""
        first = self.rows
        with pa.memory_map(path) as src:
            reader = pa.ipc.open_file(src)
            for i in range(reader.num_record_batches):
                batch = reader.get_batch(i)
                self._write(pa.record_batch([batch.column(0)], schema=self._schema))
                self.rows += batch.num_rows
        return first

    def _write(self, batch: pa.RecordBatch) -> None:
        if self.path:
            if self._writer is None:
                self._writer = pa.ipc.new_file(self.path, self._schema)
            self._writer.write_batch(batch)
        else:
            self._batches.append(batch)

    def close(self) -> pa.Table | None:
        if self.path:
            if self._writer is None:
                self._writer = pa.ipc.new_file(self.path, self._schema)
            self._writer.close()
            return None
        return pa.Table.from_batches(self._batches, schema=self._schema)


def read_args(args_path: str | None, args: pa.Table | None, rows: list[int]) -> list[dict]:
    """The args objects of the given rows (for details on demand)."""
    out = []
    if args is None and args_path:
        with pa.memory_map(args_path) as src:
            table = pa.ipc.open_file(src).read_all()
            texts = table.column("args").take(pa.array(rows, pa.int64())).to_pylist()
    elif args is not None:
        texts = args.column("args").take(pa.array(rows, pa.int64())).to_pylist()
    else:
        texts = [None] * len(rows)
    for t in texts:
        try:
            out.append(_ANY.decode(t) if t else {})
        except msgspec.DecodeError:
            out.append({})
    return out
