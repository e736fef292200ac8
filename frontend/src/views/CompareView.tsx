// Compare view: any two profiles (run / worker / span, any producers). Step time and its
// breakdown side by side, then operators and kernels joined by name with the biggest
// changes first; either side opens in the per-profile views.
import { useMemo } from 'react';
import { api, type ProfileKey, type RunSummary } from '../api';
import { decodeProfile, distApi, encodeProfile, type CompareStepRow, type CompareTable } from '../apiDistributed';
import { compareBarsOption } from '../chartsDistributed';
import { Chart } from '../components/Chart';
import { DataTable, type Column } from '../components/DataTable';
import { ErrorBox, Loading, Notice } from '../components/States';
import { formatDuration, humanize } from '../format';
import { useAsync } from '../hooks';
import { tableState, tableStatePatch } from './tableState';
import type { Filters, OpenTarget, SetFilters } from './types';

export interface CompareViewProps {
  runs: RunSummary[];
  filters: Filters;
  setFilters: SetFilters;
  open: (target: OpenTarget) => void;
}

type Row = Record<string, unknown>;

const PRESENCE = ['all', 'both', 'base', 'exp'] as const;
const PRESENCE_LABEL: Record<string, string> = { all: 'All', both: 'In both', base: 'Only in base', exp: 'Only in experiment' };

export function formatDelta(us: number | null | undefined, pct: number | null | undefined): string {
  if (us === null || us === undefined) return '—';
  const sign = us > 0 ? '+' : '';
  const p = pct === null || pct === undefined ? '' : ` (${pct > 0 ? '+' : ''}${pct.toFixed(1)}%)`;
  return `${sign}${formatDuration(us)}${p}`;
}

function ProfilePicker({ side, runs, value, onChange }: { side: 'base' | 'exp'; runs: RunSummary[]; value?: ProfileKey; onChange: (p: ProfileKey) => void }) {
  const run = value?.run ?? '';
  const info = useAsync(run ? (signal) => api.run(run, signal) : null, [run]);
  const workers = info.data?.workers ?? [];
  const worker = workers.find((w) => w.name === value?.worker);
  const pick = (r: string, w?: string, s?: string) => {
    const ws = r === run ? workers : [];
    const wk = ws.find((x) => x.name === w) ?? ws[0];
    onChange({ run: r, worker: w ?? wk?.name ?? '', span: s ?? wk?.spans[0] ?? '' });
  };
  return (
    <fieldset className="picker" data-testid={`pick-${side}`}>
      <legend>{side === 'base' ? 'Base' : 'Experiment'}</legend>
      <label className="inline-field">
        Run
        <select data-testid={`pick-${side}-run`} value={run} onChange={(e) => onChange({ run: e.target.value, worker: '', span: '' })}>
          <option value="">Select a run</option>
          {runs.filter((r) => r.state === 'ready').map((r) => (
            <option key={r.name} value={r.name}>
              {r.name}
            </option>
          ))}
        </select>
      </label>
      <label className="inline-field">
        Worker
        <select data-testid={`pick-${side}-worker`} value={worker?.name ?? ''} disabled={!workers.length} onChange={(e) => pick(run, e.target.value)}>
          {!worker && <option value="">—</option>}
          {workers.map((w) => (
            <option key={w.name} value={w.name}>
              {w.name}
            </option>
          ))}
        </select>
      </label>
      <label className="inline-field">
        Span
        <select
          data-testid={`pick-${side}-span`}
          value={value?.span ?? ''}
          disabled={!worker || worker.spans.length < 2}
          onChange={(e) => pick(run, worker?.name, e.target.value)}
        >
          {!worker && <option value="">—</option>}
          {worker?.spans.map((s) => (
            <option key={s} value={s}>
              {s || '(default)'}
            </option>
          ))}
        </select>
      </label>
    </fieldset>
  );
}

/** Fills worker / span when only the run is chosen (first of each). */
function useCompleted(p: ProfileKey | undefined): ProfileKey | undefined {
  const need = !!(p && p.run && (!p.worker || !p.span));
  const info = useAsync(need && p ? (signal) => api.run(p.run, signal) : null, [p?.run, need]);
  if (!p || !p.run) return undefined;
  if (!need) return p;
  const w = info.data?.workers.find((x) => x.name === p.worker) ?? info.data?.workers[0];
  if (!w) return undefined;
  return { run: p.run, worker: w.name, span: p.span && w.spans.includes(p.span) ? p.span : (w.spans[0] ?? '') };
}

