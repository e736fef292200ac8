"""docs/architecture.md lists every module of tb_plugin/ (and no module that does not exist)."""
import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PKG = os.path.join(ROOT, "tb_plugin")


def _tree_block() -> str:
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as fh:
        doc = fh.read()
    start = doc.index("```\ntb_plugin/")
    return doc[start:doc.index("```", start + 4)]


def _modules() -> set[str]:
    out = set()
    for d, dirs, files in os.walk(PKG):
        dirs[:] = [x for x in dirs if x not in ("static", "__pycache__")]
        for f in files:
            if f.endswith(".py") and (f != "__init__.py" or os.path.basename(d) == "readers"):
                out.add(f)
    return out


def test_every_module_is_in_the_tree():
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*\.py", _tree_block()))
    missing = _modules() - named
    assert not missing, f"modules missing from docs/architecture.md: {sorted(missing)}"
    gone = named - _modules()
    assert not gone, f"docs/architecture.md names modules that do not exist: {sorted(gone)}"
