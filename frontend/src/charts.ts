// Pure builders of ECharts options. Every tooltip is an HTML string built with escapeHtml,
// because ECharts renders tooltip formatter output as HTML; names from profiles (kernel and
// operator names) must stay text. Legends and labels are drawn on the canvas.
import type { MemoryResponse, StepsResponse } from './api';
import { escapeHtml, formatDuration, formatPercent, formatSizeMB, humanize, truncate } from './format';

// The option objects are plain data; a loose type keeps the builders testable without
// pulling ECharts' large option typings into every module.
export type ChartOption = Record<string, unknown>;

export const PALETTE = [
  '#f57c00', '#1e88e5', '#43a047', '#8e24aa', '#e53935', '#00897b', '#fdd835', '#6d4c41',
  '#3949ab', '#c0ca33', '#d81b60', '#546e7a', '#26c6da', '#ff8a65', '#9ccc65', '#7e57c2',
];

const OTHER_COLOR = '#9e9e9e';

function swatch(color: unknown): string {
  const c = typeof color === 'string' && /^#[0-9a-fA-F]{3,8}$/.test(color) ? color : '#888';
  return `<span style="display:inline-block;width:9px;height:9px;border-radius:50%;margin-right:6px;background:${c}"></span>`;
}

function row(color: unknown, name: string, value: string): string {
  return `<div style="display:flex;justify-content:space-between;gap:16px"><span>${swatch(color)}${escapeHtml(
    name,
  )}</span><b>${escapeHtml(value)}</b></div>`;
}

const baseTooltip = {
  confine: true,
  // Long kernel names wrap instead of overflowing the chart.
  extraCssText: 'max-width:480px;white-space:normal;word-break:break-all;',
};

/** Stacked bars: one bar per step, one stack segment per breakdown category. */
export function stepBreakdownOption(data: StepsResponse): ChartOption {
  const steps = data.steps.map((s) => String(s.step));
  const series = data.categories.map((cat, i) => ({
    name: humanize(cat),
    type: 'bar',
    stack: 'total',
    emphasis: { focus: 'series' },
    barMaxWidth: 48,
    itemStyle: { color: PALETTE[i % PALETTE.length] },
    data: data.steps.map((s) => s.breakdown[cat] ?? 0),
  }));
  return {
    backgroundColor: 'transparent',
    color: PALETTE,
    tooltip: {
      ...baseTooltip,
      trigger: 'axis',
      axisPointer: { type: 'shadow' },
      formatter: (params: unknown) => {
        const items = (Array.isArray(params) ? params : [params]) as {
          axisValue?: string;
          dataIndex: number;
          seriesName: string;
          value: number;
          color: unknown;
        }[];
        if (items.length === 0) return '';
        const idx = items[0].dataIndex;
        const step = data.steps[idx];
        const head = `<div style="margin-bottom:4px"><b>Step ${escapeHtml(step ? step.step : items[0].axisValue)}</b> · ${escapeHtml(
          formatDuration(step ? step.total_us : null),
        )}</div>`;
        return head + items.map((p) => row(p.color, p.seriesName, formatDuration(p.value))).join('');
      },
    },
    legend: { type: 'scroll', top: 0 },
    grid: { left: 8, right: 16, top: 36, bottom: 8, containLabel: true },
    xAxis: { type: 'category', data: steps, name: 'Step', nameLocation: 'middle', nameGap: 26 },
    yAxis: { type: 'value', axisLabel: { formatter: (v: number) => formatDuration(v) } },
    series,
  };
}

/** Average of each breakdown category over all steps. */
export function averageBreakdown(data: StepsResponse): { name: string; value: number }[] {
  const n = data.steps.length;
  if (n === 0) return [];
  return data.categories.map((cat) => ({
    name: cat,
    value: data.steps.reduce((acc, s) => acc + (s.breakdown[cat] ?? 0), 0) / n,
  }));
}

export interface PieItem {
  name: string;
  value: number;
}

/**
 * Top `topN` items by value as pie slices, the rest summed into "Other". `total` (if
 * known, e.g. the sum over all rows on the server) makes "Other" include rows not fetched.
 */
