// Distributed view: every rank of a run side by side. Findings (straggler, slow links) first,
// then the per-rank breakdown (all ranks up to 64, else the distribution and the outliers),
// the rank x step heatmap, communication per op / per rank and the communication matrix.
import { useMemo } from 'react';
import { distApi, type Finding, type RankStats } from '../apiDistributed';
import { histogramOption, matrixOption, rankBreakdownOption, stepHeatmapOption } from '../chartsDistributed';
import { Chart } from '../components/Chart';
import { DataTable, type Column } from '../components/DataTable';
import { ErrorBox, Loading, Notice } from '../components/States';
import { formatCount, formatDuration } from '../format';
import { useAsync } from '../hooks';
import { tableState, tableStatePatch } from './tableState';
import { Figure } from '../components/Figure';
import type { ViewProps } from './types';

export const ALL_RANKS_MAX = 64;
const OUTLIERS = 32;

type Row = Record<string, unknown>;

export function DistributedView({ profile, info, filters, setFilters, open }: ViewProps) {
  const run = profile.run;
  const spanIndex = Math.max(0, Number(filters['dist.span'] ?? '0') || 0);
  const commGroup = filters['dist.comm'] === 'rank' ? 'rank' : 'op';
  const spanCount = Math.max(1, ...info.workers.map((w) => w.spans.length));

  // First page: every rank up to ALL_RANKS_MAX, in rank order; bigger runs get the slowest.
  const res = useAsync(
    (signal) => distApi.distributed(run, spanIndex, 'rank', ALL_RANKS_MAX, signal),
    [run, spanIndex],
  );
  const d = res.data;
  const big = d ? d.total_ranks > ALL_RANKS_MAX : false;
  const slowRanks = useMemo(() => (d ? d.findings.filter((f) => f.kind === 'straggler').map((f) => f.rank as number) : []), [d]);
  const barStats: RankStats[] = useMemo(() => {
    if (!d) return [];
    if (!big) return d.ranks.map((r) => r.stats);
    return d.slowest.slice(0, OUTLIERS);
  }, [d, big]);
  const barOpt = useMemo(() => (barStats.length ? rankBreakdownOption(barStats, d!.categories, slowRanks) : null), [barStats, d, slowRanks]);
  const heatOpt = useMemo(() => (d && d.steps.length ? stepHeatmapOption(d.heatmap) : null), [d]);
  const histOpt = useMemo(() => (d && big ? histogramOption(d.distribution.histogram) : null), [d, big]);
  const matOpt = useMemo(
    () => (d?.matrix && d.rank_count <= ALL_RANKS_MAX ? matrixOption(d.matrix.links, d.matrix.rank_count) : null),
    [d],
  );

  if (res.error) return <ErrorBox title="Cannot load the distributed view" message={res.error} />;
  if (!d) return <Loading what="ranks" progress={res.progress} />;

  const workerOfRank = (rank: number | null) => d.ranks.find((r) => r.rank === rank)?.worker ?? info.workers.find((w) => w.rank === rank)?.name;
  const q = d.distribution.avg_step_us;

  const commColumns: Column<Row>[] = [
    ...(commGroup === 'rank' ? [{ key: 'rank', label: 'Rank', kind: 'number' as const, width: 'minmax(60px, 0.5fr)' }] : []),
    { key: 'name', label: 'Operation' },
    { key: 'group', label: 'Group', width: 'minmax(140px, 2fr)' },
    { key: 'calls', label: 'Calls', kind: 'count', width: 'minmax(70px, 0.6fr)' },
    { key: 'total_us', label: 'Total', kind: 'duration' },
    { key: 'avg_us', label: 'Avg', kind: 'duration' },
    { key: 'transit_us', label: 'Transit', kind: 'duration' },
    { key: 'wait_us', label: 'Wait', kind: 'duration', title: 'Synchronization wait (waiting for other ranks)' },
    { key: 'wait_ratio', label: 'Wait ratio', kind: 'number' },
    { key: 'size_mb', label: 'Size', kind: 'sizeMB' },
    { key: 'bandwidth_gbps', label: 'GB/s', kind: 'number' },
  ];
  const linkColumns: Column<Row>[] = [
    { key: 'link', label: 'Link (src-dst)', width: 'minmax(100px, 1fr)' },
    { key: 'transport', label: 'Transport', width: 'minmax(90px, 1fr)' },
    { key: 'size_mb', label: 'Size', kind: 'sizeMB' },
    { key: 'time_us', label: 'Time', kind: 'duration' },
    { key: 'bandwidth_gbps', label: 'Bandwidth (GB/s)', kind: 'number' },
  ];
  const cts = tableState(filters, `dist.comm.${commGroup}`);
  if (!cts.sort) cts.sort = '-total_us';
  const lts = tableState(filters, 'dist.links');
  if (!lts.sort) lts.sort = 'bandwidth_gbps';

  return (
    <div className="view" data-testid="view-distributed">
      <div className="controls">
        {spanCount > 1 && (
          <label className="inline-field">
            Span
            <select
              data-testid="dist-span"
              value={String(spanIndex)}
              onChange={(e) => setFilters({ 'dist.span': e.target.value === '0' ? undefined : e.target.value })}
            >
              {Array.from({ length: spanCount }, (_, i) => (
                <option key={i} value={i}>
                  Span {i + 1}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      <section className="figures" aria-label="Key figures">
        <Figure label="Ranks" value={formatCount(d.total_ranks)} testId="fig-ranks" raw={d.total_ranks} />
        <Figure label="Median step time" value={formatDuration(q.median)} testId="fig-median-step" raw={q.median ?? ''} />
        <Figure label="Slowest rank (mean step)" value={d.slowest[0] ? `rank ${d.slowest[0].rank} · ${formatDuration(d.slowest[0].avg_total_us)}` : '—'} testId="fig-slowest" />
      </section>
      <section className="card" data-testid="findings">
        <h2>Findings</h2>
        {d.findings.length === 0 ? (
          <p className="muted">No straggler rank or slow link found.</p>
        ) : (
          <ul className="findings">
            {d.findings.map((f, i) => (
              <FindingItem key={i} f={f} onOpen={(rank) => {
                const w = workerOfRank(rank);
                if (w) open({ worker: w, view: 'overview' });
              }} />
            ))}
          </ul>
        )}
        {d.failed.length > 0 && <Notice>{d.failed.length} rank(s) could not be read and are left out.</Notice>}
      </section>
      <div className={big ? 'grid-2' : ''}>
        <section className="card wide">
          <h2>{big ? `Step time breakdown of the ${barStats.length} slowest ranks (mean per step)` : 'Step time breakdown per rank (mean per step)'}</h2>
          {barOpt ? (
            <Chart option={barOpt} label="Step time breakdown per rank" testId="chart-rank-breakdown" height={340} />
          ) : (
            <Notice>No step information in these ranks.</Notice>
          )}
        </section>
        {big && histOpt && (
          <section className="card">
            <h2>Distribution of the ranks' mean step time</h2>
            <Chart option={histOpt} label="Distribution of mean step time" testId="chart-rank-histogram" height={340} />
          </section>
        )}
      </div>
      {heatOpt && (
        <section className="card">
          <h2>
            Step time per rank and step
            {d.heatmap.ranks_per_row > 1 ? ` (${d.heatmap.ranks_per_row} ranks per row, max)` : ''}
          </h2>
          <Chart option={heatOpt} label="Step time per rank and step" testId="chart-rank-heatmap" height={Math.min(640, 80 + 22 * d.heatmap.rows.length)} />
        </section>
      )}
      <section className="card">
        <h2>Communication operations{d.comm_source === 'kernels' ? ' (from NCCL / gloo kernels)' : ''}</h2>
        {d.comm_ops.length === 0 ? (
          <Notice>These ranks have no communication data.</Notice>
        ) : (
          <DataTable<Row>
            label="Communication operations"
            testId="table-comm-ops"
            columns={commColumns}
            deps={[run, spanIndex, commGroup]}
            load={(tq, signal) => distApi.commOps(run, spanIndex, commGroup, tq, signal)}
            state={cts}
            onStateChange={(s) => setFilters(tableStatePatch(`dist.comm.${commGroup}`, s))}
            searchPlaceholder="Search operation…"
            toolbar={
              <div className="segmented" role="radiogroup" aria-label="Group by">
                {(['op', 'rank'] as const).map((g) => (
                  <button
                    key={g}
                    type="button"
                    role="radio"
                    aria-checked={g === commGroup}
                    data-testid={`comm-group-${g}`}
                    className={g === commGroup ? 'active' : ''}
                    onClick={() => setFilters({ 'dist.comm': g === 'op' ? undefined : g })}
                  >
                    {g === 'op' ? 'All ranks' : 'Per rank'}
                  </button>
                ))}
              </div>
            }
          />
        )}
      </section>
      {d.matrix && (
        <section className="card" data-testid="comm-matrix">
          <h2>Communication matrix ({formatCount(d.matrix.total_links)} links)</h2>
          {matOpt && <Chart option={matOpt} label="Communication matrix bandwidth" testId="chart-comm-matrix" height={Math.min(560, 120 + 24 * Math.min(d.rank_count, 20))} />}
          <DataTable<Row>
            label="Links"
            testId="table-links"
            columns={linkColumns}
            deps={[run, spanIndex]}
            load={(tq, signal) => distApi.links(run, spanIndex, tq, signal) as unknown as Promise<{ total_rows: number; rows: Row[] }>}
            state={lts}
            onStateChange={(s) => setFilters(tableStatePatch('dist.links', s))}
            searchPlaceholder="Search link (e.g. 1-2)…"
            maxHeight={320}
          />
        </section>
      )}
    </div>
  );
}

function FindingItem({ f, onOpen }: { f: Finding; onOpen: (rank: number | null) => void }) {
  return (
    <li className={`finding finding-${f.kind === 'straggler' ? 'straggler' : 'link'}`} data-testid={`finding-${f.kind}`} data-rank={f.rank ?? ''} data-link={f.link ?? ''}>
      <span className="finding-kind">{f.kind === 'straggler' ? 'Straggler' : f.kind === 'slow_link' ? 'Slow link' : f.kind}</span>
      <span className="finding-message">{f.message}</span>
      {f.rank !== null && (
        <button type="button" className="btn small" onClick={() => onOpen(f.rank)} data-testid={`open-rank-${f.rank}`}>
          Open rank {f.rank}
        </button>
      )}
    </li>
  );
}
