"""Extracted args read chunk by chunk: a key whose values were all integers in one chunk is
decoded to typed values from the next chunk on (`_Builder._typed_args`); later chunks
may hold anything under that key. The reference is the stdlib json module, event by event.
"""
from __future__ import annotations

import json
import random

from tb_plugin.readers import trace_json

EXTRACT = {"a_ext": "External id", "a_dims": "Input Dims", "a_mixed": "mixed"}
LATER = [12, -3, 2 ** 63, 1.5, 1e3, "12", "x", None, True, [1, [2, 3]], {"a": 1}, "été"]


def _write_trace(path, n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    events = []
    for i in range(n):
        args = {"External id": i, "Input Dims": [[4, i % 3]]}
        if i % 7:  # absent on some events
            args["mixed"] = i if i < n // 2 else rng.choice(LATER)
        if i > n // 2 and i % 5 == 0:
            args["External id"] = rng.choice(LATER)
        if i % 11 == 0:
            args.pop("External id")
        events.append({"ph": "X", "name": f"op{i % 5}", "cat": "cpu_op", "pid": 1, "tid": 2,
                       "ts": 1000 + i, "dur": 1, "args": args})
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[\n" + ",\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n]")
    return events


def test_extracted_args_equal_json_when_an_integer_key_changes_type_later(tmp_path):
    path = tmp_path / "trace.json"
    events = _write_trace(path, 3000, seed=3)
    tt = trace_json.read_trace(str(path), chunk_bytes=8 << 10, decode_workers=1,
                               extract_args=EXTRACT)
    slices = tt.slices.sort_values("start_ns", kind="stable")
    assert len(slices) == len(events)
    for col, key in EXTRACT.items():
        got = slices[col].tolist()
        want = [e["args"].get(key) for e in events]
        for g, w in zip(got, want):
            assert g == w and type(g) is type(w), (key, g, w)
