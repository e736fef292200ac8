// Which run / worker / span / view to show: what the URL asks for, resolved against what
// exists, falling back to the first sensible choice.
import type { RunInfo, RunSummary, Worker } from './api';
import type { UrlState } from './state';
import { VIEWS } from './views/registry';

/** The resolved selection; a field is undefined when there is nothing (yet) to select. */
export interface Selection {
  run?: RunSummary;
  /** The run's info, only when it belongs to `run`. */
  info?: RunInfo;
  worker?: Worker;
  span?: string;
  /** The views the navigation lists for the run. */
  views: string[];
  view?: string;
}

/** The run opened when the URL names none: a clean ready run, else any ready run, else the first. */
export function defaultRun(runs: RunSummary[] | undefined): RunSummary | undefined {
  return (
    runs?.find((r) => r.state === 'ready' && r.errors.length === 0) ?? runs?.find((r) => r.state === 'ready') ?? runs?.[0]
  );
}

/** Resolves what the URL asks for against what exists, falling back to the first choice. */
export function resolveSelection(state: UrlState, runs: RunSummary[] | undefined, info: RunInfo | undefined): Selection {
  const run = runs?.find((r) => r.name === state.run) ?? (state.run ? undefined : defaultRun(runs));
  const infoOk = info && run && info.name === run.name ? info : undefined;
  const worker = infoOk?.workers.find((w) => w.name === state.worker) ?? infoOk?.workers[0];
  const span = worker ? (worker.spans.includes(state.span ?? '') ? state.span : worker.spans[0]) : undefined;
  const views = infoOk ? availableViews(infoOk.views) : [];
  const view = views.includes(state.view ?? '') ? state.view : views[0];
  return { run, info: infoOk, worker, span, views, view };
}

/** Views shown in the navigation: the registered ones the run has (or that are always
 * listed), in the registry's order. Ids the registry does not know are ignored. */
export function availableViews(views: string[]): string[] {
  return VIEWS.filter((v) => v.always || views.includes(v.id)).map((v) => v.id);
}
