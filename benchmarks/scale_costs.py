#!/usr/bin/env python3
"""Measured per-rank costs for the scale-out arithmetic of docs/scale.md.

    .venv/bin/python benchmarks/scale_costs.py RUN_DIR [RUN_DIR ...] [--summaries 8192]
    .venv/bin/python benchmarks/scale_costs.py --summary-files CACHE/distributed/*/*.json

Each RUN_DIR is a generated torch_npu run (`fixtures/generate.py --out RUN_DIR --ranks N
--trace-mb X`). Every rank is built in this process, one after the other, exactly as a
reader or Dask worker builds it (`build_entry`, then `build_trace`, into a fresh local
cache), and measured by CPU time (`time.process_time`: the machine is shared, so wall time
would measure the neighbours). Then the TensorBoard side: the per-rank summaries of the
first run are replicated to `--summaries` ranks (distinct rank numbers) and held in memory
in the form `SummaryStore` holds them, with the distributed whole-run view computed over
them, as `/distributed` does; the RSS that adds is the TensorBoard memory per rank, and the
CPU / wall time is that of the first whole-run answer (parsing, vote, view). Prints one JSON
document.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def _size(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def _summary_modules():
    """(rank_summary, distributed_findings, distributed); one module for all three before
    analysis/distributed.py was split, so that an older revision can be measured too."""
    from tb_plugin.analysis import distributed
    try:
        from tb_plugin.analysis import distributed_findings, rank_summary
    except ImportError:
        return distributed, distributed, distributed
    return rank_summary, distributed_findings, distributed


def measure_run(run_dir: str) -> list[dict]:
    from tb_plugin import discovery
    from tb_plugin.cache import ProfileCache, entry_key
    from tb_plugin.loading.build import build_advice, build_entry, build_trace

    rank_summary, _, _ = _summary_modules()
    cache = ProfileCache(tempfile.mkdtemp(prefix="scale-costs-"))
    runs, _ = discovery.discover(os.path.dirname(os.path.abspath(run_dir)))
    spans = [s for r in runs.values() for s in r.spans()
             if s.root.startswith(os.path.abspath(run_dir) + os.sep)]
    out = []
    for span in spans:
        key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
        trace = [f for f in span.files if os.path.basename(f) == "trace_view.json"]
        c0 = time.process_time()
        build_entry(span, cache.root, key)
        c1 = time.process_time()
        build_trace(span, cache.root, key)
        build_advice(span, cache.root, key)
        c2 = time.process_time()
        summary = cache.derived_path("distributed", key, rank_summary.SUMMARY_SUFFIX)
        derived = sum(_size(os.path.join(cache.root, kind, key[:2]))
                      for kind in os.listdir(cache.root) if len(kind) > 2
                      and os.path.isdir(os.path.join(cache.root, kind, key[:2])))
        out.append({"rank": span.rank, "input_bytes": sum(_size(f) for f in span.files),
                    "trace_bytes": sum(_size(f) for f in trace),
                    "views_cpu_s": round(c1 - c0, 3), "trace_cpu_s": round(c2 - c1, 3),
                    "entry_bytes": _size(cache.entry_dir(key)), "derived_bytes": derived,
                    "summary_bytes": _size(summary) if os.path.exists(summary) else 0,
                    "summary_path": summary})
    return out


def scaled(doc: dict, k: int) -> dict:
    """A summary k times as long (a k times longer trace at the generator's density): its
    steps and collective calls repeated k times, steps renumbered, op names distinct per
    call as torch_npu writes them."""
    if k <= 1:
        return doc
    steps = doc.get("steps") or []
    top = max([x["step"] for x in steps] + [0])
    col = doc["collectives"]
    names = [f"{n}#{r}" for r in range(k) for n in col["names"]]
    count = len(col["names"])
    return {**doc,
            "steps": [{**x, "step": x["step"] + r * top} for r in range(k) for x in steps],
            "collectives": {"groups": col["groups"], "names": names,
                            "group": col["group"] * k,
                            "name": [i + r * count for r in range(k) for i in col["name"]],
                            "dur_us": col["dur_us"] * k}}


def _with_thresholds(fn, summaries):
    """fn(summaries, thresholds), or fn(summaries) at a revision where the analysis loaded
    the advisor's thresholds itself."""
    import inspect

    from tb_plugin.advisor import thresholds

    if "t" in inspect.signature(fn).parameters:
        return fn(summaries, thresholds.load())
    return fn(summaries)


def tb_memory(summary_paths: list[str], ranks: int, scale: int = 1) -> dict:
    """RSS added by holding `ranks` summaries (in the form `SummaryStore` holds them) and the
    whole-run view over them, and the CPU / wall time of that first whole-run answer."""
    import psutil

    rank_summary, distributed_findings, distributed = _summary_modules()
    texts = []
    for p in summary_paths:
        with open(p, encoding="utf-8") as fh:
            texts.append(fh.read())
    if scale > 1:
        texts = [json.dumps(scaled(json.loads(t), scale)) for t in texts]
    hold = getattr(rank_summary, "in_memory", lambda d: d)  # before summary v3: the JSON as is
    if hasattr(rank_summary, "_read_local"):  # the store decodes its documents by msgspec
        import msgspec

        texts = [t.encode() for t in texts]
        decode = msgspec.json.decode
    else:
        decode = json.loads
    proc = psutil.Process()
    before = proc.memory_info().rss
    t0, w0 = time.process_time(), time.perf_counter()
    summaries = []
    for i in range(ranks):  # parsed from the JSON text, as TensorBoard reads each one
        d = hold(decode(texts[i % len(texts)]))
        summaries.append({**d, "rank": i, "worker": f"rank{i}", "span": "s"})
    t1, w1 = time.process_time(), time.perf_counter()
    held = proc.memory_info().rss
    votes = _with_thresholds(distributed_findings.straggler_votes, summaries)
    t2 = time.process_time()
    view = _with_thresholds(distributed.run_view, summaries)
    t3, w3 = time.process_time(), time.perf_counter()
    after = proc.memory_info().rss
    return {"ranks": ranks, "scale": scale, "summary_json_kb": round(len(texts[0]) / 1024, 1),
            "rss_summaries_mb": round((held - before) / 2**20, 1),
            "rss_per_rank_kb": round((held - before) / ranks / 1024, 1),
            "rss_with_view_mb": round((after - before) / 2**20, 1),
            "view_json_mb": round(len(json.dumps(view, default=str)) / 2**20, 2),
            "votes": {str(k): v for k, v in votes[0].items()}, "compared": votes[1],
            "parse_cpu_s": round(t1 - t0, 2), "vote_cpu_s": round(t2 - t1, 2),
            "view_cpu_s": round(t3 - t2, 2), "cpu_s": round(t3 - t0, 2),
            "wall_s": round(w3 - w0, 2), "view_wall_s": round(w3 - w1, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--summaries", type=int, default=8192)
    ap.add_argument("--summary-files", nargs="+", default=None,
                    help="measure only the TensorBoard side, from these summary documents")
    ap.add_argument("--scale", type=int, default=1,
                    help="repeat each summary's steps and calls this many times (v3 documents)")
    a = ap.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE,
                            capture_output=True, text=True).stdout.strip()
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
              "runs": {}}
    for run in a.runs:
        result["runs"][run] = measure_run(run)
    first = next(iter(result["runs"].values()), [])
    paths = a.summary_files or [r["summary_path"] for r in first if r["summary_bytes"]]
    if paths:
        result["tb_memory"] = tb_memory(paths, a.summaries, a.scale)
    for rows in result["runs"].values():
        for r in rows:
            r.pop("summary_path")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
