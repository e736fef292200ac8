import { useMemo } from 'react';
import { api, type Step } from '../api';
import type { ViewProps } from './types';
import { averageBreakdown, pieOption, stepBreakdownOption } from '../charts';
import { Chart } from '../components/Chart';
import { Figure } from '../components/Figure';
import { DataTable, localPage, toCsv, type Column } from '../components/DataTable';
import { ErrorBox, Loading, Notice } from '../components/States';
import { formatCount, formatDuration, humanize } from '../format';
import { useAsync } from '../hooks';
import { tableState, tableStatePatch } from './tableState';
import { TopFindings } from './Advisor';
import { StepPhasesSection } from './StepPhases';

type StepRow = Record<string, number | string>;

export function OverviewView({ profile, worker, filters, setFilters }: ViewProps) {
  const res = useAsync((signal) => api.steps(profile, signal), [profile.run, profile.worker, profile.span]);
  const data = res.data;

  const rows: StepRow[] = useMemo(
    () =>
      (data?.steps ?? []).map((s: Step) => {
        const r: StepRow = { step: s.step, total_us: s.total_us };
        for (const c of data!.categories) r[c] = s.breakdown[c] ?? 0;
        return r;
      }),
    [data],
  );
  const barOpt = useMemo(() => (data ? stepBreakdownOption(data) : null), [data]);
  const pieOpt = useMemo(() => (data ? pieOption(averageBreakdown(data), { humanizeNames: true, legend: 'bottom' }) : null), [data]);

  if (res.error) return <ErrorBox message={res.error} />;
  if (!data) return <Loading what="steps" progress={res.progress} />;

  const n = data.steps.length;
  const avg = n ? data.steps.reduce((a, s) => a + s.total_us, 0) / n : null;
  const device = [worker.device?.toUpperCase(), worker.producer, worker.rank !== null && worker.rank !== undefined ? `rank ${worker.rank}` : '']
    .filter(Boolean)
    .join(' · ');

  const columns: Column<StepRow>[] = [
    { key: 'step', label: 'Step', kind: 'number', width: 'minmax(70px, 0.6fr)' },
    { key: 'total_us', label: 'Step time', kind: 'duration' },
    ...data.categories.map((c) => ({ key: c, label: humanize(c), kind: 'duration' as const })),
  ];
  const ts = tableState(filters, 'overview');

  return (
    <div className="view" data-testid="view-overview">
      <section className="figures" aria-label="Key figures">
        <Figure label="Steps" value={formatCount(n)} testId="fig-steps" />
        <Figure label="Average step time" value={formatDuration(avg)} testId="fig-avg-step" raw={avg ?? ''} />
        <Figure label="Device" value={device || '—'} testId="fig-device" />
      </section>
      <TopFindings profile={profile} />
      {n === 0 ? (
        <Notice>This profile has no step information (no ProfilerStep markers or step trace).</Notice>
      ) : (
        <div className="grid-2">
          <section className="card wide">
            <h2>Step time breakdown</h2>
            {worker.producer === 'kineto' && (
              <p className="muted" data-testid="overview-definitions">
                torch-tb-profiler 0.4.3’s priority rule (kernel › memcpy › memset › communication › runtime ›
                DataLoader › CPU exec › other). Unlike it, PyTorch 2.x `cuda_runtime` launches count as
                runtime and user-annotation DataLoader ranges as DataLoader (docs/exactness.md).
              </p>
            )}
            <Chart option={barOpt!} label="Step time breakdown per step" testId="chart-steps" height={340} />
          </section>
          <section className="card">
            <h2>Average step breakdown</h2>
            <Chart option={pieOpt!} label="Average step breakdown" testId="chart-breakdown" height={340} />
          </section>
        </div>
      )}
      <StepPhasesSection profile={profile} />
      <section className="card">
        <h2>Steps</h2>
        <DataTable<StepRow>
          label="Steps"
          testId="table-steps"
          columns={columns}
          deps={[rows]}
          load={async (q) => localPage(rows, q, 'step')}
          state={ts}
          onStateChange={(s) => setFilters(tableStatePatch('overview', s))}
          csvText={(q) => toCsv(localPage(rows, { sort: q.sort, search: q.search }, 'step').rows, columns.map((c) => c.key))}
          csvName="steps.csv"
          searchPlaceholder="Search step…"
        />
      </section>
    </div>
  );
}
