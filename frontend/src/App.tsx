import { useEffect, useMemo, useRef, useState, type ReactElement } from 'react';
import { api, type ProfileKey, type RunSummary, type Worker } from './api';
import { useAsync, POLL_MS } from './hooks';
import { deepLink, useUrlState, VIEW_TITLES, type StatePatch } from './state';
import { defaultRun, resolveSelection } from './selection';
import { LeftPanel } from './components/LeftPanel';
import { EmptyState, ErrorBox, Loading } from './components/States';
import { OverviewView } from './views/Overview';
import { OperatorsView } from './views/Operators';
import { KernelsView } from './views/Kernels';
import { MemoryView } from './views/Memory';
import { TraceView } from './views/Trace';
import { DistributedView } from './views/DistributedView';
import { CompareView } from './views/CompareView';
import { AdvisorView } from './views/Advisor';
import { encodeProfile } from './apiDistributed';

export interface ViewProps {
  profile: ProfileKey;
  worker: Worker;
  filters: Record<string, string>;
  setFilters: (f: Record<string, string | undefined>) => void;
}

/** Polls `runs` while any run is still loading; errors are shown, and retried slowly. */
function useRuns(): { runs?: RunSummary[]; error?: string } {
  const [runs, setRuns] = useState<RunSummary[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ctrl = new AbortController();
    const tick = () => {
      api.runs(ctrl.signal).then(
        (r) => {
          if (stopped) return;
          setRuns(r.runs);
          setError(undefined);
          if (r.runs.some((x) => x.state === 'loading')) timer = setTimeout(tick, POLL_MS);
        },
        (e: Error) => {
          if (stopped || e.name === 'AbortError') return;
          setError(e.message);
          timer = setTimeout(tick, POLL_MS * 5);
        },
      );
    };
    tick();
    return () => {
      stopped = true;
      ctrl.abort();
      if (timer) clearTimeout(timer);
    };
  }, []);
  return { runs, error };
}

export function App() {
  const [state, setState] = useUrlState();
  const { runs, error: runsError } = useRuns();
  const runName = state.run ?? defaultRun(runs)?.name;
  const runSummary = runs?.find((r) => r.name === runName);
  const runReady = runSummary?.state === 'ready';
  const infoRes = useAsync(runReady && runName ? (signal) => api.run(runName, signal) : null, [runName, runReady]);
  const sel = resolveSelection(state, runs, infoRes.data);

  // Complete the URL with the resolved selection so a copied link is exact.
  const wanted: StatePatch = {};
  if (sel.run && state.run !== sel.run.name) wanted.run = sel.run.name;
  if (sel.worker && state.worker !== sel.worker.name) wanted.worker = sel.worker.name;
  if (sel.span !== undefined && state.span !== sel.span) wanted.span = sel.span;
  const comparing = state.view === 'compare';
  if (sel.view && state.view !== sel.view && !comparing) wanted.view = sel.view;
  const wantedKey = JSON.stringify(wanted);
  useEffect(() => {
    if (wantedKey !== '{}') setState(JSON.parse(wantedKey) as StatePatch);
  }, [wantedKey, setState]);

  const mainRef = useRef<HTMLElement>(null);
  const setFilters = useMemo(() => (f: Record<string, string | undefined>) => setState({ filters: f }), [setState]);

  let main: ReactElement;
  if (runsError && !runs) {
    main = <ErrorBox title="Cannot list runs" message={runsError} />;
  } else if (!runs) {
    main = <Loading what="runs" />;
  } else if (runs.length === 0) {
    main = <EmptyState />;
  } else if (comparing) {
    main = (
      <CompareView
        runs={runs}
        filters={state.filters}
        setFilters={setFilters}
        onOpen={(p, view) => setState({ run: p.run, worker: p.worker, span: p.span, view }, true)}
      />
    );
  } else if (state.run && !sel.run) {
    main = <ErrorBox title="Run not found" message={`No run named “${state.run}” under this logdir.`} />;
  } else if (!runSummary) {
    main = <Loading what="runs" />;
  } else if (runSummary.state === 'loading') {
    main = <Loading what={`run “${runSummary.name}”`} progress={runSummary.progress} />;
  } else if (runSummary.state === 'error') {
    main = (
      <ErrorBox
        title={`Run “${runSummary.name}” could not be read`}
        message={runSummary.errors.length ? `${runSummary.errors.length} file(s) failed; see the list in the left panel.` : 'Unknown error.'}
      />
    );
  } else if (infoRes.error) {
    main = <ErrorBox title="Cannot load run" message={infoRes.error} />;
  } else if (!sel.info) {
    main = <Loading what={`run “${runSummary.name}”`} progress={infoRes.progress} />;
  } else if (!sel.worker || sel.span === undefined) {
    main = <ErrorBox title="No profile" message="This run has no worker with profiler data." />;
  } else {
    const profile: ProfileKey = { run: sel.run!.name, worker: sel.worker.name, span: sel.span };
    const props: ViewProps = { profile, worker: sel.worker, filters: state.filters, setFilters };
    const key = `${profile.run}\u0000${profile.worker}\u0000${profile.span}`;
    switch (sel.view) {
      case 'operators':
        main = <OperatorsView key={key} {...props} />;
        break;
      case 'kernels':
        main = <KernelsView key={key} {...props} />;
        break;
      case 'memory':
        main = <MemoryView key={key} {...props} />;
        break;
      case 'trace':
        main = <TraceView key={key} {...props} />;
        break;
      case 'advisor':
        main = <AdvisorView key={key} {...props} />;
        break;
      case 'distributed':
        main = (
          <DistributedView
            key={profile.run}
            run={profile.run}
            info={sel.info}
            filters={state.filters}
            setFilters={setFilters}
            onOpen={(worker, view) => setState({ worker, span: undefined, view }, true)}
          />
        );
        break;
      default:
        main = <OverviewView key={key} {...props} />;
    }
  }

  const shownView = comparing ? 'compare' : sel.view;
  const title = shownView ? VIEW_TITLES[shownView] ?? shownView : 'NPU Profiler';
  const current = sel.run && sel.worker && sel.span !== undefined ? { run: sel.run.name, worker: sel.worker.name, span: sel.span } : undefined;
  return (
    <div className="app">
      <LeftPanel
        runs={runs}
        runsError={runsError}
        selectedRun={sel.run}
        info={sel.info}
        infoLoading={infoRes.loading}
        worker={sel.worker}
        span={sel.span}
        views={sel.views}
        view={shownView}
        canCompare={!!current}
        onCompare={(side) => {
          if (!current) return;
          setState({ view: 'compare', filters: { [`cmp.${side}`]: encodeProfile(current) } }, true);
        }}
        onCompareView={() => setState({ view: 'compare' }, true)}
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
