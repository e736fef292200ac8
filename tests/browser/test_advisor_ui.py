"""The Advisor view in a real chromium against a real `tensorboard --logdir fixtures`.

The planted run (`fixtures/advisor_planted/`, made by fixtures/generate.py) carries known
problems on different ranks. Expected values come from the `/advisor` JSON (the rules' own
correctness is tested in tests/advisor); these tests check that the view shows every finding
of the run in the documented order, renders its text as text, and that the links open the
evidence: the Kernels view filtered to the finding's kernel, the timeline zoomed to its window.
"""
from __future__ import annotations

import math
import urllib.error

import pytest

from .conftest import ROWS_JS, copy_screenshot_to_docs, hash_state, poll, screenshot

pytestmark = pytest.mark.browser

SEVERITIES = ["high", "medium", "low", "info"]
OVERVIEW_TOP = 3


# ---- helpers -------------------------------------------------------------------------------

def planted_run(server) -> str:
    names = [r["name"] for r in server.runs() if r["state"] == "ready"]
    planted = [n for n in names if n.startswith("advisor_planted")]
    if not planted:
        pytest.skip("fixtures/ has no advisor_planted run")
    return sorted(planted)[0]


def advisor(server, run: str, **profile) -> dict:
    try:
        return server.api("advisor", run=run, **profile)
    except urllib.error.HTTPError as err:
        if err.code == 404 and b"unknown run" not in err.read():
            pytest.skip("this backend has no /advisor route")
        raise


def expected_order(findings: list[dict]) -> list[str]:
    """Severity groups high → info; inside a group the larger saving first, none last."""
    def key(ix):
        i, f = ix
        sev = SEVERITIES.index(f["severity"]) if f["severity"] in SEVERITIES else len(SEVERITIES) - 1
        imp = f["impact_us"]
        return (sev, -imp if isinstance(imp, (int, float)) and math.isfinite(imp) else math.inf, i)
    return [f["id"] for _, f in sorted(enumerate(findings), key=key)]


def shown_findings(page) -> list[dict]:
    return page.evaluate("""() => [...document.querySelectorAll('[data-testid="advisor-finding"]')].map((e) => ({
        id: e.dataset.id, rule: e.dataset.rule, severity: e.dataset.severity, worker: e.dataset.worker,
        group: e.closest('[data-testid^="advisor-group-"]').dataset.testid.replace('advisor-group-', ''),
        title: e.querySelector('[data-testid="advisor-title"]').textContent,
        message: e.querySelector('[data-testid="advisor-message"]').textContent,
        advice: e.querySelector('[data-testid="advisor-advice"] .adv-advice-text')?.textContent ?? '',
        links: [...e.querySelectorAll('[data-testid="advisor-link"]')].map((a) => a.dataset.view),
    }))""")


