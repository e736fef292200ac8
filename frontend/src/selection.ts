// Which run / worker / span / view to show: what the URL asks for, resolved against what
// exists, falling back to the first sensible choice.
import type { RunInfo, RunSummary } from './api';
import { VIEW_IDS, type UrlState } from './state';
import { withAdvisorView } from './advisor';

/** The run opened when the URL names none: a clean ready run, else any ready run, else the first. */
export function defaultRun(runs: RunSummary[] | undefined): RunSummary | undefined {
  return (
    runs?.find((r) => r.state === 'ready' && r.errors.length === 0) ?? runs?.find((r) => r.state === 'ready') ?? runs?.[0]
  );
}

/** Resolves what the URL asks for against what exists, falling back to the first choice. */
export function resolveSelection(state: UrlState, runs: RunSummary[] | undefined, info: RunInfo | undefined) {
  const run = runs?.find((r) => r.name === state.run) ?? (state.run ? undefined : defaultRun(runs));
  const infoOk = info && run && info.name === run.name ? info : undefined;
  const worker = infoOk?.workers.find((w) => w.name === state.worker) ?? infoOk?.workers[0];
  const span = worker ? (worker.spans.includes(state.span ?? '') ? state.span : worker.spans[0]) : undefined;
  const views = infoOk ? withAdvisorView(availableViews(infoOk.views)) : [];
  const view = views.includes(state.view ?? '') ? state.view : views[0];
  return { run, info: infoOk, worker, span, views, view };
}

/** Views shown in the navigation: the known ones the run has, in a fixed order; Trace always. */
export function availableViews(views: string[]): string[] {
  return VIEW_IDS.filter((v) => v === 'trace' || views.includes(v));
}

