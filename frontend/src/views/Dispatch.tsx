// The host dispatch path of one profile (GET /dispatch): how each framework op reaches the
// device (enqueue → task queue → CANN / CUDA launch → device task), per step whether the device
// waited for the host, and the worst task-queue gaps, each a link that opens the timeline there.
// A view of its own rather than a section of the Trace view: it is a table-and-chart analysis
// with its own route and availability, the Advisor links to it, and the timeline stays a canvas.
import { useMemo } from 'react';
import { csvUrl, getJson, isLoadingAnswer, profileParams, tableParams, type TablePage, type TableQuery } from '../api';
import type { ViewProps } from './types';
import { Chart } from '../components/Chart';
import { DataTable, type Column } from '../components/DataTable';
import { Figure } from '../components/Figure';
import { ErrorBox, Loading, Notice } from '../components/States';
import { useAsync } from '../hooks';
import { formatCount, formatDuration } from '../format';
import { traceHash, traceLinkProps } from '../timeline/link';
import { dispatchStepsOption, gapWindow, pathsText, pctText, verdict, type DispatchOp, type DispatchResponse } from '../dispatch';
import { tableState, tableStatePatch } from './tableState';

const NS = 'dispatch.ops';

export function DispatchView({ profile, filters, setFilters }: ViewProps) {
  const pk = [profile.run, profile.worker, profile.span];
  const doc = useAsync(
    (signal) => getJson<DispatchResponse>('dispatch', profileParams(profile, { limit: 1 }), signal),
    pk,
  );
  const chart = useMemo(() => (doc.data?.steps?.length ? dispatchStepsOption(doc.data.steps) : null), [doc.data]);
  const ts = tableState(filters, NS);
  if (!ts.sort) ts.sort = '-queue_wait_us';

  const columns: Column<DispatchOp>[] = [
    { key: 'name', label: 'Operator' },
    { key: 'calls', label: 'Calls', kind: 'count', width: 'minmax(64px, 0.6fr)' },
    { key: 'enqueue_us', label: 'Enqueue', kind: 'duration', title: 'Mean Enqueue time on the main thread' },
    { key: 'queue_wait_us', label: 'Queue wait', kind: 'duration', title: 'Mean Dequeue start − Enqueue end' },
    { key: 'queue_wait_max_us', label: 'Max wait', kind: 'duration' },
    { key: 'launch_us', label: 'Launch', kind: 'duration', title: 'Mean CANN / CUDA launch time per call' },
    { key: 'launch_delay_us', label: 'Launch delay', kind: 'duration', title: 'Mean device task start − launch start' },
    { key: 'compile_us', label: 'Compile', kind: 'duration', title: 'Total time of aclop compile calls' },
    { key: 'path', label: 'Path', width: 'minmax(70px, 0.6fr)' },
  ];

  const load = async (q: TableQuery, signal: AbortSignal): Promise<TablePage<DispatchOp>> => {
    const d = await getJson<DispatchResponse>('dispatch', profileParams(profile, tableParams(q)), signal);
    if (isLoadingAnswer(d)) return d as unknown as TablePage<DispatchOp>;
    return { total_rows: d.total_rows, rows: d.ops };
  };

  if (doc.error) return <div className="view" data-testid="view-dispatch"><ErrorBox message={doc.error} /></div>;
  if (!doc.data) {
    return (
      <div className="view" data-testid="view-dispatch">
        <Loading what="the dispatch path (read from the timeline)" progress={doc.progress} />
      </div>
    );
  }
  const d = doc.data;
  const s = d.summary;
  const v = verdict(s);
  return (
    <div className="view" data-testid="view-dispatch">
      <section className="figures" aria-label="Key figures">
        <Figure label="Verdict" value={v} testId="fig-dispatch-verdict" raw={v} />
        <Figure label="Device idle waiting for a launch" value={pctText(s.dispatch_bound_step_pct) + ' of the steps'}
          testId="fig-dispatch-bound" raw={s.dispatch_bound_step_pct ?? ''} />
        <Figure label={`Dequeue gaps > ${formatDuration(s.gap_threshold_us)}`}
          value={`${formatCount(s.dequeue_gaps_over_1ms)} · ${formatDuration(s.dequeue_gap_total_us)}`}
          testId="fig-dispatch-gaps" raw={s.dequeue_gaps_over_1ms} />
        <Figure label="Launch delay p50 / p95"
          value={`${formatDuration(s.launch_delay_p50_us)} / ${formatDuration(s.launch_delay_p95_us)}`}
          testId="fig-dispatch-delay" raw={s.launch_delay_p95_us ?? ''} />
        <Figure label="Op calls (path)" value={`${formatCount(s.calls)}${pathsText(s.paths) ? ` (${pathsText(s.paths)})` : ''}`}
          testId="fig-dispatch-calls" raw={s.calls} />
      </section>
      {s.calls === 0 && s.launches === 0 ? (
        <Notice>No dispatch path in this trace: no task-queue events, CANN launches or CUDA kernel launches linked to device tasks.</Notice>
      ) : null}
      <div className="grid-2">
        <section className="card wide">
          <h2>Per step: dequeue gaps, device idle, launch delay</h2>
          {chart ? <Chart option={chart} label="Dispatch per step" testId="chart-dispatch-steps" height={320} /> : <Notice>No steps.</Notice>}
        </section>
        <section className="card">
          <h2>Worst dequeue gaps</h2>
          {d.worst_gaps.length === 0 ? (
            <Notice>No task-queue gap over {formatDuration(s.gap_threshold_us)}.</Notice>
          ) : (
            <ol className="dispatch-gaps" data-testid="dispatch-gaps">
              {d.worst_gaps.map((g, i) => {
                const w = gapWindow(g);
                return (
                  <li key={i}>
                    <a className="small" data-testid="dispatch-gap-link" data-start={String(g.start_us)} data-end={String(g.end_us)}
                      title="Open the timeline at this gap" {...traceLinkProps(traceHash(profile, w))}>
                      {formatDuration(g.gap_us)}
                    </a>{' '}
                    {g.step !== null ? `step ${g.step}: ` : ''}after <code>{g.before}</code>, before <code>{g.after}</code>
                  </li>
                );
              })}
            </ol>
          )}
        </section>
      </div>
      <section className="card">
        <h2>Operators</h2>
        <DataTable<DispatchOp>
          label="Dispatch by operator"
          testId="table-dispatch"
          columns={columns}
          deps={pk}
          load={load}
          state={ts}
          onStateChange={(st) => setFilters(tableStatePatch(NS, st))}
          csvHref={(q) => csvUrl('dispatch', profileParams(profile, { sort: q.sort, search: q.search }))}
          csvName="dispatch_ops.csv"
          onRowClick={(r) => { if (r.name) window.location.hash = traceHash(profile, { q: r.name }); }}
          searchPlaceholder="Search operator…"
        />
      </section>
    </div>
  );
}
