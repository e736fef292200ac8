"""JSON / CSV / file responses and the error type every handler raises."""
from __future__ import annotations

import json
import math
import os
import re

import msgspec
import numpy as np
from werkzeug.wrappers import Response
from werkzeug.wsgi import wrap_file

from ..discovery import printable

# Security headers on every response: nothing from data may run as script or be sniffed.
_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}
MAX_JSON_BYTES = 32 << 20
MAX_CSV_BYTES = 512 << 20


class ApiError(Exception):
    def __init__(self, status: int, message: str, **extra):
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


def _default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        f = float(o)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.bool_,)):
        return bool(o)
    return str(o)


def _clean(o):
    """NaN/inf -> null recursively (json would write invalid NaN tokens); text that is not
    valid Unicode (file names with non-UTF-8 bytes, lone surrogates from data) -> escaped,
    so it can never make encoding the answer fail."""
    if isinstance(o, str):
        return printable(o)
    if isinstance(o, float):
        return None if math.isnan(o) or math.isinf(o) else o
    if isinstance(o, dict):
        return {printable(k) if isinstance(k, str) else k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


# msgspec writes NaN and inf as null and numpy values through `_default`, in C: the
# stdlib's json needed the whole payload walked in Python first (`_clean`), ~7 ms of a
# 50-row table answer. Text that is not valid Unicode makes it raise: then the walk.
_ENCODER = msgspec.json.Encoder(enc_hook=_default)


def _json_bytes(payload) -> bytes:
    try:
        return _ENCODER.encode(payload)
    except (UnicodeEncodeError, TypeError, ValueError, OverflowError):
        return json.dumps(_clean(payload), default=_default, separators=(",", ":"),
                          ensure_ascii=False).encode("utf-8")


def json_response(payload, status: int = 200, headers: dict | None = None) -> Response:
    body = _json_bytes(payload)
    if len(body) > MAX_JSON_BYTES:
        return error_response(ApiError(413, "response too large; narrow the request"
                                            " (limit, filters)"))
    h = dict(_HEADERS)
    if headers:
        h.update(headers)
    return Response(body, status=status, content_type="application/json; charset=utf-8",
                    headers=h)


def error_response(err: ApiError) -> Response:
    payload = {"error": err.message}
    payload.update(err.extra)
    h = dict(_HEADERS)
    if err.status == 503:
        h["Retry-After"] = "2"
    body = _json_bytes(payload)
    return Response(body, status=err.status, content_type="application/json; charset=utf-8",
                    headers=h)


_FILENAME_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def csv_response(text: str, filename: str) -> Response:
    body = printable(text).encode("utf-8")
    if len(body) > MAX_CSV_BYTES:
        return error_response(ApiError(413, "CSV export too large; narrow the table (search)"))
    h = dict(_HEADERS)
    h["Content-Disposition"] = f'attachment; filename="{_FILENAME_SAFE.sub("_", filename)}"'
    return Response(body, status=200, content_type="text/csv; charset=utf-8", headers=h)


def file_response(environ, path: str, download_name: str, content_type: str) -> Response:
    fh = open(path, "rb")
    size = os.fstat(fh.fileno()).st_size
    h = dict(_HEADERS)
    h["Content-Disposition"] = f'attachment; filename="{_FILENAME_SAFE.sub("_", download_name)}"'
    h["Content-Length"] = str(size)
    return Response(wrap_file(environ, fh), status=200, content_type=content_type, headers=h,
                    direct_passthrough=True)
