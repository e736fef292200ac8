// Overview section: graph-mode step phases (iteration interval, forward + backward, tail,
// gradient reduction) stacked per step, and their averages and shares as MindInsight's
// step-trace summary shows them. Rendered only when the profile has phases.
import { useMemo } from 'react';
import { getJson, profileParams, type ProfileKey } from '../api';
import { Chart } from '../components/Chart';
import { formatDuration } from '../format';
import { useAsync } from '../hooks';
import { averageRows, phasesOption, type SummaryWithPhases } from './stepPhases';

export function StepPhasesSection({ profile }: { profile: ProfileKey }) {
  const res = useAsync(
    (signal) => getJson<SummaryWithPhases>('summary', profileParams(profile), signal),
    [profile.run, profile.worker, profile.span],
  );
  const ph = res.data?.phases ?? null;
  const option = useMemo(() => (ph && ph.steps.length ? phasesOption(ph) : null), [ph]);
  if (!ph) return null;
  const rows = averageRows(ph);
  const flops = res.data?.flops;
  return (
    <section className="card" data-testid="section-phases" aria-label="Step phases">
      <h2>Step phases</h2>
      {option && <Chart option={option} label="Step phases per step" testId="chart-phases" height={320} />}
      <p className="muted">
        {ph.average_source === 'producer' ? 'Averages as the profiler wrote them' : 'Averages over the steps'} ·{' '}
        {ph.steps_total} steps
        {ph.steps.length < ph.steps_total ? ` (first ${ph.steps.length} shown)` : ''}
      </p>
      <table className="plain" data-testid="table-phases">
        <thead>
          <tr>
            <th>Phase</th>
            <th>Average</th>
            <th>Share of step</th>
            <th>Starts after</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.phase} data-phase={r.phase}>
              <td>{r.phase}</td>
              <td data-value={r.avg_us}>{formatDuration(r.avg_us)}</td>
              <td data-value={r.share_pct ?? ''}>{r.share_pct === null ? '' : `${r.share_pct}%`}</td>
              <td>{r.offset_us === null ? '' : formatDuration(r.offset_us)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {flops && (
        <p data-testid="phases-flops">
          FLOPs: {String(flops.FLOPs ?? '—')} · FLOPS: {String(flops.FLOPS ?? '—')} · utilization:{' '}
          {String(flops.FLOPS_Utilization ?? '—')}
        </p>
      )}
    </section>
  );
}
