// AI Core PMU counters in the kernel view: which pipes a kernel keeps busy and what bounds it.
// Pure helpers (columns, the bound filter, the pipe chart) so they are testable without a DOM.
// The numbers come from /kernels (`pmu`, `bound`, ...; docs/http_api.md).
import type { ChartOption } from '../charts';
import { PALETTE } from '../charts';
import type { KernelRow } from '../api';
import type { Column } from '../components/DataTable';
import { escapeHtml, formatPercent, truncate } from '../format';

/** Pipes of PipeUtilization, in chart order, with their labels. */
export const PIPES: readonly { key: string; label: string }[] = [
  { key: 'mac_ratio', label: 'Cube (mac)' },
  { key: 'vec_ratio', label: 'Vector' },
  { key: 'scalar_ratio', label: 'Scalar' },
  { key: 'mte1_ratio', label: 'MTE1 (L1→L0)' },
  { key: 'mte2_ratio', label: 'MTE2 (GM→core)' },
  { key: 'mte3_ratio', label: 'MTE3 (core→GM)' },
  { key: 'fixpipe_ratio', label: 'Fixpipe' },
];

/** `bound` classes the API filters by (kernel_counters.BOUND_CLASSES). */
export const BOUND_CLASSES = ['cube', 'vector', 'memory', 'mte3', 'scalar', 'mixed', 'none'] as const;
export type BoundClass = (typeof BOUND_CLASSES)[number];

export const BOUND_LABELS: Record<BoundClass, string> = {
  cube: 'Cube-bound',
  vector: 'Vector-bound',
  memory: 'Memory-bound (MTE1/MTE2)',
  mte3: 'Write-back-bound (MTE3)',
  scalar: 'Scalar-bound',
  mixed: 'Several pipes',
  none: 'No pipe over 80%',
};

/** The bound filter of the URL state, or undefined when absent or not a class. */
export function boundFilter(value: string | undefined): BoundClass | undefined {
  return (BOUND_CLASSES as readonly string[]).includes(value ?? '') ? (value as BoundClass) : undefined;
}

/** Whether a page of /kernels carries counters (the answer has `counters`). */
export function hasCounters(page: { counters?: unknown } | null | undefined): boolean {
  return !!page && typeof page.counters === 'object' && page.counters !== null;
}

/** A ratio of a row's `pmu` map (undefined when the kernel has none). */
export function pmuValue(row: KernelRow, key: string): number | undefined {
  const v = row.pmu?.[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** "64 / 48 (2 waves, 33% idle)" for a row with a Block Num and a core count. */
export function blockText(row: KernelRow): string {
  if (row.block_dim == null) return '';
  if (row.core_num == null) return String(row.block_dim);
  const waves = row.waves ?? Math.ceil(row.block_dim / row.core_num);
  const idle = row.tail_waste ?? 0;
  return `${row.block_dim} / ${row.core_num}` + (idle > 0 ? ` (${waves} waves, ${formatPercent(idle, 0)} idle)` : '');
}

/** The counters column group (sort keys are the API's flat columns). */
export function counterColumns(): Column<KernelRow>[] {
  const pct = (key: string) => (r: KernelRow) => formatPercent(pmuValue(r, key));
  return [
    { key: 'bound', label: 'Bound', width: 'minmax(110px, 1fr)', text: (r) => (r.bound ? BOUND_LABELS[r.bound as BoundClass] ?? r.bound : '—'),
      title: 'What limits the kernel: the pipes with a mean ratio over 80%' },
    { key: 'mac_ratio', label: 'Cube', kind: 'number', text: pct('mac_ratio') },
    { key: 'vec_ratio', label: 'Vector', kind: 'number', text: pct('vec_ratio') },
    { key: 'mte2_ratio', label: 'MTE2', kind: 'number', text: pct('mte2_ratio') },
    { key: 'mte3_ratio', label: 'MTE3', kind: 'number', text: pct('mte3_ratio') },
    { key: 'scalar_ratio', label: 'Scalar', kind: 'number', text: pct('scalar_ratio') },
    { key: 'memory_bound', label: 'Mem bound', kind: 'number', text: (r) => (r.memory_bound == null ? '—' : r.memory_bound.toFixed(2)),
      title: 'mte2 / max(mac, vec): above 1 the kernel waits on memory more than it computes' },
    { key: 'block_dim', label: 'Blocks / cores', kind: 'number', width: 'minmax(150px, 1.4fr)', text: blockText,
      title: 'Block Num against the AI Core / vector core count; a partial last wave leaves cores idle' },
    { key: 'l2_hit_rate', label: 'L2 hit', kind: 'number', text: (r) => formatPercent(r.l2_hit_rate ?? undefined) },
  ];
}

/** Stacked horizontal bars: one bar per kernel (top rows with counters, largest first), one
 * segment per pipe ratio. Pipes run at the same time, so a bar can exceed 100%. */
export function pipeStackOption(rows: KernelRow[], topN = 10): ChartOption {
  const top = rows.filter((r) => r.pmu && PIPES.some((p) => pmuValue(r, p.key) !== undefined)).slice(0, topN);
  const names = top.map((r) => String(r.name ?? r.type ?? r.core ?? ''));
  const order = [...top.keys()].reverse(); // largest at the top
  const series = PIPES.map((p, i) => ({
    name: p.label,
    type: 'bar',
    stack: 'pipes',
    itemStyle: { color: PALETTE[i % PALETTE.length] },
    data: order.map((j) => pmuValue(top[j], p.key) ?? 0),
  }));
  return {
    backgroundColor: 'transparent',
    tooltip: {
      trigger: 'axis',
      axisPointer: { type: 'shadow' },
      confine: true,
      extraCssText: 'max-width:480px;white-space:normal;word-break:break-all;',
      formatter: (params: { dataIndex: number; seriesName: string; value: number }[]) => {
        if (!params.length) return '';
        const row = top[order[params[0].dataIndex]];
        const head = `<b>${escapeHtml(names[order[params[0].dataIndex]])}</b>` +
          (row.bound ? `<div>${escapeHtml(BOUND_LABELS[row.bound as BoundClass] ?? row.bound)}</div>` : '');
        return head + params.map((p) => `<div>${escapeHtml(p.seriesName)}: <b>${escapeHtml(formatPercent(p.value))}</b></div>`).join('');
      },
    },
    legend: { type: 'scroll', top: 0, left: 8, right: 8 },
    grid: { left: 8, right: 24, top: 36, bottom: 8, containLabel: true },
    xAxis: { type: 'value', axisLabel: { formatter: (v: number) => formatPercent(v, 0) } },
    yAxis: { type: 'category', data: order.map((j) => truncate(names[j], 40)) },
    series,
  };
}
