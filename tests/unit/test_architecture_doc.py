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


def _modules(skip_dirs=()) -> set[str]:
    out = set()
    for d, dirs, files in os.walk(PKG):
        dirs[:] = [x for x in dirs if x not in ("static", "__pycache__", *skip_dirs)]
        for f in files:
            if f.endswith(".py") and (f != "__init__.py" or os.path.basename(d) == "readers"):
                out.add(f)
    return out


def test_every_module_is_in_the_tree():
    tree = _tree_block()
    # `rules/*.py` stands for a plugin folder of one module per item (each documents itself
    # and has one registry line); the folder must exist.
    globbed = re.findall(r"([A-Za-z_][A-Za-z0-9_]*)/\*\.py", tree)
    folders = {d for _, dirs, _ in os.walk(PKG) for d in dirs}
    assert set(globbed) <= folders, f"no such folders in tb_plugin: {set(globbed) - folders}"
    named = set(re.findall(r"(?<![A-Za-z0-9_/*])[A-Za-z_][A-Za-z0-9_]*\.py", tree))
    missing = _modules(skip_dirs=globbed) - named
    assert not missing, f"modules missing from docs/architecture.md: {sorted(missing)}"
    gone = named - _modules()
    assert not gone, f"docs/architecture.md names modules that do not exist: {sorted(gone)}"
