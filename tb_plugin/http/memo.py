"""Finished answers, memoized: the body of a 200 response kept per (route, parameters,
state of the runs it names), in one bounded LRU.

Why: a view's answer depends only on the profiles it reads and the request's parameters,
and the UI asks for the same answers again and again (every tab switch, every poll, every
client). Recomputing and re-encoding them (table sort/page/JSON, a viewport) costs 10-150 ms
of CPU per request; with 50 clients on 2 cores that queues to seconds. A memoized answer is
a dictionary lookup.

Why this is safe: the key holds, for every run the request names (`run`, `base_run`,
`exp_run`), each span's cache key (which changes when its files change) and its load
states, so an answer computed before a profile finished loading, or before its files
changed, is never served after. Routes that report live progress (`/runs`) or stream files
are not memoized. Only 200 answers are kept, bodies up to `max_body` bytes, `max_bytes` in
all (least recently used first out).
"""
from __future__ import annotations

import threading

from werkzeug.wrappers import Response

from ..lru import LRU
from .holding import WAIT_PARAMETER

NOT_MEMOIZED = frozenset({"/runs", "/trace/download"})
RUN_PARAMETERS = ("run", "base_run", "exp_run")


class ResponseMemo:
    def __init__(self, max_bytes: int = 64 << 20, max_body: int = 4 << 20,
                 max_entries: int = 4096):
        self.max_body = max_body
        # (body, headers) per key, bounded by count and by the bodies' bytes.
        self._entries: LRU = LRU(max_entries, max_weight=max_bytes,
                                 weigh=lambda entry: len(entry[0]))
        self._count_lock = threading.Lock()
        self.hits = self.misses = 0
    def key(self, route: str, request, loader) -> tuple | None:
        """The memo key of this request, or None when its answer must be computed."""
        if route in NOT_MEMOIZED:
            return None
        args = request.args
        state = []
        for p in RUN_PARAMETERS:
            name = args.get(p)
            if name is None:
                continue
            state.append((p, name, tuple((st.key, st.state, st.trace_state, st.advice_state)
                                         for st in loader.span_states(name))))
        if not state:
            return None  # every memoizable route names the run(s) it reads
        # How long a request may be held (http/holding.py) does not change its answer.
        asked = tuple(sorted(kv for kv in args.items(multi=True) if kv[0] != WAIT_PARAMETER))
        return route, asked, tuple(state)

    def get(self, key) -> Response | None:
        if key is None:
            return None
        hit = self._entries.get(key)
        with self._count_lock:
            if hit is None:
                self.misses += 1
            else:
                self.hits += 1
        if hit is None:
            return None
        body, headers = hit
        return Response(body, status=200, headers=headers)

    def put(self, key, response: Response) -> None:
        if key is None or response.status_code != 200 or response.direct_passthrough \
                or response.is_streamed:
            return
        body = response.get_data()
        if len(body) > self.max_body:
            return
        self._entries.put(key, (body, list(response.headers.items())))

    def size(self) -> tuple[int, int]:
        """(entries, bytes) held."""
        return len(self._entries), int(self._entries.weight)
