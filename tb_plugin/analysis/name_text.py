"""Name columns tested once per distinct name, at Arrow speed, with Python `re`'s answers.

A trace's name column is a categorical of up to hundreds of thousands of distinct names
whose categories pandas holds as an Arrow-backed array: reading them one element at a time
costs microseconds per name, so every pass over them (a regex per advisor rule, the index's
string table, the dispatch path's prefixes) is made on their Arrow text instead:
- `text(categories)`: the categories as an Arrow string array, converted once per
  categories object (kept while that object lives: a table's row subsets share it);
- `codes_text(series)`: (codes, text) of a name column, a missing name reading as "" (the
  last entry of the text);
- `dictionary_parts(col)`: (indices, text) of an Arrow column read without pandas;
- `regex_mask(series, pattern, flags)`: the rows whose name `re.search(pattern, name, flags)`
  finds. Arrow's RE2 tests the names on which RE2 and Python's `re` agree for the pattern
  (printable-ASCII names, a pattern RE2 accepts, without constructs the two read
  differently), Python's `re` the others: the same answer as a Python loop, either way.
"""
from __future__ import annotations

import re
import weakref

import numpy as np
from ..lazy import pd

# id(categories) -> [weak reference to them, their text, which names are printable ASCII,
# and once asked for, the text with "" appended (codes_text)]
_TEXT: dict[int, list] = {}
_PRINTABLE_ASCII = r"^[ -~]*$"
# Flags RE2 is given (re.I as ignore_case); re.A / re.U change nothing on ASCII text.
_RE2_FLAGS = re.IGNORECASE | re.ASCII | re.UNICODE
# Python syntax RE2 reads differently (`{,n}` is a quantifier in Python, literal text in
# RE2; `[:` opens a POSIX class in RE2 only) or that Python alone interprets (`\Z`).
_RE2_DIFFERENT = re.compile(r"\{,|\[:|\\Z")


def _convert(categories: pd.Index):
    import pyarrow as pa
    import pyarrow.compute as pc

    if pd.api.types.is_string_dtype(categories.dtype) and \
            not pd.api.types.is_object_dtype(categories.dtype):
        arr = pa.array(categories.array)          # Arrow-backed: no per-name Python
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        arr = arr.cast(pa.large_string())
    else:
        arr = pa.array([str(c) for c in categories], type=pa.large_string())
    plain = pc.match_substring_regex(arr, _PRINTABLE_ASCII).to_numpy(zero_copy_only=False)
    return arr, np.asarray(plain, dtype=bool)


def _entry(categories: pd.Index):
    hit = _TEXT.get(id(categories))
    if hit is not None and hit[0]() is categories:
        return hit
    arr, plain = _convert(categories)
    key = id(categories)
    try:
        ref = weakref.ref(categories, lambda _r, k=key: _TEXT.pop(k, None))
    except TypeError:  # not weak-referenceable: not kept
        return [lambda: categories, arr, plain]
    entry = [ref, arr, plain]
    _TEXT[key] = entry
    return entry


def text(categories: pd.Index):
    """The categories as an Arrow large_string array (str() of each), converted once."""
    return _entry(categories)[1]


def codes_text(series: pd.Series) -> tuple[np.ndarray, object]:
    """(int64 codes, Arrow text) of a name column: a categorical's own categories (shared
    by its row subsets) plus "" for a missing name; any other column factorized."""
    import pyarrow as pa

    if isinstance(series.dtype, pd.CategoricalDtype):
        entry = _entry(series.cat.categories)
        if len(entry) == 3:  # the text with "" appended, made once too
            entry.append(pa.concat_arrays([entry[1], pa.array([""], type=pa.large_string())]))
        labels = entry[3]
        codes = series.cat.codes.to_numpy().astype(np.int64)
        if (codes < 0).any():
            codes = np.where(codes < 0, len(labels) - 1, codes)
        return codes, labels
    codes, uniques = pd.factorize(series.astype("string").fillna(""))
    return codes.astype(np.int64), pa.array([str(x) for x in uniques], type=pa.large_string())


def _re2_usable(pattern: str, flags: int) -> bool:
    return pattern.isascii() and not (flags & ~_RE2_FLAGS) and \
        not _RE2_DIFFERENT.search(pattern)


