"""Background loading of profiles, one module per job:

    scan.py      the scan loop (discovery every few seconds) and which spans a scan adds
    pool.py      the bounded pool of reader processes, with the retry-in-isolation rule
    build.py     the three load stages of one span, run in a reader process
    spans.py     the per-span state machine and the facts a finished stage left
    profiles.py  the open-profile store (LRU of cache entries opened in TensorBoard)
    status.py    a run's load status for /runs and /run (a pure function)
    loader.py    the Loader: ties them together and orders the work
"""
from .build import build_advice, build_entry, build_trace
from .loader import POLL_SECONDS, Loader
from .spans import SpanFacts, SpanState

__all__ = ["Loader", "POLL_SECONDS", "SpanFacts", "SpanState", "build_advice", "build_entry",
           "build_trace"]
