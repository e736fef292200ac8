"""A CSV column converted by the kind its table declares (`columns.py`): µs text to exact
int64 ns (`us`, `us_or_missing`), numbers (`int`, `float`), MB to MiB by the producer's
`Dialect` (`mb`), tensor shapes and call stacks to one text form (`shapes`, `stack`), and
text. `convert` applies a table's kinds to a file read as a pandas frame or as Arrow text
(`ReadContext.csv_table`).

Shared by the readers of ASCEND_PROFILER_OUTPUT CSVs (torch_npu, MindSpore 2.x), the cluster
analysis files (cluster_analysis.py) and the traces whose shapes / stacks take the same
form (kineto.py, chrome_trace.py).

Normalizations:
- shapes (`Input Shapes`): the producer's text with the `;\\r\\n` separators turned into `;`
  and one trailing `;` removed: `"8,3,224,224;64,3,7,7"` (kernel_details' form: `;` between
  tensors, `,` between dims).
- stack (`Call Stack`): frames separated by `"\\n"` (the producer's `;\\r\\n`), no trailing
  separator.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import columns as C
from .text_cells import cells_contain, cells_end_with, may_need_trim
from .tolerant import text_series
from .us_text import to_float, to_int64, us_columns_to_ns, us_text_to_ns


@dataclasses.dataclass(frozen=True)
class Dialect:
    producer: str
    # Factor turning the file's "(MB)" numbers into MiB: torch_npu divides bytes by 1024**2
    # (factor 1); MindSpore divides KB by 1000, so MiB = value * 1000 / 1024.
    memory_mb_to_mib: float


DIALECTS = {
    "torch_npu": Dialect("torch_npu", 1.0),
    "mindspore": Dialect("mindspore", 1000.0 / 1024.0),
}


def convert(df, table: C.Table, dialect: Dialect) -> dict:
    """The table's columns `df` (a frame, or a pyarrow Table of text from
    `ReadContext.csv_table`) has, converted; absent columns are omitted. The µs text
    columns are parsed together (`us_columns_to_ns`: one parse per file, not per column)."""
    headers = C.resolve(df, table)
    texts = [name for name, header in headers.items() if table[name].kind in _US_KINDS
             and _is_text(df[header])]
    parsed = dict(zip(texts, us_columns_to_ns([df[headers[name]] for name in texts])))
    out = {}
    for name, header in headers.items():
        kind = table[name].kind
        if name in parsed and kind == "us_or_missing":
            out[name] = np.where(_missing(df[header]), -1, parsed[name]).astype(np.int64)
        elif name in parsed:
            out[name] = parsed[name]
        else:
            out[name] = _conv(df[header], kind, dialect)
    return out


_US_KINDS = ("us", "us_or_missing")


def _is_text(s) -> bool:
    if isinstance(s, pa.ChunkedArray):
        return pa.types.is_string(s.type) or pa.types.is_large_string(s.type)
    return s.dtype == "string"


def _missing(s) -> np.ndarray:
    if isinstance(s, pa.ChunkedArray):
        return s.is_null().to_numpy(zero_copy_only=False)
    return s.isna().to_numpy()


def column_series(s) -> pd.Series:
    """A column as a pandas Series (an Arrow text column as `read_csv` makes it)."""
    return text_series(s) if isinstance(s, pa.ChunkedArray) else s


def _conv(s, conv: str, dialect: Dialect):
    if conv == "us":
        return column_us_ns(s)
    if conv == "us_or_missing":
        ns = column_us_ns(s)
        return np.where(_missing(s), -1, ns).astype(np.int64)
    if conv == "int":
        return to_int64(column_floats(s))
    if conv == "float":
        return column_floats(s)
    if conv == "mb":
        return column_floats(s) * dialect.memory_mb_to_mib
    if conv == "shapes":
        return shapes_text(s)
    if conv == "stack":
        return stack_text(s)
    if isinstance(s, pa.ChunkedArray):
        return pc.fill_null(s, "")
    return s.astype("string").fillna("")


def column_floats(s) -> np.ndarray:
    """Column -> float64 (NaN for missing); text as `to_float` parses it
    (`columns.parse_numbers`: one Arrow cast when every cell is a plain number)."""
    if not isinstance(s, pa.ChunkedArray) and s.dtype.kind in "fiu":
        return s.to_numpy(dtype=np.float64, na_value=np.nan)
    return C.parse_numbers(s if isinstance(s, pa.ChunkedArray) else s.astype("string"),
                           to_float)


def column_us_ns(s) -> np.ndarray:
    if isinstance(s, pa.ChunkedArray):
        return us_text_to_ns(s)
    if s.dtype.kind in "fiu":
        return us_text_to_ns(pa.array(s.to_numpy()))
    return us_text_to_ns(pa.array(s.astype("string"), from_pandas=True))


def _arrow_text(s) -> pa.Array:
    arr = (s if isinstance(s, pa.ChunkedArray) else
           pa.array(s.astype("string"), from_pandas=True)).fill_null("")
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _like_input(s, a: pa.Array):
    """The rewritten text `a` as the input came: an Arrow column of `csv_table` as Arrow
    (its table is stored from Arrow: no pandas round trip of a column of call stacks), a
    Series as a string Series."""
    if isinstance(s, pa.ChunkedArray):
        return a
    return pd.Series(a.to_pandas(types_mapper=pd.ArrowDtype)).astype("string")


def shapes_text(s):
    """`"8,3,224,224;\r\n64,3,7,7;\r\n"` -> `"8,3,224,224;64,3,7,7"` (one form everywhere).
    Each rewrite runs only when some cell has what it rewrites (most files have no CR LF).
    An Arrow column gives an Arrow array, a Series a Series (`_like_input`)."""
    a = _arrow_text(s)
    if cells_contain(a, b"\r\n"):  # (every CR and LF removed: two literal passes, not a
        a = pc.replace_substring(pc.replace_substring(a, "\r", ""), "\n", "")  # regex)
    if may_need_trim(a):
        a = pc.utf8_trim_whitespace(a)
    if cells_end_with(a, b";"):  # one trailing ";" off
        a = pc.if_else(pc.ends_with(a, ";"), pc.utf8_slice_codeunits(a, 0, -1), a)
    return _like_input(s, a)


def stack_text(s):
    """Call stack frames separated by `"\n"` instead of `;\r\n`; no trailing separator
    (an Arrow column gives an Arrow array, a Series a Series)."""
    a = _arrow_text(s)
    if cells_contain(a, b"\n"):
        a = _frames_on_lines(a)
    if cells_end_with(a, b";\n"):  # (`[;\n]+$` removed)
        a = pc.utf8_rtrim(a, characters=";\n")
    return _like_input(s, a)


def _frames_on_lines(a: pa.Array) -> pa.Array:
    """Every `;?\r?\n` of the cells as `\n`. torch_npu ends each frame with `;\r\n`: when
    every LF and every CR of the column is part of one (or every LF of a `;\n`, and no CR),
    the regex replaces exactly those, and one literal pass does the same at a third of
    the cost (two columns of every operator file); any other mix takes the regex."""
    lf, cr = _count(a, "\n"), _count(a, "\r")
    sep = ";\r\n" if cr else ";\n"
    if _count(a, sep) == lf and cr in (0, lf):
        return pc.replace_substring(a, sep, "\n")
    return pc.replace_substring_regex(a, pattern=r";?\r?\n", replacement="\n")


def _count(a: pa.Array, pattern: str) -> int:
    return int(pc.sum(pc.count_substring(a, pattern)).as_py() or 0)