export function topNWithOther(items: PieItem[], topN: number, total?: number): PieItem[] {
  const sorted = [...items].filter((i) => i.value > 0).sort((a, b) => b.value - a.value);
  const top = sorted.slice(0, topN);
  const topSum = top.reduce((a, i) => a + i.value, 0);
  const all = total ?? sorted.reduce((a, i) => a + i.value, 0);
  const other = all - topSum;
  // Ignore rounding noise.
  if (other > Math.max(1e-9, all * 1e-6)) top.push({ name: 'Other', value: other });
  return top;
}

export interface PieOptions {
  title?: string;
  /** Value formatter for tooltips (default: duration in µs). */
  format?: (v: number) => string;
  humanizeNames?: boolean;
  /** Legend beside the pie (wide cards) or below it (narrow cards). */
  legend?: 'right' | 'bottom';
}

export function pieOption(items: PieItem[], opts: PieOptions = {}): ChartOption {
  const fmt = opts.format ?? formatDuration;
  const legendAt = opts.legend ?? 'right';
  const display = (n: string) => (opts.humanizeNames ? humanize(n) : n);
  const data = items.map((it, i) => ({
    name: display(it.name),
    value: it.value,
    itemStyle: { color: it.name === 'Other' ? OTHER_COLOR : PALETTE[i % PALETTE.length] },
  }));
  return {
    backgroundColor: 'transparent',
    color: PALETTE,
    title: opts.title ? { text: opts.title, left: 'center', top: 0, textStyle: { fontSize: 13, fontWeight: 500 } } : undefined,
    tooltip: {
      ...baseTooltip,
      trigger: 'item',
      formatter: (p: { name: string; value: number; percent: number; color: unknown }) =>
        row(p.color, p.name, `${fmt(p.value)} (${formatPercent(p.percent / 100)})`),
    },
    legend:
      legendAt === 'bottom'
        ? // Few categories (step breakdown): a wrapping legend shows them all.
          { type: 'plain', orient: 'horizontal', left: 8, right: 8, bottom: 0, formatter: (n: string) => truncate(n, 36) }
        : {
            type: 'scroll',
            orient: 'vertical',
            left: '56%',
            right: 4,
            top: 'middle',
            formatter: (n: string) => truncate(n, 40),
            textStyle: { width: 200, overflow: 'truncate' },
          },
    series: [
      {
        type: 'pie',
        radius: ['0%', legendAt === 'bottom' ? '60%' : '70%'],
        center: legendAt === 'bottom' ? ['50%', '40%'] : ['28%', '50%'],
        avoidLabelOverlap: true,
        label: { show: false },
        labelLine: { show: false },
        data,
      },
    ],
  };
}

export interface MemoryChartData {
  device: string;
  startUs: number;
}

/** Time origin of the memory view: the API's start_us, else the first sample. */
export function memoryStart(mem: MemoryResponse): number {
  if (typeof mem.start_us === 'number' && Number.isFinite(mem.start_us)) return mem.start_us;
  let min = Infinity;
  for (const c of mem.curves) for (const p of c.points) if (p[0] < min) min = p[0];
  return Number.isFinite(min) ? min : 0;
}

/** X coordinate of a memory sample: time since the profile's start, in µs. */
export function memoryX(tsUs: number, startUs: number): number {
  return tsUs - startUs;
}

/**
 * Allocated (solid) and reserved (dashed) curves of one device, one pair per component,
 * with each curve's peak marked. X is relative µs from `start_us`.
 */
