// ECharts option builders for the distributed and compare views. Tooltips are HTML strings
// built only from escaped text (escapeHtml), like charts.ts.
import { PALETTE, type ChartOption } from './charts';
import type { CompareStepRow, DistributedResponse, LinkRow, RankStats } from './apiDistributed';
import { escapeHtml, formatDuration, humanize } from './format';

const tooltipBase = { confine: true, extraCssText: 'max-width:480px;white-space:normal;word-break:break-all;' };

// The breakdown categories come from the API (`categories` of the distributed answer). Two
// facts about them it does not send: overlapped time is part of computing (so it is shown in
// the tooltip only and the stacked bars add up to the step time), and the straggler rule
// compares computing time (so that segment is highlighted). See analysis/rank_summary.py and
// analysis/distributed_findings.py.
const NOT_STACKED = new Set(['overlapped']);
const STRAGGLER_CATEGORY = 'computing';

function line(name: string, value: string): string {
  return `<div style="display:flex;justify-content:space-between;gap:16px"><span>${escapeHtml(name)}</span><b>${escapeHtml(value)}</b></div>`;
}

function statOf(s: RankStats, cat: string): number {
  const v = (s as unknown as Record<string, number | null>)[`avg_${cat}_us`];
  return typeof v === 'number' ? v : 0;
}

/** One stacked bar per rank: mean per step of each breakdown category (overlapped in the tooltip only). */
export function rankBreakdownOption(stats: RankStats[], categories: string[], highlight: number[] = []): ChartOption {
  const stacked = categories.filter((c) => !NOT_STACKED.has(c));
  const labels = stats.map((s) => `rank ${s.rank}`);
  return {
    backgroundColor: 'transparent',
    color: PALETTE,
    tooltip: {
      ...tooltipBase,
      trigger: 'axis',
      axisPointer: { type: 'shadow' },
      formatter: (params: unknown) => {
        const items = (Array.isArray(params) ? params : [params]) as { dataIndex: number }[];
        if (!items.length) return '';
        const s = stats[items[0].dataIndex];
        if (!s) return '';
        const head = `<div style="margin-bottom:4px"><b>${escapeHtml(`Rank ${s.rank}`)}</b> · ${escapeHtml(s.worker ?? '')}</div>`;
        return (
          head +
          line('Step time (mean)', formatDuration(s.avg_total_us)) +
          categories.map((c) => line(humanize(c), formatDuration(statOf(s, c)))).join('') +
          line('Communication wait', formatDuration(s.avg_wait_us))
        );
      },
    },
    legend: { type: 'scroll', top: 0 },
    grid: { left: 8, right: 16, top: 36, bottom: 8, containLabel: true },
    xAxis: { type: 'category', data: labels, axisLabel: { interval: 'auto' } },
    yAxis: { type: 'value', axisLabel: { formatter: (v: number) => formatDuration(v) } },
    series: stacked.map((c, i) => ({
      name: humanize(c),
      type: 'bar',
      stack: 'total',
      barMaxWidth: 40,
      itemStyle: { color: PALETTE[i % PALETTE.length] },
      data: stats.map((s) => ({
        value: statOf(s, c),
        itemStyle: highlight.includes(s.rank) && c === STRAGGLER_CATEGORY ? { color: '#e53935' } : undefined,
      })),
    })),
  };
}

/** Rank (rows) x step (columns) step time. */
export function stepHeatmapOption(h: DistributedResponse['heatmap']): ChartOption {
  const data: [number, number, number | null][] = [];
  let lo = Infinity;
  let hi = -Infinity;
  h.values.forEach((row, y) =>
    row.forEach((v, x) => {
      data.push([x, y, v]);
      if (v !== null) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }),
  );
  if (!Number.isFinite(lo)) {
    lo = 0;
    hi = 1;
  }
  return {
    backgroundColor: 'transparent',
    tooltip: {
      ...tooltipBase,
      formatter: (p: { data: [number, number, number | null] }) => {
        const [x, y, v] = p.data;
        const row = h.rows[y];
        return line(`${row ? row.label : ''} · step ${h.steps[x]}`, `${formatDuration(v)}${h.aggregate ? ` (${h.aggregate})` : ''}`);
      },
    },
    grid: { left: 8, right: 16, top: 8, bottom: 76, containLabel: true },
    xAxis: { type: 'category', data: h.steps.map(String), name: 'Step', nameLocation: 'middle', nameGap: 24, splitArea: { show: true } },
    yAxis: { type: 'category', data: h.rows.map((r) => r.label), inverse: true, splitArea: { show: true } },
    visualMap: {
      min: lo,
      max: hi > lo ? hi : lo + 1,
      calculable: true,
      orient: 'horizontal',
      left: 'center',
      bottom: 0,
      inRange: { color: ['#e3f2fd', '#90caf9', '#ffb74d', '#e53935'] },
      formatter: (v: number) => formatDuration(v),
    },
    series: [{ name: 'Step time', type: 'heatmap', data, emphasis: { itemStyle: { borderColor: '#333', borderWidth: 1 } } }],
  };
}

