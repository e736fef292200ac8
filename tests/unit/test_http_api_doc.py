"""docs/http_api.md and the code agree: every route the plugin serves is documented (a
`### \\`route...\\`` heading), every documented route is served, and the documented row
limits are the ones the code uses."""
import os
import re

from tb_plugin import plugin
from tb_plugin.analysis import tables

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "http_api.md")
# A route heading: "### `kernels?group_by=...` (profile, table)"; the route is the text up
# to the first '?' or '['.
HEADING = re.compile(r"^###\s+`(?P<route>[A-Za-z0-9_/]+)[^`]*`", re.M)


def _doc() -> str:
    with open(DOC, encoding="utf-8") as fh:
        return fh.read()


def documented_routes() -> set[str]:
    return {"/" + m.group("route") for m in HEADING.finditer(_doc())}


def test_heading_parser_reads_routes_with_and_without_parameters():
    text = "### `runs`\n### `run?run=`\n### `memory[?max_points=2000]` (profile)\n### Static files\n"
    assert {m.group("route") for m in HEADING.finditer(text)} == {"runs", "run", "memory"}


def test_every_served_route_is_documented():
    missing = set(plugin.ROUTES) - documented_routes()
    assert not missing, f"routes without a section in docs/http_api.md: {sorted(missing)}"


def test_every_documented_route_is_served():
    unknown = documented_routes() - set(plugin.ROUTES)
    assert not unknown, f"documented routes the plugin does not serve: {sorted(unknown)}"


def _table_parameters_section() -> str:
    doc = _doc()
    start = doc.index("## Table parameters")
    return doc[start:doc.index("\n## ", start + 1)]


def _number_before(section: str, name: str) -> int:
    m = re.search(r"([\d,]+)(?: rows)?[ ,(]+`" + name + "`", section)
    assert m, f"{name} is not documented with its value"
    return int(m.group(1).replace(",", ""))


def test_documented_row_limits_are_the_code_constants():
    section = _table_parameters_section()
    assert _number_before(section, "DEFAULT_LIMIT") == tables.DEFAULT_LIMIT
    assert _number_before(section, "MAX_LIMIT") == tables.MAX_LIMIT
    assert _number_before(section, "LIMIT_PARAM_MAX") == tables.LIMIT_PARAM_MAX
    assert _number_before(section, "MAX_CSV_ROWS") == tables.MAX_CSV_ROWS