export function CompareView({ runs, filters, setFilters, open }: CompareViewProps) {
  const baseRaw = decodeProfile(filters['cmp.base']);
  const expRaw = decodeProfile(filters['cmp.exp']);
  const base = useCompleted(baseRaw);
  const exp = useCompleted(expRaw);
  const ready = !!(base && exp && base.worker && exp.worker);
  const pairKey = ready ? [encodeProfile(base!), encodeProfile(exp!)] : ['', ''];

  const steps = useAsync(ready ? (signal) => distApi.compareSteps(base!, exp!, signal) : null, pairKey);
  const chartOpt = useMemo(() => (steps.data ? compareBarsOption([steps.data.rows[0], ...steps.data.common]) : null), [steps.data]);

  const opGroup = filters['cmp.op.group'] === 'name_shape' ? 'name_shape' : 'name';
  const opPresence = (PRESENCE as readonly string[]).includes(filters['cmp.op.presence']) ? filters['cmp.op.presence'] : 'all';
  const kGroup = ['name', 'type', 'core'].includes(filters['cmp.k.group']) ? filters['cmp.k.group'] : 'name';
  const kPresence = (PRESENCE as readonly string[]).includes(filters['cmp.k.presence']) ? filters['cmp.k.presence'] : 'all';

  const set = (side: 'base' | 'exp', p: ProfileKey) => setFilters({ [`cmp.${side}`]: encodeProfile(p) });

  const pickers = (
    <section className="card compare-pickers">
      <div className="controls">
        <ProfilePicker side="base" runs={runs} value={baseRaw} onChange={(p) => set('base', p)} />
        <button
          type="button"
          className="btn small"
          data-testid="compare-swap"
          disabled={!filters['cmp.base'] || !filters['cmp.exp']}
          onClick={() => setFilters({ 'cmp.base': filters['cmp.exp'], 'cmp.exp': filters['cmp.base'] })}
        >
          Swap
        </button>
        <ProfilePicker side="exp" runs={runs} value={expRaw} onChange={(p) => set('exp', p)} />
      </div>
      {ready && (
        <div className="controls">
          <button type="button" className="btn small" data-testid="open-base" onClick={() => open({ ...base!, view: 'overview' })}>
            Open base
          </button>
          <button type="button" className="btn small" data-testid="open-exp" onClick={() => open({ ...exp!, view: 'overview' })}>
            Open experiment
          </button>
        </div>
      )}
    </section>
  );

  if (!ready) {
    return (
      <div className="view" data-testid="view-compare">
        {pickers}
        <Notice>Choose a base and an experiment profile (or use “Set as base” / “Set as experiment” in the left panel).</Notice>
      </div>
    );
  }

  const stepColumns: Column<CompareStepRow>[] = [
    { key: 'category', label: 'Category', text: (r) => humanize(r.category) },
    { key: 'base_us', label: 'Base', kind: 'duration' },
    { key: 'exp_us', label: 'Experiment', kind: 'duration' },
    { key: 'delta_us', label: 'Difference', text: (r) => formatDelta(r.delta_us, r.delta_pct) },
  ];
  const deltaCols: Column<Row>[] = [
    { key: 'presence', label: 'In', width: 'minmax(60px, 0.6fr)' },
    { key: 'base_calls', label: 'Base calls', kind: 'count', width: 'minmax(80px, 0.7fr)' },
    { key: 'exp_calls', label: 'Exp calls', kind: 'count', width: 'minmax(80px, 0.7fr)' },
    { key: 'base_us', label: 'Base', kind: 'duration' },
    { key: 'exp_us', label: 'Experiment', kind: 'duration' },
    { key: 'delta_us', label: 'Δ', kind: 'duration' },
    { key: 'delta_pct', label: 'Δ %', text: (r) => (typeof r.delta_pct === 'number' ? `${r.delta_pct > 0 ? '+' : ''}${r.delta_pct.toFixed(1)}%` : '—') },
  ];
  const opCols: Column<Row>[] = [
    { key: 'name', label: 'Operator' },
    ...(opGroup === 'name_shape' ? [{ key: 'input_shapes', label: 'Input shapes', width: 'minmax(140px, 2fr)' }] : []),
    ...deltaCols,
  ];
  const kCols: Column<Row>[] = [{ key: kGroup, label: kGroup === 'name' ? 'Kernel' : kGroup === 'type' ? 'Type' : 'Core type' }, ...deltaCols];
  const ots = tableState(filters, `cmp.op.${opGroup}`);
  if (!ots.sort) ots.sort = '-impact_us';
  const kts = tableState(filters, `cmp.k.${kGroup}`);
  if (!kts.sort) kts.sort = '-impact_us';
  const pair = [...pairKey];

  const segmented = (label: string, values: readonly string[], current: string, key: string, text: (v: string) => string, testPrefix: string) => (
    <div className="segmented" role="radiogroup" aria-label={label}>
      {values.map((v) => (
        <button
          key={v}
          type="button"
          role="radio"
          aria-checked={v === current}
          className={v === current ? 'active' : ''}
          data-testid={`${testPrefix}-${v}`}
          onClick={() => setFilters({ [key]: v === values[0] ? undefined : v })}
        >
          {text(v)}
        </button>
      ))}
    </div>
  );
  const orderButtons = (ns: string, ts: { sort?: string }) => (
    <div className="segmented" role="radiogroup" aria-label="Order">
      {[
        ['-impact_us', 'Biggest change'],
        ['-delta_us', 'Regressions'],
        ['delta_us', 'Improvements'],
      ].map(([s, t]) => (
        <button key={s} type="button" role="radio" aria-checked={ts.sort === s} className={ts.sort === s ? 'active' : ''} data-testid={`${ns}-order-${t.split(' ')[0].toLowerCase()}`} onClick={() => setFilters({ [`${ns}.sort`]: s === '-impact_us' ? undefined : s, [`${ns}.page`]: undefined })}>
          {t}
        </button>
      ))}
    </div>
  );
  const summaryLine = (t?: CompareTable) =>
    t?.summary ? `${t.summary.both} in both · ${t.summary.only_base} only in base · ${t.summary.only_exp} only in experiment` : '';

  return (
    <div className="view" data-testid="view-compare">
      {pickers}
      {steps.error ? (
        <ErrorBox title="Cannot compare" message={steps.error} />
      ) : !steps.data ? (
        <Loading what="both profiles" progress={steps.progress} />
      ) : (
        <div className="grid-2">
          <section className="card wide">
            <h2>
              Step time: base {steps.data.base.producer ?? ''} {steps.data.base.device?.toUpperCase() ?? ''} vs experiment {steps.data.exp.producer ?? ''}{' '}
              {steps.data.exp.device?.toUpperCase() ?? ''}
            </h2>
            <div className="figures" data-testid="compare-summary">
              <div className="figure" data-testid="cmp-step-delta" data-value={String(steps.data.rows[0]?.delta_us ?? '')}>
                <div className="figure-label">Mean step time</div>
                <div className="figure-value">
                  {formatDuration(steps.data.rows[0]?.base_us)} → {formatDuration(steps.data.rows[0]?.exp_us)} ({formatDelta(steps.data.rows[0]?.delta_us, steps.data.rows[0]?.delta_pct)})
                </div>
              </div>
            </div>
            {chartOpt && <Chart option={chartOpt} label="Step time base vs experiment" testId="chart-compare-steps" height={300} />}
          </section>
          <section className="card">
            <h2>Breakdown (mean per step)</h2>
            <DataTable<CompareStepRow>
              label="Step breakdown comparison"
              testId="table-compare-steps"
              columns={stepColumns}
              deps={[steps.data]}
              load={async () => ({ total_rows: steps.data!.rows.length, rows: steps.data!.rows })}
              state={{}}
              onStateChange={() => undefined}
              searchable={false}
              maxHeight={300}
            />
          </section>
        </div>
      )}
      <section className="card">
        <h2>Operators</h2>
        <CompareTableCard
          testId="table-compare-operators"
          columns={opCols}
          deps={[...pair, opGroup, opPresence]}
          load={(q, signal) => distApi.compareOperators(base!, exp!, opGroup, opPresence, q, signal)}
          state={ots}
          onStateChange={(s) => setFilters(tableStatePatch(`cmp.op.${opGroup}`, s))}
          summary={summaryLine}
          toolbar={
            <>
              {segmented('Join by', ['name', 'name_shape'], opGroup, 'cmp.op.group', (v) => (v === 'name' ? 'Name' : 'Name + shapes'), 'cmp-op-group')}
              {segmented('Presence', PRESENCE, opPresence, 'cmp.op.presence', (v) => PRESENCE_LABEL[v], 'cmp-op-presence')}
              {orderButtons(`cmp.op.${opGroup}`, ots)}
            </>
          }
        />
      </section>
      <section className="card">
        <h2>Kernels</h2>
        <CompareTableCard
          testId="table-compare-kernels"
          columns={kCols}
          deps={[...pair, kGroup, kPresence]}
          load={(q, signal) => distApi.compareKernels(base!, exp!, kGroup, kPresence, q, signal)}
          state={kts}
          onStateChange={(s) => setFilters(tableStatePatch(`cmp.k.${kGroup}`, s))}
          summary={summaryLine}
          toolbar={
            <>
              {segmented('Join by', ['name', 'type', 'core'], kGroup, 'cmp.k.group', (v) => (v === 'name' ? 'Name' : v === 'type' ? 'Type' : 'Core type'), 'cmp-k-group')}
              {segmented('Presence', PRESENCE, kPresence, 'cmp.k.presence', (v) => PRESENCE_LABEL[v], 'cmp-k-presence')}
              {orderButtons(`cmp.k.${kGroup}`, kts)}
            </>
          }
        />
      </section>
    </div>
  );
}

function CompareTableCard(props: {
  testId: string;
  columns: Column<Row>[];
  deps: unknown[];
  load: (q: { limit?: number; offset?: number; sort?: string; search?: string }, signal: AbortSignal) => Promise<CompareTable>;
  state: { sort?: string; search?: string; page?: number };
  onStateChange: (s: { sort?: string; search?: string; page?: number }) => void;
  summary: (t?: CompareTable) => string;
  toolbar: React.ReactNode;
}) {
  const head = useAsync((signal) => props.load({ limit: 0 }, signal), props.deps);
  return (
    <>
      <p className="muted" data-testid={`${props.testId}-summary`}>
        {props.summary(head.data)}
      </p>
      <DataTable<Row>
        label={props.testId}
        testId={props.testId}
        columns={props.columns}
        deps={props.deps}
        load={props.load}
        state={props.state}
        onStateChange={props.onStateChange}
        toolbar={props.toolbar}
        searchPlaceholder="Search name…"
      />
    </>
  );
}