/** Histogram of the ranks' mean step time (large runs). */
export function histogramOption(hist: { edges: number[]; counts: number[] }): ChartOption {
  const labels = hist.counts.map((_, i) => `${formatDuration(hist.edges[i])}–${formatDuration(hist.edges[i + 1])}`);
  return {
    backgroundColor: 'transparent',
    tooltip: {
      ...tooltipBase,
      trigger: 'axis',
      formatter: (params: unknown) => {
        const items = (Array.isArray(params) ? params : [params]) as { dataIndex: number }[];
        const i = items[0]?.dataIndex ?? 0;
        return line(labels[i] ?? '', `${hist.counts[i] ?? 0} ranks`);
      },
    },
    grid: { left: 8, right: 16, top: 16, bottom: 8, containLabel: true },
    xAxis: { type: 'category', data: labels, axisLabel: { show: false }, name: 'Mean step time' },
    yAxis: { type: 'value', name: 'Ranks', minInterval: 1 },
    series: [{ type: 'bar', name: 'Ranks', data: hist.counts, itemStyle: { color: PALETTE[1] } }],
  };
}

/** Source rank x destination rank bandwidth (GB/s). */
export function matrixOption(links: LinkRow[], rankCount: number): ChartOption {
  const ranks = Array.from(new Set(links.flatMap((l) => [l.src, l.dst]))).sort((a, b) => a - b);
  const idx = new Map(ranks.map((r, i) => [r, i]));
  const data = links.map((l) => [idx.get(l.dst)!, idx.get(l.src)!, l.bandwidth_gbps, l.transport, l.size_mb, l.time_us]);
  const bws = links.map((l) => l.bandwidth_gbps ?? 0);
  return {
    backgroundColor: 'transparent',
    tooltip: {
      ...tooltipBase,
      formatter: (p: { data: [number, number, number | null, string, number, number] }) => {
        const [x, y, bw, transport, size, time] = p.data;
        return (
          `<div style="margin-bottom:4px"><b>${escapeHtml(`${ranks[y]} → ${ranks[x]}`)}</b> · ${escapeHtml(transport)}</div>` +
          line('Bandwidth', bw === null ? '—' : `${bw.toFixed(2)} GB/s`) +
          line('Size', `${size.toFixed(1)} MB`) +
          line('Time', formatDuration(time))
        );
      },
    },
    grid: { left: 8, right: 16, top: 8, bottom: 76, containLabel: true },
    xAxis: { type: 'category', data: ranks.map(String), name: `Destination (of ${rankCount})`, nameLocation: 'middle', nameGap: 24 },
    yAxis: { type: 'category', data: ranks.map(String), name: 'Source', inverse: true },
    visualMap: {
      min: 0,
      max: Math.max(1, ...bws),
      calculable: true,
      orient: 'horizontal',
      left: 'center',
      bottom: 0,
      dimension: 2,
      inRange: { color: ['#e53935', '#ffb74d', '#a5d6a7', '#2e7d32'] },
      formatter: (v: number) => `${v.toFixed(1)} GB/s`,
    },
    series: [{ type: 'heatmap', name: 'Bandwidth', data }],
  };
}

/** Base vs experiment bars per category. */
export function compareBarsOption(rows: CompareStepRow[]): ChartOption {
  const cats = rows.map((r) => humanize(r.category));
  return {
    backgroundColor: 'transparent',
    color: [PALETTE[1], PALETTE[0]],
    tooltip: {
      ...tooltipBase,
      trigger: 'axis',
      axisPointer: { type: 'shadow' },
      formatter: (params: unknown) => {
        const items = (Array.isArray(params) ? params : [params]) as { dataIndex: number }[];
        const r = rows[items[0]?.dataIndex ?? 0];
        if (!r) return '';
        const pct = r.delta_pct === null ? '' : ` (${r.delta_pct > 0 ? '+' : ''}${r.delta_pct.toFixed(1)}%)`;
        return (
          `<div style="margin-bottom:4px"><b>${escapeHtml(humanize(r.category))}</b></div>` +
          line('Base', formatDuration(r.base_us)) +
          line('Experiment', formatDuration(r.exp_us)) +
          line('Difference', `${r.delta_us !== null && r.delta_us > 0 ? '+' : ''}${formatDuration(r.delta_us)}${pct}`)
        );
      },
    },
    legend: { top: 0 },
    grid: { left: 8, right: 16, top: 36, bottom: 8, containLabel: true },
    xAxis: { type: 'category', data: cats },
    yAxis: { type: 'value', axisLabel: { formatter: (v: number) => formatDuration(v) } },
    series: [
      { name: 'Base', type: 'bar', data: rows.map((r) => r.base_us ?? 0), barMaxWidth: 36 },
      { name: 'Experiment', type: 'bar', data: rows.map((r) => r.exp_us ?? 0), barMaxWidth: 36 },
    ],
  };
}
