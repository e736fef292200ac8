"""The advisor: tuning rules turned into findings with evidence, impact and links.

- `thresholds`: every number the rules use, as one documented, overridable table.
- `core`: `Rule`, `Finding`, `NotApplicable` and the per-profile facts rules share.
- `rules/`: one module per rule; `registry.RULES` lists them (adding a rule = one module and
  one line there).
- `engine`: runs the rules over a profile (`advise_profile`) or over a run's ranks
  (`advise_ranks`, the straggler / slow-link rules), merges and sorts by impact.
- `store` / `runs`: computed once per profile and cached next to the profile cache; the
  `/advisor` route and the `npu-profiler` command both call `runs.run_result`.

A finding: {"id", "rule", "severity": high|medium|low|info, "title", "message", "advice",
"impact_us" (estimated time per step a fix saves, or null), "impact_pct" (of the mean step
time), "worker", "span", "rank", "evidence": {numbers}, "links": [{"view", "params"}]}.
"""
