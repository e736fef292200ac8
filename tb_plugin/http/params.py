"""Request parameter parsing and validation: every parameter is checked, bad ones are 400."""
from __future__ import annotations

import math

from ..analysis import tables
from .responses import ApiError

MAX_PARAM_LEN = 4096


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


def integer(args, name: str, default: int | None = None, lo: int | None = None,
            hi: int | None = None) -> int | None:
    v = text(args, name)
    if v is None:
        return default
    try:
        n = int(v)
    except ValueError:
        raise ApiError(400, f"parameter '{name}' must be an integer (got {v!r})") from None
    if lo is not None and n < lo or hi is not None and n > hi:
        raise ApiError(400, f"parameter '{name}' must be between {lo} and {hi} (got {n})")
    return n


def number(args, name: str, default: float | None = None) -> float | None:
    v = text(args, name)
    if v is None:
        return default
    try:
        f = float(v)
    except ValueError:
        raise ApiError(400, f"parameter '{name}' must be a number (got {v!r})") from None
    if math.isnan(f) or math.isinf(f):
        raise ApiError(400, f"parameter '{name}' must be a finite number")
    return f


def table_params(args) -> dict:
    """The shared table parameters: limit, offset, sort, search, format."""
    return {
        "limit": integer(args, "limit", default=None, lo=0, hi=tables.LIMIT_PARAM_MAX),
        "offset": integer(args, "offset", default=0, lo=0, hi=1 << 40),
        "sort": text(args, "sort"),
        "search": text(args, "search"),
        "format": choice(args, "format", ("json", "csv"), "json"),
    }
