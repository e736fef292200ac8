"""The long fuzz run of the readers (the CI test `tests/fuzz/` runs a bounded part of it).

    python benchmarks/fuzz_inputs.py --count 10000            # full run, seed 1, 2 workers
    python benchmarks/fuzz_inputs.py --seed 7 --count 20000 --workers 2
    python benchmarks/fuzz_inputs.py --seed 1 --case 4711     # replay one case
    python benchmarks/fuzz_inputs.py --seed 1 --case 4711 --write-to /tmp/m   # and keep it
    python benchmarks/fuzz_inputs.py --mutation huge_numbers --count 2000     # one mutation

Every case mutates one input file of one fixture span and loads that span through the
loader's path in a worker process with a time limit (see `tests/fuzz/engine.py` for what
counts as a finding). Prints every finding with its seed, case number and mutation, then a
summary (inputs, time, findings by kind, mutations used). Exit code 1 if anything was found.
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.fuzz import engine  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=10_000, help="mutated inputs to run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first case number")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--case-timeout", type=float, default=30.0,
                    help="seconds one case may take before it counts as a hang")
    ap.add_argument("--time-cap", type=float, default=None, help="stop after this many s")
    ap.add_argument("--case", type=int, action="append",
                    help="replay only this case number (repeatable)")
    ap.add_argument("--write-to", help="with --case: also write the mutated span here")
    ap.add_argument("--mutation", help="a campaign of this mutation alone (e.g. huge_numbers);"
                    " replay its cases with the same option")
    a = ap.parse_args(argv)

    if a.case and a.write_to:
        _write_cases(a.seed, a.case, a.write_to, a.mutation)
    summary = engine.run(a.seed, a.count, workers=a.workers, time_cap=a.time_cap,
                         case_timeout=a.case_timeout, start=a.start, only=a.case,
                         mutation=a.mutation)
    rate = summary.done / summary.seconds if summary.seconds else 0.0
    print(f"\nseed {summary.seed}: {summary.done} of {summary.planned} mutated inputs in"
          f" {summary.seconds:.0f} s ({rate:.1f}/s, {a.workers} worker(s)),"
          f" {len(summary.findings)} finding(s), {summary.hangs} hang(s)"
          + (" — stopped by the time cap" if summary.stopped_by_time else ""))
    print("by file kind:", ", ".join(f"{k} {v}" for k, v in sorted(summary.by_kind.items())))
    print("by mutation:", ", ".join(f"{k} {v}" for k, v in sorted(summary.by_mutation.items())))
    for f in summary.findings:
        print(f"- {f.case.describe()}: {f.problems[0].splitlines()[0]}")
    return 1 if summary.findings else 0


def _write_cases(seed: int, indexes: list[int], dest: str, mutation: str | None) -> None:
    """Copy each case's span with its mutated file to dest/case-N, for a closer look."""
    import shutil

    files = engine.input_files()
    kinds = engine.file_kinds(files)
    span_of = dict(files)
    for i in indexes:
        (case,) = engine.plan(seed, 1, files, kinds, i, mutation)
        out = os.path.join(dest, f"case-{i}")
        root = span_of[case.file]
        src = os.path.join(engine.FIXTURES, root)
        target = os.path.join(out, root)
        if os.path.isdir(src):
            shutil.copytree(src, target, dirs_exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(src, target)
        path = os.path.join(engine.FIXTURES, case.file)
        with open(path, "rb") as fh:
            data = fh.read()
        with open(os.path.join(out, case.file), "wb") as fh:
            fh.write(engine.mutate(case, data, engine.kind_of(path, data)))
        print(f"wrote {case.describe()} to {out}")


if __name__ == "__main__":
    sys.exit(main())
