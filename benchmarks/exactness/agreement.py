"""Agreement of our kineto numbers with torch-tb-profiler 0.4.3's committed answers.

    PYTHONPATH=. python benchmarks/exactness/agreement.py [-v] [--pure]

Prints, per real trace and in total, the share of reference values we reproduce (counts
exactly, times within 1 µs; see tests/exactness/compare.py), and with -v each difference.
--pure compares with plain 0.4.3's answers (tests/exactness/reference/pure/), which do not
know the two newer category names (docs/exactness.md). EXACTNESS_PLUGIN=<dir> measures the
`tb_plugin` package found in <dir> instead (e.g. an older checkout, for a before/after).
"""
from __future__ import annotations

import collections
import json
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, ROOT)
if os.environ.get("EXACTNESS_PLUGIN"):
    sys.path.insert(0, os.environ["EXACTNESS_PLUGIN"])

from tests.exactness.compare import compare, ours, traces  # noqa: E402


def main(argv=None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    verbose = "-v" in argv
    total_ok = total = 0
    for trace, ref_path in traces():
        if "--pure" in argv:
            ref_path = os.path.join(os.path.dirname(ref_path), "pure", os.path.basename(ref_path))
        with open(ref_path) as f:
            ref = json.load(f)
        rows = compare(ours(trace), ref)
        ok = sum(r["ok"] for r in rows)
        total_ok += ok
        total += len(rows)
        per_table = collections.Counter(r["table"] for r in rows if not r["ok"])
        print(f"{os.path.relpath(trace, ROOT)}: {ok}/{len(rows)} = {100.0 * ok / max(len(rows), 1):.1f} %"
              f"  differences: {dict(per_table)}")
        if verbose:
            for r in rows:
                if not r["ok"]:
                    print(f"   {r['table']} {r['key']!r} {r['field']}: ref {r['ref']} ours {r['ours']}")
    print(f"total: {total_ok}/{total} = {100.0 * total_ok / max(total, 1):.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
