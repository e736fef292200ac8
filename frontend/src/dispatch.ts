// Pure helpers of the Dispatch view (GET /dispatch, docs/http_api.md "Host dispatch path"):
// the response types, the per-step chart and the timeline window a worst gap opens.
import type { ChartOption } from './charts';
import { PALETTE } from './charts';
import { escapeHtml, formatDuration, trimNumber } from './format';

export interface DispatchOp {
  name: string;
  calls: number;
  enqueue_us: number | null;
  queue_wait_us: number | null;
  queue_wait_max_us: number | null;
  launch_us: number | null;
  launches: number;
  launch_delay_us: number | null;
  launch_delay_max_us: number | null;
  compile_us: number | null;
  path: 'aclnn' | 'aclop' | 'cuda' | null;
}

export interface DispatchStep {
  step: number | null;
  start_us: number;
  end_us: number;
  calls: number;
  launches: number;
  queue_wait_p50_us: number | null;
  queue_wait_p95_us: number | null;
  queue_wait_max_us: number | null;
  dequeue_gaps_over_1ms: number;
  dequeue_gap_total_us: number | null;
  dequeue_gap_max_us: number | null;
  worst_gap_start_us: number | null;
  worst_gap_end_us: number | null;
  launch_delay_p50_us: number | null;
  launch_delay_p95_us: number | null;
  device_idle_us: number | null;
  dispatch_bound_idle_us: number | null;
  dispatch_bound_pct: number | null;
  dispatch_bound_step_pct: number | null;
}

export interface DispatchGap {
  step: number | null;
  start_us: number;
  end_us: number;
  gap_us: number;
  before: string;
  after: string;
}

export interface DispatchSummary {
  kind: 'task_queue' | 'direct' | 'cuda' | null;
  gap_threshold_us: number;
  calls: number;
  launches: number;
  paths: Record<string, number>;
  dequeue_gaps_over_1ms: number;
  dequeue_gap_total_us: number | null;
  launch_delay_p50_us: number | null;
  launch_delay_p95_us: number | null;
  device_idle_us: number | null;
  dispatch_bound_idle_us: number | null;
  dispatch_bound_pct: number | null;
  dispatch_bound_step_pct: number | null;
}

export interface DispatchResponse {
  total_rows: number;
  offset: number;
  ops: DispatchOp[];
  steps: DispatchStep[];
  worst_gaps: DispatchGap[];
  summary: DispatchSummary;
}

/** The timeline window a gap opens: the gap with half its length on either side (at least
 * 1 µs), so the Dequeue events around it are in view; whole µs, outward. */
export function gapWindow(g: { start_us: number; end_us: number }): { t0: number; t1: number } {
  const margin = Math.max((g.end_us - g.start_us) / 2, 1);
  return { t0: Math.floor(g.start_us - margin), t1: Math.ceil(g.end_us + margin) };
}

/** "aclnn 76 · aclop 2": how many calls took each path, most first. */
export function pathsText(paths: Record<string, number>): string {
  const e = Object.entries(paths).filter(([, n]) => n > 0);
  e.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return e.map(([p, n]) => `${p} ${n}`).join(' · ');
}

/** "41.7 %" or "—". */
export function pctText(v: number | null | undefined): string {
  return typeof v === 'number' && Number.isFinite(v) ? `${trimNumber(v, Math.abs(v) >= 10 ? 1 : 2)} %` : '—';
}

/** The verdict of the summary: the share of the steps the device idled waiting for the host. */
export function verdict(s: DispatchSummary, boundPct = 15): 'dispatch-bound' | 'not dispatch-bound' | 'unknown' {
  const v = s.dispatch_bound_step_pct;
  if (typeof v !== 'number' || !Number.isFinite(v)) return 'unknown';
  return v >= boundPct || s.dequeue_gaps_over_1ms > 0 ? 'dispatch-bound' : 'not dispatch-bound';
}

const n0 = (v: number | null | undefined) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** Per step: dequeue gap time and dispatch-bound device idle (bars, left axis), the device's
 * other idle time stacked on it, and the launch delay p95 (line, right axis). */
export function dispatchStepsOption(steps: DispatchStep[]): ChartOption {
  const labels = steps.map((s, i) => (s.step === null ? String(i + 1) : String(s.step)));
  const bound = steps.map((s) => n0(s.dispatch_bound_idle_us));
  const otherIdle = steps.map((s) => Math.max(n0(s.device_idle_us) - n0(s.dispatch_bound_idle_us), 0));
  const gaps = steps.map((s) => n0(s.dequeue_gap_total_us));
  const delay = steps.map((s) => n0(s.launch_delay_p95_us));
  return {
    backgroundColor: 'transparent',
    color: PALETTE,
    tooltip: {
      trigger: 'axis',
      confine: true,
      axisPointer: { type: 'shadow' },
      formatter: (params: unknown) => {
        const items = (Array.isArray(params) ? params : [params]) as { dataIndex: number }[];
        if (!items.length) return '';
        const s = steps[items[0].dataIndex];
        if (!s) return '';
        const line = (k: string, v: string) =>
          `<div style="display:flex;justify-content:space-between;gap:16px"><span>${escapeHtml(k)}</span><b>${escapeHtml(v)}</b></div>`;
        return (
          `<div style="margin-bottom:4px"><b>Step ${escapeHtml(labels[items[0].dataIndex])}</b> · ${escapeHtml(formatDuration(s.end_us - s.start_us))}</div>` +
          line('Dequeue gaps > 1 ms', `${s.dequeue_gaps_over_1ms} · ${formatDuration(s.dequeue_gap_total_us)}`) +
          line('Worst gap', formatDuration(s.dequeue_gap_max_us)) +
          line('Device idle', formatDuration(s.device_idle_us)) +
          line('… waiting for a launch', `${formatDuration(s.dispatch_bound_idle_us)} (${pctText(s.dispatch_bound_pct)})`) +
          line('Launch delay p50 / p95', `${formatDuration(s.launch_delay_p50_us)} / ${formatDuration(s.launch_delay_p95_us)}`) +
          line('Queue wait p50 / p95', `${formatDuration(s.queue_wait_p50_us)} / ${formatDuration(s.queue_wait_p95_us)}`)
        );
      },
    },
    legend: { type: 'scroll', top: 0 },
    grid: { left: 8, right: 16, top: 36, bottom: 8, containLabel: true },
    xAxis: { type: 'category', data: labels, name: 'Step', nameLocation: 'middle', nameGap: 26 },
    yAxis: [
      { type: 'value', axisLabel: { formatter: (v: number) => formatDuration(v) } },
      { type: 'value', axisLabel: { formatter: (v: number) => formatDuration(v) }, splitLine: { show: false } },
    ],
    series: [
      { name: 'Dequeue gaps > 1 ms', type: 'bar', barMaxWidth: 32, itemStyle: { color: PALETTE[4] }, data: gaps },
      { name: 'Idle: waiting for a launch', type: 'bar', stack: 'idle', barMaxWidth: 32, itemStyle: { color: PALETTE[0] }, data: bound },
      { name: 'Idle: other', type: 'bar', stack: 'idle', barMaxWidth: 32, itemStyle: { color: '#9e9e9e' }, data: otherIdle },
      { name: 'Launch delay p95', type: 'line', yAxisIndex: 1, symbolSize: 6, itemStyle: { color: PALETTE[1] }, data: delay },
    ],
  };
}
