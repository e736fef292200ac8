"""Tables as files: the Arrow IPC file of each table of a cache entry (`table_path`,
`write_table` / `write_columns`, `read_table`), written aside and renamed, and where a load
stage's tables go as they are made (`spilling`)."""
from __future__ import annotations

import contextlib
import os

from .lazy import pd


# Reader processes set this (see `spilling`): tables a reader sets are written to disk at
# once and dropped from memory, so a reader's peak memory is that of its largest step, not
# the sum of every table it produced.
_SPILL_DIR: str | None = None


@contextlib.contextmanager
def spilling(directory: str):
    """Profiles created inside this block write their tables to `directory` as they are set."""
    global _SPILL_DIR
    previous, _SPILL_DIR = _SPILL_DIR, directory
    try:
        yield
    finally:
        _SPILL_DIR = previous


def table_path(directory: str, name: str) -> str:
    return os.path.join(directory, f"{name}.arrow")


WRITE_ASIDE = ".tmp-"  # <table>.arrow.tmp-<pid>: a table being written (renamed when done)


def _aside(path: str) -> str:
    return f"{path}{WRITE_ASIDE}{os.getpid()}"


def write_table(path: str, df: pd.DataFrame) -> None:
    import pyarrow as pa

    # One thread: for a frame of more than 100 rows per column pyarrow starts a thread pool
    # per call (and joins it), ~0.6 ms a table; the columns convert in microseconds each.
    # 194-233 -> 185-220 ms of CPU per 3.7 MB profile (views stage, three alternated runs),
    # the same on a 1 GB profile's 400 MB of CSVs.
    write_arrow(path, pa.Table.from_pandas(df, preserve_index=False, nthreads=1))


def write_arrow(path: str, table) -> None:
    """Write a pyarrow Table (with its pandas metadata) as the Arrow IPC file `path`."""
    import pyarrow as pa

    # Write aside and rename: the table may itself be memory-mapped from `path` (a table
    # read back and replaced); truncating that file in place would pull the pages from
    # under it.
    tmp = _aside(path)
    with _ipc_sink(tmp) as sink:
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=1 << 20)
    os.replace(tmp, path)


# Arrow's IPC writer hands the file each buffer and its padding as a write of its own: ~50
# system calls for a table of a few dozen columns, ~560 per small profile's views stage.
# Buffered, the same bytes go out in a few (a span's seven main tables: 3.1 -> 2.1 ms of CPU).
_WRITE_BUFFER = 1 << 20


def _ipc_sink(path: str):
    import pyarrow as pa

    return pa.BufferedOutputStream(pa.OSFile(path, "wb"), buffer_size=_WRITE_BUFFER)


def write_columns(path: str, columns: dict) -> None:
    """Write numpy / pyarrow columns as one record batch, without a pandas copy. A table
    written this way is read back without a copy too (`read_table`: its numeric columns
    stay views of the memory map), which is how the trace index keeps TensorBoard small."""
    import pyarrow as pa

    arrays = [c if isinstance(c, (pa.Array, pa.ChunkedArray)) else pa.array(c)
              for c in columns.values()]
    arrays = [pa.concat_arrays(a.chunks) if isinstance(a, pa.ChunkedArray) else a
              for a in arrays]
    batch = pa.record_batch(arrays, names=list(columns))
    tmp = _aside(path)
    with _ipc_sink(tmp) as sink:
        with pa.ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)
    os.replace(tmp, path)


def read_table(path: str) -> pd.DataFrame:
    # The map must stay open: columns converted without a copy still point into it (it is
    # unmapped when the last buffer using it is freed).
    return arrow_to_frame(read_arrow(path))


def read_arrow(path: str):
    """The table file `path` as a pyarrow Table, memory-mapped (no column is copied)."""
    import pyarrow as pa

    return pa.ipc.open_file(pa.memory_map(path)).read_all()


def arrow_to_frame(table) -> pd.DataFrame:
    """The pandas frame of a table as written (`write_table` / `write_arrow`)."""
    # Tables were conformed when written and Arrow's pandas metadata restores their dtypes,
    # so no conform here. One block per column: single-chunk numeric columns stay views of
    # the map (no copy).
    return table.to_pandas(split_blocks=True)


def spill_directory() -> str | None:
    """The directory of the open `spilling` block (None outside one): where a new
    Profile's tables go."""
    return _SPILL_DIR
