"""Same answers, two code trees: the timeline index, the advice and the dispatch document of
the same stage-1/2 cache entries made by main's code and by this tree's, compared file by file
(Arrow `equals` for the index tables, exact text for the JSON documents), with the in-process
time of each part.

    python benchmarks/analysis_equal.py --ref /work/main --new . LOGDIR [LOGDIR ...]
    python benchmarks/analysis_equal.py --ref /work/main --new . --cache DIR LOGDIR  # keep entries
    python benchmarks/analysis_equal.py --time-only --new . --repeat 3 --cache DIR LOGDIR

Each LOGDIR is loaded once (both stages, by the --ref tree) into a cache; then, for each tree,
a fresh process works on a hard-linked copy of every entry: `derive.complete_trace` (the trace
index), the advisor over the profile (`advisor.runs.compute_profile`), the dispatch document
and `step_phases.from_trace`. Exit status 1 when anything differs.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INDEX_TABLES = ("trace_slices", "trace_groups", "trace_lanes", "trace_lod", "trace_edges",
                "trace_counters", "trace_names", "trace_cats")


def _python() -> str:
    venv = "/work/main/.venv/bin/python"
    return venv if os.path.exists(venv) else sys.executable


def _run(tree: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    out = subprocess.run([_python(), os.path.abspath(__file__), *args], env=env, check=True,
                         stdout=subprocess.PIPE, text=True)
    return out.stdout


# ---------------------------------------------------------------- inside one tree's process

def _build(logdir: str, cache_root: str) -> None:
    """Both load stages of every span of `logdir` into `cache_root`; prints the entry dirs."""
    from tb_plugin import discovery
    from tb_plugin.cache import ProfileCache, entry_key
    from tb_plugin.loading import build_entry, build_trace

    cache = ProfileCache(cache_root)
    runs, _ = discovery.discover(os.path.abspath(logdir))
    for run in runs.values():
        for span in run.spans():
            key = entry_key(span.producer, span.root, span.device_id, discovery.fingerprint(span))
            build_entry(span, cache.root, key)
            build_trace(span, cache.root, key)
            print(cache.entry_dir(key))


def _analyze(entry: str, out_dir: str) -> None:
    """Rebuild the index of a copy of `entry` in `out_dir` and write the documents there;
    prints the seconds of each part as JSON."""
    import time

    import numpy as np

    from tb_plugin.advisor import runs as advisor_runs
    from tb_plugin.advisor.thresholds import load
    from tb_plugin.analysis import derive, dispatch, step_phases
    from tb_plugin.cache import open_profile

    shutil.rmtree(out_dir, ignore_errors=True)
    shutil.copytree(entry, out_dir, copy_function=os.link)  # writes replace, never modify
    for t in INDEX_TABLES:
        path = os.path.join(out_dir, f"{t}.arrow")
        if os.path.exists(path):
            os.unlink(path)
    prof = open_profile(out_dir)
    for t in INDEX_TABLES:
        prof.rows.pop(t, None)
    times = {}
    slices = prof.table("slices")  # loaded outside the timings (table_files.read_table)
    t0 = time.perf_counter()
    phases = step_phases.from_trace(slices) if prof.has("slices") else None
    times["step_phases"] = time.perf_counter() - t0
    del slices
    prof.release()
    t0 = time.perf_counter()
    derive.complete_trace(prof)
    times["trace_index"] = time.perf_counter() - t0
    with dispatch.shared_analysis(prof):
        t0 = time.perf_counter()
        advice = advisor_runs.compute_profile(prof, load(), "worker", "span", None)
        times["advisor"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        doc = dispatch.document(prof)
        times["dispatch_document"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    dispatch.analyze(prof)  # outside the shared block: the analysis alone
    times["dispatch_analysis"] = time.perf_counter() - t0

    def default(o):
        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            return float(o)
        return str(o)

    with open(os.path.join(out_dir, "advice.cmp.json"), "w") as fh:
        json.dump(advice, fh, default=default)
    with open(os.path.join(out_dir, "dispatch.cmp.json"), "w") as fh:
        json.dump(doc, fh, default=default)
    with open(os.path.join(out_dir, "trace_index_meta.cmp.json"), "w") as fh:
        json.dump(prof.meta.trace_index, fh, default=default)
    with open(os.path.join(out_dir, "step_phases.cmp.json"), "w") as fh:
        json.dump(None if phases is None else phases.to_dict("list"), fh, default=default)
    print(json.dumps(times))


# ---------------------------------------------------------------- the driver

def _compare(a: str, b: str) -> list[str]:
    import pyarrow as pa

    diffs = []
    for t in INDEX_TABLES:
        pa_, pb = os.path.join(a, f"{t}.arrow"), os.path.join(b, f"{t}.arrow")
        if os.path.exists(pa_) != os.path.exists(pb):
            diffs.append(f"{t}: present in one tree only")
            continue
        if not os.path.exists(pa_):
            continue
        ta = pa.ipc.open_file(pa.memory_map(pa_)).read_all()
        tb = pa.ipc.open_file(pa.memory_map(pb)).read_all()
        if not ta.equals(tb, check_metadata=True):
            diffs.append(f"{t}: tables differ ({ta.schema} vs {tb.schema})")
    for doc in ("advice", "dispatch", "trace_index_meta", "step_phases"):
        with open(os.path.join(a, f"{doc}.cmp.json")) as fa, \
                open(os.path.join(b, f"{doc}.cmp.json")) as fb:
            if fa.read() != fb.read():
                diffs.append(f"{doc}: documents differ")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default="/work/main")
    ap.add_argument("--new", default=os.path.dirname(HERE))
    ap.add_argument("--cache", help="where the stage-1/2 entries are kept (reused when there)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per tree (times: the best)")
    ap.add_argument("--time-only", action="store_true", help="only time --new, compare nothing")
    ap.add_argument("--_build", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--_analyze", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("logdirs", nargs="*")
    args = ap.parse_args()
    if args._build:
        _build(*args._build)
        return 0
    if args._analyze:
        _analyze(*args._analyze)
        return 0
    work = tempfile.mkdtemp(prefix="analysis-equal-")
    failed = False
    try:
        for logdir in args.logdirs:
            cache = os.path.join(args.cache or work, os.path.basename(os.path.abspath(logdir)))
            listed = os.path.join(cache, "entries.txt")
            if not os.path.exists(listed):
                entries = _run(args.ref, "--_build", logdir, cache).split()
                with open(listed, "w") as fh:
                    fh.write("\n".join(entries))
            with open(listed) as fh:
                entries = fh.read().split()
            trees = {"new": args.new} if args.time_only else {"ref": args.ref, "new": args.new}
            for i, entry in enumerate(entries):
                best = {}
                for name, tree in trees.items():
                    for _ in range(args.repeat):
                        times = json.loads(_run(tree, "--_analyze", entry,
                                                os.path.join(work, name, str(i))).splitlines()[-1])
                        for k, v in times.items():
                            best.setdefault(name, {})[k] = min(v, best.get(name, {}).get(k, v))
                diffs = [] if args.time_only else _compare(os.path.join(work, "ref", str(i)),
                                                           os.path.join(work, "new", str(i)))
                failed |= bool(diffs)
                shown = "  ".join(f"{name}: " + " ".join(f"{k}={v:.2f}s" for k, v in t.items())
                                  for name, t in best.items())
                print(f"{logdir} [{i}] {'DIFFERS ' + '; '.join(diffs) if diffs else 'same'}  "
                      f"{shown}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
