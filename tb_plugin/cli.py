"""`npu-profiler`: the advisor and a summary on the command line, without TensorBoard.

    npu-profiler advise LOGDIR [--run R] [--format text|json|markdown] [--fail-on high|medium]
    npu-profiler summary LOGDIR [--run R] [--format text|json]
    npu-profiler thresholds [--format text|json]
    npu-profiler cache build LOGDIR [--scheduler ADDR] [--progress]
    npu-profiler cache info [LOGDIR] [--format text|json]
    npu-profiler cache clear [--all-versions]

Uses the plugin's own discovery, readers, cache (the same cache directory as TensorBoard,
`$NPU_PROFILER_CACHE_DIR`) and advisor, so the numbers are the API's. While profiles load, a
progress line is drawn on stderr (when stderr is a terminal, or with --progress).
`cache build` reads every profile of a logdir into the cache ahead of time (e.g. as a batch
job next to the training cluster; `--scheduler` runs the parses on a Dask cluster), so a
TensorBoard started on the same cache opens them at once. `$NPU_PROFILER_CACHE_DIR` may be
an fsspec URL (a shared cache, cache_store.py): `build` publishes there and says how many
entries the URL has; `info` and `clear` are about the URL and this machine's mirror of it.
`--fail-on high` exits with status 1 when a finding of that severity (or higher) exists,
for CI; status 2 is a usage or input error.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from . import cache_maintenance, storage
from .advisor import runs as advisor_runs
from .advisor import thresholds as advisor_thresholds
from .analysis import overview
from . import discovery
from .cache import ProfileCache
from .loading import Loader
from .loading.scan import span_states

SEVERITY_RANK = {"high": 0, "medium": 1, "low": 2, "info": 3}


class Progress:
    """A one-line text progress bar on stderr (no dependency)."""

    def __init__(self, enabled: bool, stream=sys.stderr):
        self.enabled = enabled
        self.stream = stream
        self.shown = False

    def update(self, label: str, fraction: float) -> None:
        if not self.enabled:
            return
        width = 30
        filled = int(round(max(0.0, min(1.0, fraction)) * width))
        self.stream.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] "
                          f"{fraction * 100:5.1f}%")
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def _load(logdir: str, run_names: list[str] | None, progress: Progress,
          timeout: float = 24 * 3600, scheduler: str | None = None) -> Loader:
    """Discover and read every span (views and timeline), reporting progress."""
    loader = Loader(logdir, scheduler=scheduler)
    for note in loader.notes():  # e.g. the Dask scheduler could not be used
        print(f"npu-profiler: {note}", file=sys.stderr)
    loader.scan()
    runs = [r.name for r in loader.runs()]
    wanted = run_names or runs
    started = time.time()
    while True:
        states = [st for r in wanted for st in loader.span_states(r)]
        total = max(len(states), 1)
        views = sum(st.state in ("ready", "error") for st in states)
        traces = sum(st.all_done for st in states)
        fraction = (views + traces) / (2 * total)
        if views == len(states) and traces == len(states):
            progress.update(f"reading {len(states)} profiles", 1.0)
            break
        if time.time() - started > 0.5:
            progress.update(f"reading {len(states)} profiles", fraction)
        if time.time() - started > timeout:
            break
        time.sleep(0.2)
    progress.done()
    return loader


def _fmt_us(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v / 1000:,.2f} ms" if abs(v) >= 1000 else f"{v:,.1f} µs"


def _text(results: list[dict]) -> str:
    lines = []
    for res in results:
        lines.append(f"Run {res['run']}: {len(res['findings'])} findings over "
                     f"{res['profiles']} profiles")
        for f in res["findings"]:
            where = " ".join(x for x in (f.get("worker"), f.get("span")) if x)
            impact = (f" saves ~{_fmt_us(f['impact_us'])}/step"
                      + (f" ({f['impact_pct']:.1f}%)" if f.get("impact_pct") is not None else "")
                      if f.get("impact_us") is not None else "")
            lines.append(f"  [{f['severity'].upper()}] {f['rule']}: {f['title']}"
                         f"{' @ ' + where if where else ''}{impact}")
            lines.append(f"      {f['message']}")
            lines.append(f"      advice: {f['advice']}")
        for st in res["rules"]:
            if not st["applies"]:
                lines.append(f"  (rule {st['rule']} not applied: {st['why_not']})")
        for fl in res.get("failed") or []:
            lines.append(f"  (profile {fl['worker']} {fl['span']} could not be read: {fl['error']})")
        lines.append("")
    return "\n".join(lines)


def _cell(v) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def _markdown(results: list[dict]) -> str:
    out = []
    for res in results:
        out.append(f"## Run `{_cell(res['run'])}`\n")
        if not res["findings"]:
            out.append("No findings.\n")
            continue
        out.append("| severity | rule | where | impact / step | finding |")
        out.append("|---|---|---|---|---|")
        for f in res["findings"]:
            where = " ".join(x for x in (f.get("worker"), f.get("span")) if x)
            out.append(f"| {f['severity']} | {f['rule']} | {_cell(where)} | "
                       f"{_fmt_us(f.get('impact_us'))} | {_cell(f['message'])} |")
        out.append("")
        for f in res["findings"]:
            out.append(f"- **{_cell(f['title'])}** ({f['rule']}): {_cell(f['advice'])}")
        out.append("")
    return "\n".join(out)


def _select_runs(loader: Loader, run: str | None):
    runs = loader.runs()
    if run is not None:
        runs = [r for r in runs if r.name == run]
        if not runs:
            names = ", ".join(r.name for r in loader.runs()) or "none"
            raise SystemExit(f"npu-profiler: unknown run {run!r} (runs: {names})")
    return runs


def cmd_advise(args) -> int:
    try:
        thresholds = advisor_thresholds.load()
    except ValueError as exc:
        print(f"npu-profiler: {exc}", file=sys.stderr)
        return 2
    loader = _load(args.logdir, [args.run] if args.run else None, _progress(args))
    try:
        results = [advisor_runs.run_result(loader, r, thresholds)
                   for r in _select_runs(loader, args.run)]
    finally:
        loader.stop(terminate_readers=True)
    if args.format == "json":
        print(json.dumps({"runs": results}, indent=2, ensure_ascii=False))
    elif args.format == "markdown":
        print(_markdown(results))
    else:
        print(_text(results))
    if args.fail_on:
        limit = SEVERITY_RANK[args.fail_on]
        if any(SEVERITY_RANK.get(f["severity"], 9) <= limit for r in results for f in r["findings"]):
            return 1
    return 0


def cmd_summary(args) -> int:
    loader = _load(args.logdir, [args.run] if args.run else None, _progress(args))
    out = []
    try:
        for r in _select_runs(loader, args.run):
            workers = []
            for w in r.sorted_workers():
                for s in w.sorted_spans():
                    st = loader.span_state(r.name, w.name, s)
                    prof = loader.profile_for(st) if st is not None else None
                    if prof is None:
                        workers.append({"worker": w.name, "span": s,
                                        "error": st.error if st is not None else "not found"})
                        continue
                    workers.append({"worker": w.name, "span": s, **overview.summary(prof)})
            out.append({"run": r.name, "profiles": workers, "errors": r.errors})
    finally:
        loader.stop(terminate_readers=True)
    if args.format == "json":
        print(json.dumps({"runs": out}, indent=2, ensure_ascii=False, default=str))
        return 0
    for r in out:
        print(f"Run {r['run']}: {len(r['profiles'])} profiles")
        for e in r["errors"]:  # e.g. a remote logdir that cannot be listed
            print(f"  {e['path']}: {e['message']}")
        for p in r["profiles"]:
            if "error" in p:
                print(f"  {p['worker']} {p['span']}: could not be read: {p['error']}")
                continue
            bd = ", ".join(f"{c} {_fmt_us(p['avg_breakdown_us'].get(c))}"
                           + (f" ({p['avg_breakdown_pct'][c]:.1f}%)"
                              if p["avg_breakdown_pct"].get(c) is not None else "")
                           for c in p["categories"])
            print(f"  {p['worker']} {p['span']} ({p['producer']}, {p['device']}"
                  f"{', rank ' + str(p['rank']) if p.get('rank') is not None else ''}): "
                  f"{p['step_count']} steps, step time {_fmt_us(p['avg_step_us'])}")
            if bd:
                print(f"      breakdown: {bd}")
    return 0


def cmd_thresholds(args) -> int:
    try:
        table = advisor_thresholds.load().to_json()
    except ValueError as exc:
        print(f"npu-profiler: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps({"thresholds": table}, indent=2, ensure_ascii=False))
        return 0
    for t in table:
        changed = "" if t["value"] == t["default"] else f" (default {t['default']:g})"
        print(f"{t['name']:28} {t['value']:>10g} {t['unit']:18} {t['doc']}{changed}"
              f" [{t['source']}]")
    return 0


def cmd_cache_build(args) -> int:
    started = time.time()
    loader = _load(args.logdir, None, _progress(args), scheduler=args.scheduler)
    try:
        states = [st for r in loader.runs() for st in loader.span_states(r.name)]
        failed = [st for st in states if st.state == "error" or st.trace_state == "error"]
        print(f"{len(states)} profiles in {len(loader.runs())} runs cached in "
              f"{time.time() - started:.1f} s at {loader.cache.root}")
        for st in failed:
            print(f"  {st.span.run} {st.span.worker} {st.span.span}: could not be read: "
                  f"{st.error or st.trace_error}")
        unpublished = []
        if loader.cache.publishes:  # checked by listing the URL, not by the builders' word
            built = [st for st in states if st not in failed]
            published = loader.cache.has_shared([st.key for st in built])
            unpublished = [st for st in built if st.key not in published]
            print(f"{len(published)} of {len(built)} profiles published to the shared cache "
                  f"{loader.cache.shared.display}")
            for st in unpublished:
                print(f"  {st.span.run} {st.span.worker} {st.span.span}: not published "
                      f"(see the reader's log)")
    finally:
        loader.stop(terminate_readers=True)
    return 1 if failed or unpublished else 0


def _cache_or_error() -> ProfileCache | None:
    """The cache of $NPU_PROFILER_CACHE_DIR; None (after saying why) when it is a URL that
    cannot be read: info and clear are about that URL, a local fallback would mislead."""
    cache = ProfileCache()
    if cache.url is not None and cache.shared is None:
        print(f"npu-profiler: {cache.note}", file=sys.stderr)
        return None
    return cache


def cmd_cache_info(args) -> int:
    cache = _cache_or_error()
    if cache is None:
        return 2
    info = cache_maintenance.stats(cache)
    if args.logdir is not None:
        try:  # a remote logdir is listed into its local mirror first
            source = storage.open_logdir(args.logdir, cache.mirror_root())
            source.sync(discovery.remote_descend)
        except storage.StorageError as exc:
            print(f"npu-profiler: {exc}", file=sys.stderr)
            return 2
        runs, _ = discovery.discover(source.path)
        states, _ = span_states(runs, {})  # the cache keys of the logdir's spans, nothing read
        built = [st for st in states.values() if cache.has(st.key)]
        info["logdir"] = {"path": source.display, "profiles": len(states),
                          "cached": len(built),
                          "cached_with_timeline": sum(
                              bool(cache.load(st.key).meta.trace_ready) for st in built)}
        if cache.shared is not None:
            info["logdir"]["in_shared_cache"] = len(
                cache.has_shared([st.key for st in states.values()]))
    if args.format == "json":
        print(json.dumps(info, indent=2))
        return 0
    print(f"cache {info['root']} (version {info['version']}): {info['entries']} profiles "
          f"({info['entries_with_timeline']} with timeline), {info['bytes'] / 1e6:,.1f} MB")
    if info["derived"]:
        print("  derived: " + ", ".join(f"{k} {v}" for k, v in info["derived"].items()))
    if info["unfinished"]:
        print(f"  {info['unfinished']} unfinished builds (a reader was stopped; rebuilt on use)")
    if info.get("early_traces"):
        print(f"  {info['early_traces']} traces decoded ahead of their timeline stage (taken by"
              " it; `cache clear` removes leftovers)")
    if info["other_versions"]:
        print(f"  stale versions (clear with --all-versions): {', '.join(info['other_versions'])}")
    if "shared" in info:
        d = info["shared"]
        print(f"shared cache {d['url']}: {d['entries']} profiles ({d['entries_with_timeline']}"
              f" with timeline), {d['bytes'] / 1e6:,.1f} MB"
              + (f"; derived: " + ", ".join(f"{k} {v}" for k, v in d["derived"].items())
                 if d["derived"] else ""))
    if cache.note:
        print(f"  {cache.note}")
    if "logdir" in info:
        d = info["logdir"]
        print(f"  {d['path']}: {d['cached']} of {d['profiles']} profiles cached "
              f"({d['cached_with_timeline']} with timeline)"
              + (f", {d['in_shared_cache']} in the shared cache" if "in_shared_cache" in d
                 else ""))
    return 0


def cmd_cache_clear(args) -> int:
    cache = _cache_or_error()
    if cache is None:
        return 2
    removed = cache_maintenance.clear(cache, all_versions=args.all_versions)
    for path in removed:
        print(f"removed {path}")
    if not removed:
        print("nothing to remove")
    return 0


def _progress(args) -> Progress:
    return Progress(args.progress or sys.stderr.isatty())


def run(argv: list[str] | None = None) -> int:
    """Parse the arguments and run the command; its exit status."""
    parser = argparse.ArgumentParser(prog="npu-profiler", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    adv = sub.add_parser("advise", help="tuning findings with evidence and advice")
    adv.add_argument("logdir")
    adv.add_argument("--run", help="only this run")
    adv.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    adv.add_argument("--fail-on", choices=("high", "medium"),
                     help="exit with status 1 when a finding of this severity or higher exists")
    adv.add_argument("--progress", action="store_true", help="draw the progress bar even when "
                     "stderr is not a terminal")
    adv.set_defaults(func=cmd_advise)
    summ = sub.add_parser("summary", help="runs, workers, steps, step time and breakdown")
    summ.add_argument("logdir")
    summ.add_argument("--run", help="only this run")
    summ.add_argument("--format", choices=("text", "json"), default="text")
    summ.add_argument("--progress", action="store_true")
    summ.set_defaults(func=cmd_summary)
    thr = sub.add_parser("thresholds", help=f"the advisor's thresholds (overrides: "
                                            f"${advisor_thresholds.ENV_VAR})")
    thr.add_argument("--format", choices=("text", "json"), default="text")
    thr.set_defaults(func=cmd_thresholds)
    cache = sub.add_parser("cache", help="build, inspect or clear the profile cache "
                                         "($NPU_PROFILER_CACHE_DIR)")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True)
    build = cache_sub.add_parser("build", help="read every profile of LOGDIR into the cache")
    build.add_argument("logdir")
    build.add_argument("--scheduler", help="Dask scheduler address (tcp://host:8786); default "
                       "$NPU_PROFILER_DASK_SCHEDULER, else local reader processes")
    build.add_argument("--progress", action="store_true")
    build.set_defaults(func=cmd_cache_build)
    info = cache_sub.add_parser("info", help="what the cache holds (and how much of LOGDIR)")
    info.add_argument("logdir", nargs="?")
    info.add_argument("--format", choices=("text", "json"), default="text")
    info.set_defaults(func=cmd_cache_info)
    clear = cache_sub.add_parser("clear", help="remove the cache's entries")
    clear.add_argument("--all-versions", action="store_true",
                       help="also remove the entries of other (older) cache versions")
    clear.set_defaults(func=cmd_cache_clear)
    args = parser.parse_args(argv)
    if getattr(args, "logdir", None) is not None and not storage.is_url(args.logdir) \
            and not os.path.isdir(args.logdir):
        print(f"npu-profiler: {args.logdir}: not a directory", file=sys.stderr)
        return 2
    return args.func(args)


def main(argv: list[str] | None = None) -> None:
    """The console entry point: runs the command, flushes its output, and exits at once.

    Exiting at once matters: the reader pool may still be reading spans the command did not
    ask for, and at interpreter exit Python joins a process pool's workers, so the command
    would wait for them (or, in rare shutdown races, hang). The cache entries they were
    writing are written aside and renamed, so a cut-off one is simply built again."""
    try:
        code = run(argv)
    except SystemExit as exc:  # argparse (--help, bad arguments) and "unknown run"
        code = exc.code
        if isinstance(code, str):
            print(code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:  # Ctrl+C: the readers were ended on the way out (run's finally)
        print("\nnpu-profiler: interrupted", file=sys.stderr)
        code = 130  # the shell's code for a command ended by SIGINT
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
