"""The scan loop: discovery every `poll_seconds` in a background thread, and which spans a
scan adds (new or changed files) or drops (gone from the logdir)."""
from __future__ import annotations

import logging
import threading
import traceback
from typing import Callable

from .. import discovery
from ..cache import entry_key
from .spans import SpanState

log = logging.getLogger(__name__)

SpanId = tuple[str, str, str]  # (run, worker, span)


def span_states(runs: dict[str, discovery.Run], known: dict[SpanId, SpanState]
                ) -> tuple[dict[SpanId, SpanState], list[SpanState]]:
    """(the span states of this scan, the new ones among them). A known span keeps its
    state while its files are unchanged (same cache key); a new or changed span gets a new
    pending state; spans no longer found are left out."""
    current: dict[SpanId, SpanState] = {}
    new: list[SpanState] = []
    for run in runs.values():
        for span in run.spans():
            ident = (run.name, span.worker, span.span)
            key = entry_key(span.producer, span.root, span.device_id,
                            discovery.fingerprint(span))
            st = known.get(ident)
            if st is None or st.key != key:
                st = SpanState(span=span, key=key)
                new.append(st)
            current[ident] = st
    return current, new


class PollLoop:
    """Calls `scan` now and then every `seconds` until stopped; a failing scan is logged and
    tried again next time."""

    def __init__(self, scan: Callable[[], None], seconds: float,
                 on_first_scan: Callable[[], None] | None = None):
        self._scan = scan
        self.seconds = seconds
        self._on_first_scan = on_first_scan  # once, when `wait_scanned` starts to hold
        self._scanned = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="npu-profiler-scan",
                                            daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def wait_scanned(self, timeout: float | None = None) -> bool:
        """True once the first scan has finished (waits up to `timeout` seconds)."""
        return self._scanned.wait(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._scan()
            except Exception:
                log.error("discovery failed\n%s", traceback.format_exc())
            if not self._scanned.is_set():
                self._scanned.set()
                if self._on_first_scan is not None:
                    self._on_first_scan()
            self._stop.wait(self.seconds)
