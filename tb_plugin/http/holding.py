"""Held "still loading" answers (long polling): `?wait_ms=N` on any data route.

Why: a view whose profile is still being read gets 503 {"state": "loading", "progress"} and
asks again. Polled every 1-2 s, the answer the user waits for appeared on average a second
after it existed; a 300 MB timeline that is ready at 9 s was painted at ~10 s. With
`wait_ms`, the server holds a loading answer until the loader's state changes (a stage of
any span ended) and computes the answer again: the ready answer goes out the moment it
exists, and a loading answer whose progress moved goes out at once (the progress bar stays
live). Otherwise the loading answer goes out when `wait_ms` has passed.

`/runs` is never "loading" (it reports the progress): there `since=G` (the `generation` of
the answer the client has) with `wait_ms` holds the request while nothing changed since
(`hold_while_unchanged`), so the run list follows the load as it happens.

Bounded: at most MAX_WAIT_MS per request, at most MAX_HELD requests held at once (a request
beyond that is answered at once, as without `wait_ms`), and nothing is held once the loader
stopped. Only "loading" answers are held; every other answer, error or not, goes out as
computed.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from werkzeug.wrappers import Response

from ..loading import Loader
from . import params
from .responses import ApiError

WAIT_PARAMETER = "wait_ms"
MAX_WAIT_MS = 10_000
MAX_HELD = 32

_held = threading.BoundedSemaphore(MAX_HELD)


def wait_seconds(args) -> float:
    """The request's `wait_ms` in seconds (0 without it); 400 outside [0, MAX_WAIT_MS]."""
    return (params.integer(args, WAIT_PARAMETER, default=0, lo=0, hi=MAX_WAIT_MS) or 0) / 1000


def _is_loading(err: ApiError) -> bool:
    return err.status == 503 and err.extra.get("state") == "loading"


def answer(loader: Loader, wait_s: float, compute: Callable[[], Response]) -> Response:
    """`compute()`, computed again after each change of the loader while it raises a
    loading answer with the same progress, for up to `wait_s` seconds."""
    if wait_s <= 0:
        return compute()
    deadline = time.monotonic() + wait_s
    first_progress = None
    while True:
        seen = loader.generation
        try:
            return compute()
        except ApiError as err:
            if not _is_loading(err):
                raise
            progress = err.extra.get("progress")
            if first_progress is None:
                first_progress = progress
            elif progress != first_progress:
                raise  # the progress moved: shown now
            if not _hold(loader, seen, deadline - time.monotonic()):
                raise


def hold_while_unchanged(loader: Loader, args) -> None:
    """With `since` and `wait_ms`: wait while the loader's generation is still `since`."""
    since = params.integer(args, "since", lo=0, hi=params.MAX_INT)
    if since is not None:
        _hold(loader, since, wait_seconds(args))


def _hold(loader: Loader, since: int, seconds: float) -> bool:
    """Wait up to `seconds` for the loader's generation to move past `since`, in one of the
    MAX_HELD slots. False when the request is not to be held (no time left, the loader
    stopped, every slot taken)."""
    if seconds <= 0 or loader.stopped or not _held.acquire(blocking=False):
        return False
    try:
        loader.wait_changed(since, seconds)
    finally:
        _held.release()
    return True
