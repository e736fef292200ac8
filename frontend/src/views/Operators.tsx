import { useMemo } from 'react';
import { api, csvUrl, profileParams, type OperatorRow } from '../api';
import type { ViewProps } from './types';
import { traceHash, traceLinkProps } from '../timeline/link';
import { pieOption, topNWithOther } from '../charts';
import { Chart } from '../components/Chart';
import { TopNSelect, topNOf } from '../components/TopN';
import { DataTable, type Column } from '../components/DataTable';
import { ErrorBox, Loading, Notice } from '../components/States';
import { formatCount } from '../format';
import { useAsync } from '../hooks';
import { tableState, tableStatePatch } from './tableState';

/** Rows fetched for the pies: enough for any real profile's distinct operator names. */
const PIE_FETCH_LIMIT = 100000;

export function OperatorsView({ profile, worker, filters, setFilters }: ViewProps) {
  const groupBy = filters['operators.group'] === 'name_shape' ? 'name_shape' : 'name';
  const topN = topNOf(filters, 'operators');
  const selName = filters['operators.op'];
  const selShapes = filters['operators.shapes'];
  const pk = [profile.run, profile.worker, profile.span];

  const all = useAsync((signal) => api.operators(profile, 'name', { sort: '-device_self_us', limit: PIE_FETCH_LIMIT }, signal), pk);
  const pies = useMemo(() => {
    const rows = all.data?.rows;
    if (!rows) return null;
    const dev = topNWithOther(rows.map((r) => ({ name: r.name, value: r.device_self_us })), topN);
    const host = topNWithOther(rows.map((r) => ({ name: r.name, value: r.host_self_us })), topN);
    return {
      device: dev.length ? pieOption(dev) : null,
      host: host.length ? pieOption(host) : null,
    };
  }, [all.data, topN]);

  const stacks = useAsync(
    selName !== undefined ? (signal) => api.operatorStack(profile, selName, groupBy === 'name_shape' ? selShapes ?? '' : undefined, signal) : null,
    [...pk, selName, selShapes, groupBy],
  );

  const columns: Column<OperatorRow>[] = [
    { key: 'name', label: 'Operator' },
    ...(groupBy === 'name_shape' ? [{ key: 'input_shapes', label: 'Input shapes', width: 'minmax(160px, 2fr)' }] : []),
    { key: 'calls', label: 'Calls', kind: 'count', width: 'minmax(70px, 0.7fr)' },
    { key: 'device_self_us', label: 'Device self', kind: 'duration' },
    { key: 'device_total_us', label: 'Device total', kind: 'duration' },
    { key: 'host_self_us', label: 'Host self', kind: 'duration' },
    { key: 'host_total_us', label: 'Host total', kind: 'duration' },
  ];
  const ns = `operators.${groupBy}`;
  const ts = tableState(filters, ns);
  if (!ts.sort) ts.sort = '-device_self_us';
  const params = profileParams(profile, { group_by: groupBy });
  const empty = all.data && all.data.total_rows === 0;

  return (
    <div className="view" data-testid="view-operators">
      <div className="controls">
        <TopNSelect view="operators" value={topN} setFilters={setFilters} />
      </div>
      {all.error ? (
        <ErrorBox message={all.error} />
      ) : empty ? (
        <Notice>This profile has no framework operators.</Notice>
      ) : !pies ? (
        <Loading what="operators" progress={all.progress} />
      ) : (
        <div className="grid-2 even">
          <section className="card">
            <h2>Top {topN} operators by device self time</h2>
            {pies.device ? (
              <Chart option={pies.device} label="Operators by device self time" testId="chart-operators-device" />
            ) : (
              <Notice>No device time recorded for operators.</Notice>
            )}
          </section>
          <section className="card">
            <h2>Top {topN} operators by host self time</h2>
            {pies.host ? (
              <Chart option={pies.host} label="Operators by host self time" testId="chart-operators-host" />
            ) : (
              <Notice>No host time recorded for operators.</Notice>
            )}
          </section>
        </div>
      )}
      <section className="card">
        <h2>Operators</h2>
        {worker.producer === 'kineto' && (
          <p className="muted" data-testid="operators-definitions">
            Calls, host and device times as torch-tb-profiler 0.4.3 counts them (launch calls are not
            self time; DataLoader and Optimizer ranges are not listed). Calls without recorded input
            shapes form their own group here, where torch-tb-profiler files them under “[]”
            (docs/exactness.md).
          </p>
        )}
        <DataTable<OperatorRow>
          label="Operators"
          testId="table-operators"
          columns={columns}
          deps={[...pk, groupBy]}
          load={(q, signal) => api.operators(profile, groupBy, q, signal)}
          state={ts}
          onStateChange={(s) => setFilters(tableStatePatch(ns, s))}
          csvHref={(q) => csvUrl('operators', { ...params, sort: q.sort, search: q.search })}
          csvName="operators.csv"
          searchPlaceholder="Search operator…"
          onRowClick={(r) =>
            setFilters({ 'operators.op': r.name, 'operators.shapes': groupBy === 'name_shape' ? r.input_shapes ?? '' : undefined })
          }
          isSelected={(r) => r.name === selName && (groupBy !== 'name_shape' || (r.input_shapes ?? '') === (selShapes ?? ''))}
          toolbar={
            <div className="segmented" role="radiogroup" aria-label="Group by">
              {(['name', 'name_shape'] as const).map((g) => (
                <button
                  key={g}
                  type="button"
                  role="radio"
                  aria-checked={g === groupBy}
                  data-testid={`operators-group-${g}`}
                  className={g === groupBy ? 'active' : ''}
                  onClick={() => setFilters({ 'operators.group': g === 'name' ? undefined : g })}
                >
                  {g === 'name' ? 'Name' : 'Name + input shape'}
                </button>
              ))}
            </div>
          }
        />
      </section>
      <section className="card" data-testid="call-stack">
        <h2>Call stack</h2>
        {selName === undefined ? (
          <p className="muted">Select an operator row to see where it was called from.</p>
        ) : (
          <>
            <p className="stack-title">
              <code>{selName}</code>
              {' '}
              <a className="small" data-testid="operator-trace-link" {...traceLinkProps(traceHash(profile, { q: selName }))}>
                Show in timeline
              </a>
              {groupBy === 'name_shape' && selShapes ? <span className="muted"> · {selShapes}</span> : null}
              <button type="button" className="btn small" onClick={() => setFilters({ 'operators.op': undefined, 'operators.shapes': undefined })}>
                Clear
              </button>
            </p>
            {stacks.error ? (
              <ErrorBox message={stacks.error} />
            ) : !stacks.data ? (
              <Loading what="call stacks" />
            ) : stacks.data.stacks.length === 0 || stacks.data.stacks.every((s) => !s.stack) ? (
              <Notice>No call stack was recorded for this operator (profile with with_stack=True to get one).</Notice>
            ) : (
              stacks.data.stacks.map((s, i) => (
                <div key={i} className="stack">
                  <div className="stack-head">
                    {formatCount(s.calls)} call{s.calls === 1 ? '' : 's'}
                  </div>
                  <pre className="stack-frames">{s.stack}</pre>
                </div>
              ))
            )}
          </>
        )}
      </section>
    </div>
  );
}
