"""Request parameter parsing and validation: every parameter is checked, bad ones are 400."""
from __future__ import annotations

import math

from ..analysis import tables
from .responses import ApiError

MAX_PARAM_LEN = 4096
# Every number a request gives is range-checked here, so no handler ever meets a value that
# overflows when turned into ns or an int64 (`1e308`, `99999999999999999999`).
# Times in µs: ns = µs * 1000 stays inside int64 (epoch µs today are ~1.7e15).
MAX_TIME_US = 9e15
# Integers without a narrower range: exact in a JSON double and in int64.
MAX_INT = 1 << 53
MAX_LIST_ITEMS = 4096


def text(args, name: str, required: bool = False, default: str | None = None) -> str | None:
    v = args.get(name)
    if v is None or v == "":
        if required:
            raise ApiError(400, f"missing parameter '{name}'")
        return default
    if len(v) > MAX_PARAM_LEN:
        raise ApiError(400, f"parameter '{name}' is too long")
    if "\x00" in v:
        raise ApiError(400, f"parameter '{name}' contains a NUL character")
    return v


def choice(args, name: str, choices: tuple[str, ...], default: str) -> str:
    v = text(args, name, default=default)
    if v not in choices:
        raise ApiError(400, f"parameter '{name}' must be one of {', '.join(choices)}"
                            f" (got {v!r})")
    return v


def integer(args, name: str, default: int | None = None, lo: int = -MAX_INT,
            hi: int = MAX_INT) -> int | None:
    v = text(args, name)
    if v is None:
        return default
    return _int_in_range(name, v, lo, hi)


def _int_in_range(name: str, v: str, lo: int, hi: int) -> int:
    try:
        n = int(v)
    except ValueError:  # also for digit strings too long to convert
        raise ApiError(400, f"parameter '{name}' must be an integer between {lo} and {hi}"
                            f" (got {_shown(v)})") from None
    if n < lo or n > hi:
        raise ApiError(400, f"parameter '{name}' must be between {lo} and {hi} (got {_shown(v)})")
    return n


def integers(args, name: str, lo: int, hi: int, max_items: int = MAX_LIST_ITEMS
             ) -> set[int] | None:
    """A comma-separated list of integers, each in [lo, hi]; None when absent."""
    v = text(args, name)
    if v is None:
        return None
    parts = [p for p in v.split(",") if p != ""]
    if len(parts) > max_items:
        raise ApiError(400, f"parameter '{name}' has more than {max_items} items")
    return {_int_in_range(name, p, lo, hi) for p in parts}


def number(args, name: str, default: float | None = None, lo: float = -MAX_TIME_US,
           hi: float = MAX_TIME_US) -> float | None:
    """A finite number in [lo, hi] (by default a time in µs)."""
    v = text(args, name)
    if v is None:
        return default
    try:
        f = float(v)
    except ValueError:
        raise ApiError(400, f"parameter '{name}' must be a number (got {_shown(v)})") from None
    if not math.isfinite(f) or f < lo or f > hi:
        raise ApiError(400, f"parameter '{name}' must be a finite number between {lo:g} and"
                            f" {hi:g} (got {_shown(v)})")
    return f


def _shown(v: str) -> str:
    return repr(v if len(v) <= 40 else v[:40] + "...")


def table_params(args) -> dict:
    """The shared table parameters: limit, offset, sort, search, format."""
    return {
        "limit": integer(args, "limit", default=None, lo=0, hi=tables.LIMIT_PARAM_MAX),
        "offset": integer(args, "offset", default=0, lo=0, hi=1 << 40),
        "sort": text(args, "sort"),
        "search": text(args, "search"),
        "format": choice(args, "format", ("json", "csv"), "json"),
    }
