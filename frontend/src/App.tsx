// The shell: resolves the selection (run → worker → span → view) from the URL and the run
// list, and shows the selected view of the registry.
import { useEffect, useMemo, useRef, type ReactElement } from 'react';
import type { ProfileKey } from './api';
import { useRunList } from './runList';
import { deepLink, useUrlState, type StatePatch } from './state';
import { resolveSelection } from './selection';
import { LeftPanel } from './components/LeftPanel';
import { EmptyState, ErrorBox, Loading } from './components/States';
import { COMPARE_VIEW, findView, viewTitle } from './views/registry';
import type { OpenTarget, ViewProps } from './views/types';
import { encodeProfile } from './apiDistributed';

/** The URL-state patch that opens `t`: naming a run or worker resets what lies below it. */
function openPatch(t: OpenTarget): StatePatch {
  if (t.run !== undefined) return { run: t.run, worker: t.worker, span: t.span, view: t.view };
  if (t.worker !== undefined) return { worker: t.worker, span: t.span, view: t.view };
  if (t.span !== undefined) return { span: t.span, view: t.view };
  return { view: t.view };
}

export function App() {
  const [state, setState] = useUrlState();
  const { runs, error: runsError, info, infoError } = useRunList(state.run);
  const sel = resolveSelection(state, runs, info);
  const runSummary = sel.run;

  // Runs seen while the page is open, to tell "removed from the logdir" from "never existed".
  const seenRuns = useRef(new Set<string>());
  for (const r of runs ?? []) seenRuns.current.add(r.name);

  // Complete the URL with the resolved selection so a copied link is exact.
  const wanted: StatePatch = {};
  if (sel.run && state.run !== sel.run.name) wanted.run = sel.run.name;
  if (sel.worker && state.worker !== sel.worker.name) wanted.worker = sel.worker.name;
  if (sel.span !== undefined && state.span !== sel.span) wanted.span = sel.span;
  const comparing = state.view === COMPARE_VIEW.id;
  if (sel.view && state.view !== sel.view && !comparing) wanted.view = sel.view;
  const wantedKey = JSON.stringify(wanted);
  useEffect(() => {
    if (wantedKey !== '{}') setState(JSON.parse(wantedKey) as StatePatch);
  }, [wantedKey, setState]);

  const mainRef = useRef<HTMLElement>(null);
  const setFilters = useMemo(() => (f: Record<string, string | undefined>) => setState({ filters: f }), [setState]);
  const open = useMemo(() => (t: OpenTarget) => setState(openPatch(t), true), [setState]);

  let main: ReactElement;
  if (runsError && !runs) {
    main = <ErrorBox title="Cannot list runs" message={runsError} />;
  } else if (!runs) {
    main = <Loading what="runs" />;
  } else if (runs.length === 0) {
    main = <EmptyState />;
  } else if (comparing) {
    main = <COMPARE_VIEW.component runs={runs} filters={state.filters} setFilters={setFilters} open={open} />;
  } else if (state.run && !sel.run) {
    main = seenRuns.current.has(state.run) ? (
      <ErrorBox
        title="Run removed"
        message={`The run “${state.run}” is no longer in the logdir. Pick another run in the left panel.`}
      />
    ) : (
      <ErrorBox title="Run not found" message={`No run named “${state.run}” under this logdir.`} />
    );
  } else if (!runSummary) {
    main = <Loading what="runs" />;
  } else if (runSummary.state === 'loading' && !sel.info) {
    main = <Loading what={`run “${runSummary.name}”`} progress={runSummary.progress} />;
  } else if (runSummary.state === 'error') {
    main = (
      <ErrorBox
        title={`Run “${runSummary.name}” could not be read`}
        message={runSummary.errors.length ? `${runSummary.errors.length} file(s) failed; see the list in the left panel.` : 'Unknown error.'}
      />
    );
  } else if (!sel.info && infoError) {
    main = <ErrorBox title="Cannot load run" message={infoError} />;
  } else if (!sel.info) {
    main = <Loading what={`run “${runSummary.name}”`} />;
  } else if (!sel.worker || sel.span === undefined) {
    main = <ErrorBox title="No profile" message="This run has no worker with profiler data." />;
  } else {
    const profile: ProfileKey = { run: sel.run!.name, worker: sel.worker.name, span: sel.span };
    const props: ViewProps = { profile, worker: sel.worker, info: sel.info, filters: state.filters, setFilters, open };
    const entry = findView(sel.view) ?? findView('overview')!;
    const key = entry.scope === 'run' ? profile.run : `${profile.run}\u0000${profile.worker}\u0000${profile.span}`;
    main = <entry.component key={key} {...props} />;
  }

  const shownView = comparing ? COMPARE_VIEW.id : sel.view;
  const title = shownView ? viewTitle(shownView) : 'NPU Profiler';
  const current = sel.run && sel.worker && sel.span !== undefined ? { run: sel.run.name, worker: sel.worker.name, span: sel.span } : undefined;
  return (
    <div className="app">
      <LeftPanel
        runs={runs}
        runsError={runsError}
        selectedRun={sel.run}
        info={sel.info}
        infoLoading={!sel.info}
        worker={sel.worker}
        span={sel.span}
        views={sel.views}
        view={shownView}
        canCompare={!!current}
        onCompare={(side) => {
          if (!current) return;
          setState({ view: COMPARE_VIEW.id, filters: { [`cmp.${side}`]: encodeProfile(current) } }, true);
        }}
        onCompareView={() => setState({ view: COMPARE_VIEW.id }, true)}
        link={deepLink(state)}
        onRun={(run) => setState({ run, worker: undefined, span: undefined }, true)}
        onWorker={(worker) => setState({ worker, span: undefined }, true)}
        onSpan={(span) => setState({ span }, true)}
        onView={(view) => {
          setState({ view }, true);
          mainRef.current?.scrollTo({ top: 0 });
        }}
      />
      <main className="main" ref={mainRef} data-testid="main" data-view={shownView ?? ''}>
        <header className="main-header">
          <h1>{title}</h1>
          {sel.run && sel.worker && !comparing && (
            <span className="crumbs">
              {sel.run.name} · {sel.worker.name}
              {sel.worker.spans.length > 1 && sel.span ? ` · ${sel.span}` : ''}
            </span>
          )}
        </header>
        {main}
      </main>
    </div>
  );
}
