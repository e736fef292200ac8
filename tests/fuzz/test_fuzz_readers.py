"""Bounded fuzz run of the readers for CI (the long run: `benchmarks/fuzz_inputs.py`).

Every case mutates one input file of one fixture span and loads the span through the
loader's path in a worker process with a per-case time limit; see `engine.py` for what is a
finding. The run is seeded: a failure prints the seed, the case number, the file and the
mutation, and `python benchmarks/fuzz_inputs.py --seed S --case N` replays it.

Bounds (environment): NPU_FUZZ_SEED (default 20261201), NPU_FUZZ_COUNT (default 400 cases),
NPU_FUZZ_SECONDS (default 150: the run stops taking new cases after that, so the test
takes about 2-3 minutes even on a busy machine). Then a campaign of `huge_numbers` alone
(the mutation that found most bugs of the long runs): NPU_FUZZ_HUGE_COUNT (default 300),
at most NPU_FUZZ_HUGE_SECONDS (default 60).
"""
from __future__ import annotations

import os

import pytest

from tests.fuzz import engine

SEED = int(os.environ.get("NPU_FUZZ_SEED", "20261201"))
COUNT = int(os.environ.get("NPU_FUZZ_COUNT", "400"))
SECONDS = float(os.environ.get("NPU_FUZZ_SECONDS", "150"))
HUGE_COUNT = int(os.environ.get("NPU_FUZZ_HUGE_COUNT", "300"))
HUGE_SECONDS = float(os.environ.get("NPU_FUZZ_HUGE_SECONDS", "60"))


def _report(summary) -> str:
    return "\n".join(f"{f.case.describe()}\n  " + "\n  ".join(f.problems)
                     for f in summary.findings)


def test_mutated_inputs_load_or_fail_per_file():
    summary = engine.run(SEED, COUNT, workers=2, time_cap=SECONDS, case_timeout=60)
    assert not summary.findings, f"{len(summary.findings)} finding(s):\n{_report(summary)}"
    # Not vacuous: cases ran, on every kind of file.
    assert summary.done >= min(COUNT, 40), summary
    assert {"csv", "json", "gz"} <= set(summary.by_kind), summary.by_kind


def test_numbers_beyond_every_range_load_or_fail_per_file():
    """Overflowing, huge and tiny numbers in every kind of file (1e400, 10^40, 2^64, 1e-400)."""
    summary = engine.run(SEED, HUGE_COUNT, workers=2, time_cap=HUGE_SECONDS, case_timeout=60,
                         mutation="huge_numbers")
    assert not summary.findings, f"{len(summary.findings)} finding(s):\n{_report(summary)}"
    assert summary.done >= min(HUGE_COUNT, 40), summary
    assert set(summary.by_mutation) == {"huge_numbers"}


def test_plan_and_mutations_are_reproducible():
    files = engine.input_files()
    kinds = engine.file_kinds(files)
    first = engine.plan(SEED, 60, files, kinds)
    assert first == engine.plan(SEED, 60, files, kinds)
    assert first[10:20] == engine.plan(SEED, 10, files, kinds, start=10)
    assert first != engine.plan(SEED + 1, 60, files, kinds)
    for case in first[:20]:
        path = os.path.join(engine.FIXTURES, case.file)
        with open(path, "rb") as fh:
            data = fh.read()
        kind = engine.kind_of(path, data)
        assert engine.mutate(case, data, kind) == engine.mutate(case, data, kind), case


def test_a_case_over_its_time_limit_is_reported_as_a_hang():
    """The limit is enforced by the parent: a worker that does not answer in time is
    killed and replaced, the case is a finding, and the run goes on."""
    summary = engine.run(SEED, 2, workers=1, case_timeout=0.001)
    assert summary.done == 2 and summary.hangs == 2
    assert all("hang" in f.problems[0] for f in summary.findings)


def test_a_campaign_draws_its_mutation_alone_and_is_reproducible():
    files = engine.input_files()
    kinds = engine.file_kinds(files)
    huge = engine.plan(SEED, 40, files, kinds, mutation="huge_numbers")
    assert {c.mutation for c in huge} == {"huge_numbers"}
    assert huge == engine.plan(SEED, 40, files, kinds, mutation="huge_numbers")
    assert len({c.file for c in huge}) > 10  # over the files, not one
    assert "--mutation huge_numbers" in huge[0].describe()
    # A structural mutation only where the file's kind has it.
    csv_only = engine.plan(SEED, 40, files, kinds, mutation="csv_structure")
    assert {kinds[c.file] for c in csv_only} == {"csv"}
    assert "--mutation" not in engine.plan(SEED, 1, files, kinds)[0].describe()
    with pytest.raises(ValueError, match="no mutation"):
        engine.plan(SEED, 1, files, kinds, mutation="nonsense")


def test_int64s_minimum_in_a_table_is_a_finding():
    import pandas as pd

    ok = pd.DataFrame({"a": [1, -5], "b": pd.array([None, 3], dtype="Int64"), "c": [0.5, -9e18]})
    assert engine._int64_minimum("t", ok) == []
    bad = ok.assign(b=pd.array([None, engine.INT64_MIN], dtype="Int64"))
    assert engine._int64_minimum("t", bad) == \
        ["table t column b holds int64's minimum (a cast of a number it cannot hold)"]
