"""Whether two checkouts build identical views-stage (stage 1) cache entries.

    python benchmarks/views_equal.py LOGDIR [LOGDIR ...] [--base /work/main] [--new .]

Builds stage 1 of every span of the logdirs with each checkout (`views_stage.py --cache`,
PYTHONPATH = that checkout, one process each) into two temporary caches, then compares
entry by entry: the same entries and files; every Arrow table equal (`Table.equals` with
the schema metadata, so pandas dtypes too: columns, types, values, row order); meta.json
equal but for `load_seconds`; every other file (derived summaries) equal byte for byte.
Prints the differences and exits 1 when there is one.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))


def build(code: str, logdirs: list[str], cache: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(code)}
    subprocess.run([sys.executable, os.path.join(HERE, "views_stage.py"), *logdirs,
                    "--cache", cache], env=env, check=True, stdout=subprocess.DEVNULL)


def files(root: str) -> dict[str, str]:
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = p
    return out


def arrow_table(path: str) -> pa.Table:
    with pa.memory_map(path) as src:
        return pa.ipc.open_file(src).read_all()


def meta(path: str) -> dict:
    with open(path) as fh:
        doc = json.load(fh)
    doc.get("meta", doc).pop("load_seconds", None)
    return doc


def compare(a_root: str, b_root: str) -> list[str]:
    a, b = files(a_root), files(b_root)
    diffs = [f"only in base: {k}" for k in sorted(set(a) - set(b))]
    diffs += [f"only in new: {k}" for k in sorted(set(b) - set(a))]
    for rel in sorted(set(a) & set(b)):
        pa_, pb = a[rel], b[rel]
        if rel.endswith(".arrow"):
            ta, tb = arrow_table(pa_), arrow_table(pb)
            if not ta.equals(tb, check_metadata=True):
                diffs.append(f"{rel}: tables differ: {describe(ta, tb)}")
        elif os.path.basename(rel) == "meta.json":
            if meta(pa_) != meta(pb):
                diffs.append(f"{rel}: meta differs")
        else:
            with open(pa_, "rb") as fa, open(pb, "rb") as fb:
                if fa.read() != fb.read():
                    diffs.append(f"{rel}: bytes differ")
    return diffs


def describe(ta: pa.Table, tb: pa.Table) -> str:
    if ta.schema != tb.schema:
        return f"schema {ta.schema} vs {tb.schema}"
    if ta.num_rows != tb.num_rows:
        return f"rows {ta.num_rows} vs {tb.num_rows}"
    if ta.schema.metadata != tb.schema.metadata:
        return "schema metadata"
    cols = [n for n in ta.column_names if not ta.column(n).equals(tb.column(n))]
    return f"columns {cols}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logdirs", nargs="+")
    ap.add_argument("--base", default="/work/main", help="checkout of the reference")
    ap.add_argument("--new", default=os.path.dirname(HERE), help="checkout compared")
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="npu-prof-views-equal-")
    try:
        build(args.base, args.logdirs, os.path.join(scratch, "base"))
        build(args.new, args.logdirs, os.path.join(scratch, "new"))
        diffs = compare(os.path.join(scratch, "base"), os.path.join(scratch, "new"))
        n = sum(1 for k in files(os.path.join(scratch, "base")) if k.endswith(".arrow"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for d in diffs:
        print(d)
    print(f"{'DIFFERENT' if diffs else 'identical'}: {n} tables of {len(args.logdirs)}"
          f" logdir(s), {len(diffs)} difference(s)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