def text_mask(labels, plain: np.ndarray | None, pattern: str, flags: int = 0) -> np.ndarray:
    """`bool(re.search(pattern, s, flags))` for each string of the Arrow array `labels`
    (`plain`: which of them are printable ASCII, computed when None)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rx = re.compile(pattern, flags)  # Python's errors for a bad pattern, as before
    n = len(labels)
    if n == 0:
        return np.zeros(0, dtype=bool)
    if plain is None:
        plain = np.asarray(pc.match_substring_regex(labels, _PRINTABLE_ASCII)
                           .to_numpy(zero_copy_only=False), dtype=bool)
    out = np.zeros(n, dtype=bool)
    rest = np.ones(n, dtype=bool)
    if _re2_usable(pattern, flags) and plain.any():
        try:
            hit = pc.match_substring_regex(labels, pattern,
                                           ignore_case=bool(flags & re.IGNORECASE))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # RE2 rejects it
            hit = None
        if hit is not None:
            out = np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool) & plain
            rest = ~plain
    idx = np.flatnonzero(rest)
    if len(idx):
        others = labels.take(pa.array(idx)).to_pylist()
        out[idx] = [rx.search(s) is not None for s in others]
    return out


def category_mask(categories: pd.Index, pattern: str, flags: int = 0) -> np.ndarray:
    """`text_mask` of a categorical's categories (their text converted once)."""
    entry = _entry(categories)
    arr, plain = entry[1], entry[2]
    return text_mask(arr, plain, pattern, flags)


def regex_mask(series: pd.Series, pattern: str, flags: int = 0) -> np.ndarray:
    """Row mask of a name column: `re.search(pattern, str(name), flags)` per row, tested once
    per distinct name. A categorical's missing names never match; in any other column a
    missing name is tested as ""."""
    if len(series) == 0:
        return np.zeros(0, dtype=bool)
    if isinstance(series.dtype, pd.CategoricalDtype):
        hit = category_mask(series.cat.categories, pattern, flags)
        codes = series.cat.codes.to_numpy()
        if len(hit) == 0:
            return np.zeros(len(series), dtype=bool)
        return np.where(codes >= 0, hit[np.maximum(codes, 0)], False)
    codes, labels = codes_text(series)
    return text_mask(labels, None, pattern, flags)[codes]


def dictionary_parts(col, first_seen: bool = False):
    """(indices, nulls kept, and the dictionary as large_string) of an Arrow column: a
    dictionary column's own (the chunks of a table written from one pandas categorical
    share it), else — or with `first_seen`, codes in order of first appearance, as
    pd.factorize gives them — the column's text dictionary-encoded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(col) == 0:
        return pa.chunked_array([], pa.int32()), pa.array([], pa.large_string())
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    shared = pa.types.is_dictionary(chunks[0].type) and \
        all(c.dictionary.equals(chunks[0].dictionary) for c in chunks[1:])
    if shared and first_seen:
        # The codes renumbered in order of first appearance (a hash of the small integer
        # codes, not of the text: a flow's category over millions of flows).
        codes = np.concatenate([np.asarray(pc.fill_null(c.indices, -1).to_numpy(), np.int64)
                                for c in chunks])
        seen = pd.unique(codes[codes >= 0])
        renumber = np.full(len(chunks[0].dictionary), -1, np.int64)
        renumber[seen] = np.arange(len(seen))
        new = np.where(codes >= 0, renumber[np.maximum(codes, 0)], -1)
        values = chunks[0].dictionary.take(pa.array(seen, pa.int64()))
        return (pa.chunked_array([pa.array(new.astype(np.int32), mask=codes < 0)]),
                values if pa.types.is_large_string(values.type) else
                values.cast(pa.large_string()))
    if first_seen or not shared:
        enc = pc.dictionary_encode(pa.chunked_array(chunks).cast(pa.large_string())
                                   .combine_chunks())
        return pa.chunked_array([enc.indices]), enc.dictionary
    values = chunks[0].dictionary
    indices = pa.chunked_array([c.indices for c in chunks], type=chunks[0].indices.type)
    return indices, values if pa.types.is_large_string(values.type) else \
        values.cast(pa.large_string())
