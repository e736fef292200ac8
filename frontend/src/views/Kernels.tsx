import { useMemo } from 'react';
import { api, csvUrl, profileParams, type KernelRow } from '../api';
import type { ViewProps } from './types';
import { traceHash } from '../timeline/link';
import { pieOption, topNWithOther } from '../charts';
import { Chart } from '../components/Chart';
import { TopNSelect, topNOf } from '../components/TopN';
import { DataTable, type Column } from '../components/DataTable';
import { ErrorBox, Loading, Notice } from '../components/States';
import { useAsync } from '../hooks';
import { tableState, tableStatePatch } from './tableState';
import { OpTypesSection } from './OpTypes';
import { BOUND_CLASSES, BOUND_LABELS, boundFilter, counterColumns, hasCounters, pipeStackOption } from './kernelCounters';

export const KERNEL_GROUPS = ['name', 'type', 'core'] as const;

export function KernelsView({ profile, worker, filters, setFilters }: ViewProps) {
  const isGpu = worker.device === 'gpu';
  const groupBy = (KERNEL_GROUPS as readonly string[]).includes(filters['kernels.group']) ? filters['kernels.group'] : 'name';
  const topN = topNOf(filters, 'kernels');
  const step = filters['kernels.step'];
  const bound = boundFilter(filters['kernels.bound']);
  const showCounters = filters['kernels.pmu'] !== 'off';
  const pk = [profile.run, profile.worker, profile.span];

  const steps = useAsync((signal) => api.steps(profile, signal), pk);
  const byCore = useAsync((signal) => api.kernels(profile, 'core', { sort: '-total_us' }, step, signal), [...pk, step]);
  const byName = useAsync(
    (signal) => api.kernels(profile, 'name', { sort: '-total_us', limit: topN }, step, signal),
    [...pk, step, topN],
  );

  const counters = hasCounters(byName.data);
  const pipeChart = useMemo(() => (byName.data && counters ? pipeStackOption(byName.data.rows, topN) : null), [byName.data, counters, topN]);

  const total = byCore.data?.rows.reduce((a, r) => a + r.total_us, 0);
  const namePie = useMemo(
    () =>
      byName.data
        ? pieOption(topNWithOther(byName.data.rows.map((r) => ({ name: String(r.name ?? ''), value: r.total_us })), topN, total))
        : null,
    [byName.data, topN, total],
  );
  const corePie = useMemo(
    () => (byCore.data ? pieOption(byCore.data.rows.map((r) => ({ name: String(r.core ?? ''), value: r.total_us }))) : null),
    [byCore.data],
  );

  const keyLabel = groupBy === 'name' ? 'Kernel name' : groupBy === 'type' ? 'Type' : isGpu ? 'Kernel type' : 'Core type';
  const columns: Column<KernelRow>[] = [
    { key: groupBy, label: keyLabel },
    { key: 'calls', label: 'Calls', kind: 'count', width: 'minmax(70px, 0.7fr)' },
    { key: 'total_us', label: 'Total', kind: 'duration' },
    { key: 'avg_us', label: 'Avg', kind: 'duration' },
    { key: 'min_us', label: 'Min', kind: 'duration' },
    { key: 'max_us', label: 'Max', kind: 'duration' },
    { key: 'wait_us', label: 'Wait', kind: 'duration', title: 'Time the task waited before it started' },
    ...(counters && showCounters ? counterColumns() : []),
  ];
  const ns = `kernels.${groupBy}`;
  const ts = tableState(filters, ns);
  if (!ts.sort) ts.sort = '-total_us';
  const params = profileParams(profile, { group_by: groupBy, step, bound });

  const stepIds = steps.data?.steps.map((s) => String(s.step)) ?? [];
  const noKernels = byCore.data && byCore.data.total_rows === 0 && !step;

  return (
    <div className="view" data-testid="view-kernels">
      <div className="controls">
        <TopNSelect view="kernels" value={topN} setFilters={setFilters} />
        <label className="inline-field">
          Step
          <select
            data-testid="kernels-step"
            value={step ?? ''}
            onChange={(e) => setFilters({ 'kernels.step': e.target.value || undefined, [`${ns}.page`]: undefined })}
          >
            <option value="">All steps</option>
            {stepIds.map((s) => (
              <option key={s} value={s}>
                Step {s}
              </option>
            ))}
            {step && !stepIds.includes(step) && <option value={step}>Step {step}</option>}
          </select>
        </label>
        {counters && (
          <>
            <label className="inline-field">
              Bound
              <select
                data-testid="kernels-bound"
                value={bound ?? ''}
                onChange={(e) => setFilters({ 'kernels.bound': e.target.value || undefined, [`${ns}.page`]: undefined })}
              >
                <option value="">Any</option>
                {BOUND_CLASSES.map((b) => (
                  <option key={b} value={b}>
                    {BOUND_LABELS[b]}
                  </option>
                ))}
              </select>
            </label>
            <label className="inline-field">
              <input
                type="checkbox"
                data-testid="kernels-counters-toggle"
                checked={showCounters}
                onChange={(e) => setFilters({ 'kernels.pmu': e.target.checked ? undefined : 'off' })}
              />
              Hardware counters
            </label>
          </>
        )}
      </div>
      {noKernels ? (
        <Notice>This profile has no device kernels.</Notice>
      ) : (
        <div className="grid-2 even">
          <section className="card">
            <h2>Top {topN} kernels by total time</h2>
            {byName.error ? (
              <ErrorBox message={byName.error} />
            ) : namePie ? (
              <Chart option={namePie} label="Kernels by name" testId="chart-kernels-name" />
            ) : (
              <Loading what="kernels" />
            )}
          </section>
          <section className="card">
            <h2>{isGpu ? 'By kernel type' : 'By core type'}</h2>
            {byCore.error ? (
              <ErrorBox message={byCore.error} />
            ) : corePie ? (
              <Chart option={corePie} label="Kernels by core type" testId="chart-kernels-core" />
            ) : (
              <Loading what="kernels" />
            )}
          </section>
        </div>
      )}
      {pipeChart && (
        <section className="card">
          <h2>Pipe utilization of the top {topN} kernels</h2>
          <Chart option={pipeChart} label="Pipe ratios by kernel" testId="chart-kernels-pipes" />
        </section>
      )}
      <section className="card">
        <h2>Kernels</h2>
        <DataTable<KernelRow>
          label="Kernels"
          testId="table-kernels"
          columns={columns}
          deps={[...pk, groupBy, step, bound, counters && showCounters]}
          load={(q, signal) => api.kernels(profile, groupBy, q, step, signal, bound)}
          state={ts}
          onStateChange={(s) => setFilters(tableStatePatch(ns, s))}
          csvHref={(q) => csvUrl('kernels', { ...params, sort: q.sort, search: q.search })}
          csvName="kernels.csv"
          onRowClick={groupBy === 'name' ? (r) => { if (r.name) window.location.hash = traceHash(profile, { q: r.name }); } : undefined}
          searchPlaceholder={`Search ${keyLabel.toLowerCase()}…`}
          toolbar={
            <div className="segmented" role="radiogroup" aria-label="Group by">
              {KERNEL_GROUPS.map((g) => (
                <button
                  key={g}
                  type="button"
                  role="radio"
                  aria-checked={g === groupBy}
                  data-testid={`kernels-group-${g}`}
                  className={g === groupBy ? 'active' : ''}
                  onClick={() => setFilters({ 'kernels.group': g === 'name' ? undefined : g })}
                >
                  {g === 'name' ? 'Name' : g === 'type' ? 'Type' : isGpu ? 'Kernel type' : 'Core'}
                </button>
              ))}
            </div>
          }
        />
      </section>
      <OpTypesSection profile={profile} />
    </div>
  );
}
