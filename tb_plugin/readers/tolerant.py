"""Reading the files every reader shares, with their quirks: a profiler CSV (`read_csv`:
BOM / CRLF, quoted CR LF, non-UTF-8 bytes, header junk and duplicate names) and a small JSON
document (`read_json_file`: bare N/A, deep nesting); a file that is empty, truncated, too
large or unreadable raises `InputError` with the reason.

The checks and cleanups of the cells (trailing tabs, `N/A`, numbers that are not finite) are
in `text_cells`; numbers given as text (exact µs -> ns) are parsed by `us_text`.

Everything here is vectorized (pyarrow / numpy); no per-row Python on large inputs.
"""
from __future__ import annotations

import io
import mmap
import os
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .json_numbers import decode_json
from .text_cells import NULL_TOKENS, _clean_text, _gaps_text, _skip_non_numbers


class InputError(Exception):
    """A file that cannot be used; the message says why in words a user understands."""


def _decode_bytes(raw: bytes, rel_path: str) -> tuple[str, list[str]]:
    """Bytes -> text, tolerating BOM and non-UTF-8 bytes (reported as a warning)."""
    warnings: list[str] = []
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        warnings.append(f"{rel_path}: not valid UTF-8 (first bad byte at offset {exc.start});"
                        " undecodable bytes were replaced")
    return text, warnings


def read_csv(path: str, rel_path: str, required: tuple[str, ...] = (),
             max_bytes: int = 8 << 30) -> tuple[pd.DataFrame, list[str]]:
    """`read_csv_table` as a pandas DataFrame of text columns."""
    table, warnings = read_csv_table(path, rel_path, required, max_bytes)
    # Every column is text here: each converted by pandas' StringDtype, as `to_pandas` with
    # a StringDtype mapper does, without its per-table machinery (~40% of its cost).
    df = pd.DataFrame({name: _string_array(col) for name, col in zip(table.column_names,
                                                                      table.columns)},
                      index=pd.RangeIndex(table.num_rows), copy=False)
    del table
    pa.default_memory_pool().release_unused()
    return df, warnings


def read_csv_table(path: str, rel_path: str, required: tuple[str, ...] = (),
                   max_bytes: int = 8 << 30) -> tuple[pa.Table, list[str]]:
    """Read a profiler CSV into a pyarrow Table of text columns.

    - header names are stripped (BOM, spaces, trailing tabs);
    - every cell is text with surrounding whitespace and trailing `\t` removed; `N/A`/empty
      become <NA>;
    - quoted fields with embedded CR LF (torch_npu call stacks) are handled by the parser;
    - raises InputError naming the reason if the file is empty, unreadable, too large, or
      lacks a required column; returns (frame, warnings) otherwise.

    Arrow reads the file directly (no copy of it in Python); only a file that is not valid
    UTF-8 is read into memory to be repaired, with a warning.
    """
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}") from None
    if size == 0 or not head.strip(b"\xef\xbb\xbf \t\r\n"):
        raise InputError("file is empty")
    if size > max_bytes:
        raise InputError(f"file is {size / 2**30:.1f} GiB, larger than the {max_bytes / 2**30:.0f}"
                         " GiB limit")
    warnings: list[str] = []
    types = _text_types(head[3:] if head.startswith(b"\xef\xbb\xbf") else head)
    try:
        table = _parse_csv(path, types, size)
    except pa.ArrowInvalid as exc:
        if "UTF8" not in str(exc) and "utf8" not in str(exc).lower():
            raise InputError(f"not a valid CSV file: {str(exc).splitlines()[0]}") from None
        with open(path, "rb") as fh:
            raw = fh.read()
        text, w = _decode_bytes(raw, rel_path)
        warnings.extend(w)
        del raw
        try:
            repaired = text.encode("utf-8")
            table = _parse_csv(io.BytesIO(repaired), types, len(repaired))
        except pa.ArrowInvalid as exc2:
            raise InputError(f"not a valid CSV file: {str(exc2).splitlines()[0]}") from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc}") from None
    cols = [_clean_header(c) for c in table.column_names]
    table = table.rename_columns(_dedupe(cols))
    missing = [c for c in required if c not in table.column_names]
    if missing:
        raise InputError(f"missing required column(s) {', '.join(missing)}"
                         f" (has: {', '.join(table.column_names[:12])}"
                         f"{'...' if table.num_columns > 12 else ''})")
    table = pa.table({name: _clean_text(col) for name, col in zip(table.column_names,
                                                                  table.columns)})
    table, gaps = _skip_non_numbers(table)
    if gaps:
        warnings.append(f"{rel_path}: {_gaps_text(gaps)}")
    return table, warnings


def _parse_csv(source, types: dict, size: int) -> pa.Table:
    """The CSV `source` (a path, or a file of `size` bytes) with every column as text."""
    if isinstance(source, str) and not source.isascii():
        try:
            source.encode("utf-8")
        except UnicodeEncodeError:  # a non-UTF-8 file name: Arrow opens UTF-8 names only
            with open(source, "rb") as fh:
                return _parse_csv(fh, types, size)
    block = _block_bytes(source)
    table = _arrow_read_csv(source, types, block, use_threads=size > block)
    return pa.table({name: _as_text(col) for name, col in zip(table.column_names,
                                                             table.columns)})