export function memoryCurveOption(mem: MemoryResponse, device: string): ChartOption {
  const start = memoryStart(mem);
  const curves = mem.curves.filter((c) => c.device === device);
  const series: Record<string, unknown>[] = [];
  curves.forEach((c, i) => {
    const color = PALETTE[i % PALETTE.length];
    for (const [kind, idx] of [['Allocated', 1], ['Reserved', 2]] as const) {
      const pts = c.points.map((p) => [memoryX(p[0], start), p[idx]]);
      // A producer may record only one of the two (e.g. APP has reserved only).
      if (!pts.some((p) => p[1] !== null && p[1] !== undefined)) continue;
      let peak: [number, number] | undefined;
      for (const [x, y] of pts) if (x !== null && y !== null && (peak === undefined || y > peak[1])) peak = [x, y];
      series.push({
        name: `${c.component} ${kind}`,
        type: 'line',
        step: 'end',
        showSymbol: false,
        sampling: 'lttb',
        lineStyle: { width: 1.5, type: kind === 'Reserved' ? 'dashed' : 'solid', color },
        itemStyle: { color },
        data: pts,
        markPoint: peak
          ? {
              symbol: 'pin',
              symbolSize: 36,
              label: { fontSize: 9, formatter: () => 'peak' },
              tooltip: {
                formatter: () =>
                  `${escapeHtml(`${c.component} ${kind} peak`)}: <b>${escapeHtml(formatSizeMB(peak![1]))}</b> at ${escapeHtml(
                    formatDuration(peak![0]),
                  )}`,
              },
              data: [{ coord: peak, value: peak[1] }],
            }
          : undefined,
      });
    }
  });
  return {
    backgroundColor: 'transparent',
    color: PALETTE,
    animation: false,
    tooltip: {
      ...baseTooltip,
      trigger: 'axis',
      formatter: (params: unknown) => {
        const items = (Array.isArray(params) ? params : [params]) as {
          seriesName: string;
          value: [number, number];
          color: unknown;
        }[];
        if (items.length === 0) return '';
        const head = `<div style="margin-bottom:4px"><b>${escapeHtml(formatDuration(items[0].value[0]))}</b></div>`;
        return head + items.map((p) => row(p.color, p.seriesName, formatSizeMB(p.value[1]))).join('');
      },
    },
    legend: { type: 'scroll', top: 0 },
    grid: { left: 8, right: 24, top: 36, bottom: 8, containLabel: true },
    brush: {
      xAxisIndex: 0,
      brushType: 'lineX',
      brushMode: 'single',
      transformable: false,
      throttleType: 'debounce',
      throttleDelay: 200,
      brushStyle: { color: 'rgba(245,124,0,0.15)', borderColor: 'rgba(245,124,0,0.8)', borderWidth: 1 },
    },
    toolbox: { show: false },
    xAxis: {
      type: 'value',
      min: 0,
      max: 'dataMax',
      axisLabel: { formatter: (v: number) => formatDuration(v) },
    },
    yAxis: { type: 'value', axisLabel: { formatter: (v: number) => formatSizeMB(v) } },
    series,
  };
}

function withFont(obj: unknown, key: string, size: number): Record<string, unknown> {
  const o = (obj && typeof obj === 'object' ? obj : {}) as Record<string, unknown>;
  const inner = (o[key] && typeof o[key] === 'object' ? o[key] : {}) as Record<string, unknown>;
  return { ...o, [key]: { ...inner, fontSize: inner.fontSize ?? size } };
}

/** ECharts text sizes are pixels; scale them with the page's font size. */
export function scaleFonts(option: ChartOption, scale: number): ChartOption {
  if (Math.abs(scale - 1) < 0.05) return option;
  const px = Math.round(12 * scale);
  const out: ChartOption = { ...option, textStyle: { ...((option.textStyle as object) ?? {}), fontSize: px } };
  for (const axis of ['xAxis', 'yAxis']) {
    if (option[axis]) out[axis] = withFont(withFont(option[axis], 'axisLabel', px), 'nameTextStyle', px);
  }
  if (option.legend) {
    const lg = withFont(option.legend, 'textStyle', px);
    out.legend = { ...lg, itemWidth: Math.round(25 * scale), itemHeight: Math.round(14 * scale) };
  }
  if (option.tooltip) out.tooltip = withFont(option.tooltip, 'textStyle', Math.round(14 * scale));
  return out;
}

/**
 * A vertical legend placed at a percentage from the left gets a text width that fits the
 * rest of the chart (ECharts truncates legend text only to a pixel width).
 */
export function fitLegend(option: ChartOption, chartWidth: number, scale = 1): Record<string, unknown> | null {
  const lg = option.legend as Record<string, unknown> | undefined;
  if (!lg || lg.orient !== 'vertical' || typeof lg.left !== 'string' || !lg.left.endsWith('%') || chartWidth <= 0) return null;
  const leftFrac = parseFloat(lg.left) / 100;
  const itemWidth = typeof lg.itemWidth === 'number' ? lg.itemWidth : 25 * scale;
  const width = Math.max(40, Math.floor(chartWidth * (1 - leftFrac) - itemWidth - 24 * scale));
  const ts = (lg.textStyle ?? {}) as Record<string, unknown>;
  return { ...lg, textStyle: { ...ts, width, overflow: 'truncate' } };
}
