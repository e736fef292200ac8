"""The advisor runs on every committed fixture and every real sample without a rule error."""
from __future__ import annotations

import json
import os

import pytest

from tb_plugin.advisor import thresholds as th
from tb_plugin.advisor.engine import advise_profile
from tests.tb_server import FIXTURES

from .planted import read_all

from fixtures import generate as g

# ../shared/data/real of the project (TBP_REAL_DATA overrides; a worktree sits one level deeper)
REAL = next((p for p in (g.REAL_DATA, os.path.join(FIXTURES, "..", "..", "shared", "data", "real"),
                         os.path.join(FIXTURES, "..", "..", "..", "shared", "data", "real"))
             if os.path.isdir(p)), g.REAL_DATA)
ROOTS = sorted(os.path.join(FIXTURES, d) for d in os.listdir(FIXTURES)
               if os.path.isdir(os.path.join(FIXTURES, d)) and not d.startswith("_"))
if os.path.isdir(REAL):
    ROOTS += sorted(os.path.join(REAL, d) for d in os.listdir(REAL)
                    if os.path.isdir(os.path.join(REAL, d)))


@pytest.mark.parametrize("root", ROOTS, ids=os.path.basename)
def test_advisor_runs_on_sample(root):
    spans = read_all(root)
    if not spans:
        pytest.skip("no profile found")
    for span, prof in spans:
        res = advise_profile(prof, th.load(), span.worker, span.span)
        json.dumps(res, allow_nan=False, default=str)
        failed = [r for r in res["rules"] if (r["why_not"] or "").startswith("the rule failed")]
        assert failed == [], failed
        for f in res["findings"]:
            assert f["impact_us"] is None or f["impact_us"] >= 0