def css_str(text: str) -> str:
    """`text` as a CSS string literal (ids and keys come from data)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def finding_locator(page, fid: str):
    return page.locator(f'[data-testid="advisor-finding"][data-id={css_str(fid)}]')


def open_advisor(page, server, run: str, worker: str | None = None, **extra):
    info = server.api("run", run=run)
    w = worker or info["workers"][0]["name"]
    page.goto(server.page_url(run=run, worker=w, view="advisor", **extra))
    page.locator('[data-testid="view-advisor"]').wait_for()
    page.locator('[data-testid="advisor-summary"]').wait_for()
    return info


def link_text_param(link: dict):
    p = link["params"]
    for k in ("search", "name", "q"):
        if isinstance(p.get(k), str) and p[k]:
            return p[k]
    return None


def same_value(shown: str | None, value) -> bool:
    """A cell's data-value (the value as JavaScript prints it) against the API's value."""
    if value is None:
        return shown == ""
    if isinstance(value, bool):
        return shown == ("true" if value else "false")
    if isinstance(value, (int, float)):
        return shown is not None and math.isclose(float(shown), value, rel_tol=1e-9, abs_tol=1e-9)
    return shown == str(value)


def table_total(page, tid: str):
    el = page.locator(f'[data-testid="{tid}"]')
    if el.get_attribute("aria-busy") != "false":
        return None
    t = el.get_attribute("data-total")
    return int(t) if t is not None else None


# ---- tests ---------------------------------------------------------------------------------

def test_advisor_lists_every_finding_of_the_planted_run(page, server):
    run = planted_run(server)
    data = advisor(server, run)
    findings = data["findings"]
    assert findings, "the planted run has no findings"
    info = open_advisor(page, server, run)
    assert page.locator('[data-testid="nav-advisor"]').get_attribute("aria-selected") == "true"
    assert page.locator('[data-testid="advisor-scope-run"]').get_attribute("aria-checked") == "true"

    poll(lambda: len(shown_findings(page)) == len(findings))
    shown = shown_findings(page)
    assert [f["id"] for f in shown] == expected_order(findings)
    by_id = {f["id"]: f for f in findings}
    for s in shown:
        f = by_id[s["id"]]
        assert s["group"] == (f["severity"] if f["severity"] in SEVERITIES else "info")
        assert (s["rule"], s["worker"]) == (f["rule"], f["worker"] or "")
        # Text from data is shown as text, exactly.
        assert (s["title"], s["message"], s["advice"]) == (f["title"], f["message"], f["advice"])
        assert s["links"] == [lk["view"] for lk in f["links"]]
    # Different ranks carry different problems: the findings name more than one worker.
    workers = {f["worker"] for f in findings if f["worker"]}
    if len(info["workers"]) > 1:
        assert len(workers) > 1, workers

    # Severity counts.
    for sev in SEVERITIES:
        n = sum(1 for f in findings if f["severity"] == sev)
        loc = page.locator(f'[data-testid="advisor-count-{sev}"]')
        if n:
            assert loc.get_attribute("data-value") == str(n)
        else:
            assert loc.count() == 0

    # Impact per step and share of the step, as the API computed them.
    top = max((f for f in findings if isinstance(f["impact_us"], (int, float))),
              key=lambda f: f["impact_us"], default=None)
    if top is not None:
        card = finding_locator(page, top["id"])
        assert card.get_attribute("data-impact-us") is not None
        assert math.isclose(float(card.get_attribute("data-impact-us")), top["impact_us"], rel_tol=1e-9)
        assert "per step" in card.locator('[data-testid="advisor-impact"]').inner_text()

    # Quiet rules: collapsed, every rule that did not fire listed with its reason.
    rules = page.locator('[data-testid="advisor-rules"]')
    assert rules.get_attribute("open") is None
    quiet = [r for r in data["rules"] if not r["fired"]]
    listed = page.evaluate("""() => [...document.querySelectorAll('[data-testid="advisor-rule"]')]
        .map((e) => [e.dataset.rule, e.dataset.applies, e.textContent])""")
    assert sorted(r for r, _, _ in listed) == sorted(r["rule"] for r in quiet)
    for rule, applies, text in listed:
        r = next(x for x in quiet if x["rule"] == rule)
        assert applies == ("true" if r["applies"] else "false")
        if r["why_not"]:
            assert r["why_not"] in text
    rules.locator("summary").click()
    assert rules.get_attribute("open") is not None
    assert page.evaluate("document.querySelectorAll('#npu-profiler-root img, #npu-profiler-root script').length") == 0
    screenshot(page, "advisor")
    copy_screenshot_to_docs("advisor")


def test_evidence_tables_show_the_rows_of_the_finding(page, server):
    run = planted_run(server)
    findings = advisor(server, run)["findings"]
    with_rows = [(f, k, v) for f in findings for k, v in f["evidence"].items()
                 if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
    with_values = [(f, k, v) for f in findings for k, v in f["evidence"].items()
                   if isinstance(v, (int, float, str)) and not isinstance(v, bool)]
    if not with_rows and not with_values:
        pytest.skip("no finding of the planted run has evidence")
    open_advisor(page, server, run)
    poll(lambda: len(shown_findings(page)) == len(findings))
    for f, key, value in with_values[:5]:
        cell = finding_locator(page, f["id"]).locator(
            f'[data-testid="evidence-values"] tr[data-key={css_str(key)}] td')
        assert same_value(cell.get_attribute("data-value"), value), (key, value)
    for f, key, rows in with_rows[:3]:
        table = finding_locator(page, f["id"]).locator(f'[data-testid="evidence-table"][data-key={css_str(key)}]')
        cols = []
        for r in rows:
            cols += [c for c in r if c not in cols]
        assert table.locator("thead th").evaluate_all("(t) => t.map((e) => e.dataset.key)") == cols
        assert table.locator("tbody tr").count() == min(len(rows), 10)
        first = table.locator("tbody tr").first.locator("td").evaluate_all(
            "(t) => t.map((e) => e.dataset.value)")
        for c, shown in zip(cols, first):
            if not isinstance(rows[0].get(c), (dict, list)):
                assert same_value(shown, rows[0].get(c)), (key, c, shown, rows[0].get(c))


def test_kernel_link_opens_the_kernels_view_filtered_to_the_name(page, server):
    run = planted_run(server)
    findings = advisor(server, run)["findings"]
    cands = [(f, i, lk) for f in findings for i, lk in enumerate(f["links"])
             if lk["view"] == "kernels" and link_text_param(lk)]
    if not cands:
        pytest.fail("no finding of the planted run links to a kernel")
    f, index, lk = cands[0]
    open_advisor(page, server, run)
    finding_locator(page, f["id"]).wait_for()
    finding_locator(page, f["id"]).locator('[data-testid="advisor-link"]').nth(index).click()
    page.locator('[data-testid="view-kernels"]').wait_for()

    needle = link_text_param(lk)
    group = lk["params"].get("group_by") if lk["params"].get("group_by") in ("type", "core") else "name"
    st = hash_state(page)
    worker = lk["params"].get("worker") or f["worker"]
    assert st["view"] == "kernels" and st["run"] == run and st["worker"] == worker
    assert st[f"kernels.{group}.q"] == needle
    prof = {"run": run, "worker": worker, "span": st.get("span", "")}
    exp = server.api("kernels", **prof, group_by=group, sort="-total_us", search=needle, limit=200)
    assert exp["total_rows"] > 0, "the link's kernel is not in the profile"
    assert poll(lambda: table_total(page, "table-kernels") == exp["total_rows"])
    rows = poll(lambda: page.evaluate(ROWS_JS, "table-kernels"))
    assert rows and all(needle.lower() in (r[group] or "").lower() for r in rows)
    assert [r[group] for r in rows[:10]] == [str(r[group]) for r in exp["rows"][:10]]
    assert page.locator('[data-testid="table-kernels"] input[type="search"]').input_value() == needle
    screenshot(page, "advisor_kernels_link")
    # Back returns to the Advisor.
    page.go_back()
    page.locator('[data-testid="view-advisor"]').wait_for()


def test_trace_link_zooms_the_timeline_to_the_evidence(page, server):
    run = planted_run(server)
    findings = advisor(server, run)["findings"]
    cands = [(f, i, lk) for f in findings for i, lk in enumerate(f["links"])
             if lk["view"] == "trace" and isinstance(lk["params"].get("start_us"), (int, float))
             and isinstance(lk["params"].get("end_us"), (int, float))
             and lk["params"]["end_us"] > lk["params"]["start_us"]]
    if not cands:
        pytest.skip("no finding of the planted run links to a timeline window")
    f, index, lk = cands[0]
    open_advisor(page, server, run)
    finding_locator(page, f["id"]).wait_for()
    finding_locator(page, f["id"]).locator('[data-testid="advisor-link"]').nth(index).click()
    canvas = page.get_by_test_id("trace-canvas")
    canvas.wait_for()
    page.wait_for_function(
        "() => Number(document.querySelector('[data-testid=trace-canvas]').dataset.painted) > 0",
        timeout=60000)
    st = hash_state(page)
    worker = lk["params"].get("worker") or f["worker"]
    assert st["worker"] == worker
    prof = {"run": run, "worker": worker, "span": st.get("span", "")}
    tracks = server.api("trace/tracks", **prof)
    a, b = (float(x) for x in canvas.get_attribute("data-window").split(","))
    full = tracks["end_us"] - tracks["start_us"]
    s0 = lk["params"]["start_us"] - tracks["start_us"]
    s1 = lk["params"]["end_us"] - tracks["start_us"]
    assert a <= max(s0, 0) + 1 and b >= min(s1, full) - 1  # the evidence is in view ...
    assert b - a <= (s1 - s0) * 1.2 + 2  # ... and fills it


def test_overview_shows_the_top_findings_and_opens_the_advisor(page, server):
    run = planted_run(server)
    info = server.api("run", run=run)
    # The worker with the most findings, so the card has something to show.
    per_worker = {}
    for w in info["workers"]:
        per_worker[w["name"]] = advisor(server, run, worker=w["name"], span=w["spans"][0])
    worker = max(per_worker, key=lambda w: len(per_worker[w]["findings"]))
    data = per_worker[worker]
    span = next(w["spans"][0] for w in info["workers"] if w["name"] == worker)
    page.goto(server.page_url(run=run, worker=worker, span=span, view="overview"))
    card = page.locator('[data-testid="overview-findings"]')
    card.wait_for()
    ranked = sorted(enumerate(data["findings"]), key=lambda ix: (
        -ix[1]["impact_us"] if isinstance(ix[1]["impact_us"], (int, float)) else math.inf,
        SEVERITIES.index(ix[1]["severity"]) if ix[1]["severity"] in SEVERITIES else len(SEVERITIES),
        ix[0]))
    want = [f["id"] for _, f in ranked[:OVERVIEW_TOP]]
    got = poll(lambda: page.evaluate("""() => [...document.querySelectorAll('[data-testid="overview-finding"]')]
        .map((e) => e.dataset.id)""") or None)
    if want:
        assert got == want
    page.locator('[data-testid="overview-advisor-link"]').click()
    page.locator('[data-testid="view-advisor"]').wait_for()
    st = hash_state(page)
    assert (st["view"], st["worker"], st.get("advisor.scope")) == ("advisor", worker, "profile")
    assert page.locator('[data-testid="advisor-scope-profile"]').get_attribute("aria-checked") == "true"
    poll(lambda: len(shown_findings(page)) == len(data["findings"]))
    assert sorted(f["id"] for f in shown_findings(page)) == sorted(f["id"] for f in data["findings"])


def test_advisor_in_dark_theme(dark_page, server):
    page = dark_page
    run = planted_run(server)
    advisor(server, run)
    open_advisor(page, server, run)
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    card = page.locator('[data-testid="advisor-finding"]').first
    card.wait_for()
    bg = page.evaluate("getComputedStyle(document.querySelector('.card')).backgroundColor")
    assert bg != "rgb(255, 255, 255)"
    screenshot(page, "advisor_dark")
    copy_screenshot_to_docs("advisor_dark")
