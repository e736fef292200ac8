"""Natural ("numeric-aware") order of names: `rank2` before `rank10`, `device_9` before
`device_10`. The one sort key for every list of names the plugin shows or reads in order
(runs, workers, device directories, trace files, timeline processes and threads)."""
from __future__ import annotations

import re

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> list:
    """Sort key: the name cut into text and integer parts. The parts alternate text,
    number, text, ... (re.split with a group), so two keys compare part by part without
    ever comparing a number with a text."""
    return [int(p) if i % 2 else p for i, p in enumerate(_DIGITS.split(name))]