# Arrow's block size: 4 MiB blocks parse a large file fastest here (several blocks at once
# in Arrow's threads, each small enough for the caches). But where a block ends right after
# a CR byte, Arrow (26.0) drops the LF of a quoted CR LF (torch_npu's shapes and call stacks),
# so the cells would depend on where the blocks end: `_block_bytes` picks a size at which
# no block does.
_BLOCK_BYTES = 4 << 20
_BLOCK_TRIES = 4096


def _block_bytes(source) -> int:
    """Arrow's block size for this file: from `_BLOCK_BYTES` up, the first at which no block
    ends right after a CR byte (blocks are read at multiples of the size: a check of one
    byte per block, no scan of the file); one block for the whole file when none is found
    within `_BLOCK_TRIES` sizes."""
    try:
        if isinstance(source, str):
            size = os.path.getsize(source)
            if size <= _BLOCK_BYTES:
                return _BLOCK_BYTES
            with open(source, "rb") as fh, mmap.mmap(fh.fileno(), 0,
                                                     access=mmap.ACCESS_READ) as mm:
                # (no CR, the usual case outside torch_npu: found by memchr)
                return _BLOCK_BYTES if mm.find(b"\r") < 0 else _cr_safe_block(mm)
        view = source.getbuffer()  # an in-memory file (repaired text)
        try:
            return _BLOCK_BYTES if len(view) <= _BLOCK_BYTES else _cr_safe_block(view)
        finally:
            view.release()
    except (OSError, ValueError, AttributeError):
        return _BLOCK_BYTES


def _cr_safe_block(buf) -> int:
    """`_block_bytes` of a buffer larger than `_BLOCK_BYTES` (its numpy view is gone when
    this returns, so the caller may close or release the buffer)."""
    data = np.frombuffer(buf, np.uint8)
    size = len(data)
    for block in range(_BLOCK_BYTES, _BLOCK_BYTES + _BLOCK_TRIES):
        if not (data[block - 1:size - 1:block] == 13).any():  # the last byte of each block
            return block
    return size + 1


def _arrow_read_csv(source, types: dict, block_size: int, use_threads: bool) -> pa.Table:
    # Arrow's threads parse blocks side by side: a file of one block (every CSV of a small
    # profile) only pays for starting them (~15% of its parse CPU, on cores the other
    # readers are using).
    return pacsv.read_csv(
        source,
        read_options=pacsv.ReadOptions(block_size=block_size, use_threads=use_threads),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=types, strings_can_be_null=True, null_values=NULL_TOKENS,
            auto_dict_encode=False, quoted_strings_can_be_null=True))


def _string_array(col: pa.ChunkedArray):
    """The pandas string array `to_pandas` makes of a text column (its StringDtype's own
    conversion, the same with either pandas string storage)."""
    return pd.StringDtype().__from_arrow__(col)


def text_series(col: pa.ChunkedArray) -> pd.Series:
    """A text column of `read_csv_table` as the Series `read_csv` makes of it: where a step
    that stays in Arrow leaves a column's cells to pandas' own parsing."""
    return pd.Series(_string_array(col))


def _text_types(data: bytes) -> dict:
    """Read every column as text: inferring float64 first would lose the ns digits of
    16+3-digit µs timestamps (casting the double back to text cannot restore them)."""
    import csv

    end = data.find(b"\n")
    line = data[: end if end >= 0 else len(data)].decode("utf-8", "replace").rstrip("\r")
    try:
        names = next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return {}
    return {n: pa.string() for n in names}


def _as_text(col: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        return col
    if pa.types.is_null(col.type):
        return pa.chunked_array([pa.nulls(len(col), pa.string())])
    return pc.cast(col, pa.string())


_HEADER_JUNK = re.compile(r"^[\ufeff\s]+|[\s\t]+$")


def _clean_header(name: str) -> str:
    return _HEADER_JUNK.sub("", name)


def _dedupe(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            out.append(f"{n}.{seen[n]}")
        else:
            seen[n] = 0
            out.append(n)
    return out


def read_json_file(path: str, max_bytes: int = 256 << 20):
    """Small JSON documents (profiler_info, communication.json): parsed with msgspec.

    Raises InputError with the reason (empty, truncated, invalid at byte N, too large).
    """
    import msgspec

    try:
        size = os.path.getsize(path)
        if size == 0:
            raise InputError("file is empty")
        if size > max_bytes:
            raise InputError(f"file is {size / 2**20:.0f} MiB, larger than the"
                             f" {max_bytes / 2**20:.0f} MiB limit for this kind of file")
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if not raw.strip():
        raise InputError("file is empty")
    try:
        return decode_json(msgspec.json.decode, raw)
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply") from None
    except msgspec.DecodeError as exc:
        raise InputError(f"invalid JSON: {exc}") from None
