import { describe, expect, it } from 'vitest';
import { dispatchStepsOption, gapWindow, pathsText, pctText, verdict, type DispatchStep, type DispatchSummary } from './dispatch';

const step = (over: Partial<DispatchStep>): DispatchStep => ({
  step: 3, start_us: 1000, end_us: 21000, calls: 39, launches: 39,
  queue_wait_p50_us: 5, queue_wait_p95_us: 9, queue_wait_max_us: 11,
  dequeue_gaps_over_1ms: 12, dequeue_gap_total_us: 14400, dequeue_gap_max_us: 1224,
  worst_gap_start_us: 12000, worst_gap_end_us: 13224, launch_delay_p50_us: 27, launch_delay_p95_us: 640,
  device_idle_us: 8800, dispatch_bound_idle_us: 8500, dispatch_bound_pct: 96.6, dispatch_bound_step_pct: 42.5,
  ...over,
});

const summary = (over: Partial<DispatchSummary>): DispatchSummary => ({
  kind: 'task_queue', gap_threshold_us: 1000, calls: 78, launches: 78, paths: { aclnn: 76 },
  dequeue_gaps_over_1ms: 0, dequeue_gap_total_us: 0, launch_delay_p50_us: 1500, launch_delay_p95_us: 3500,
  device_idle_us: 700, dispatch_bound_idle_us: 500, dispatch_bound_pct: 70, dispatch_bound_step_pct: 3.5,
  ...over,
});

describe('gapWindow', () => {
  it('adds half the gap on each side, in whole µs outward', () => {
    expect(gapWindow({ start_us: 1000.4, end_us: 3000.6 })).toEqual({ t0: Math.floor(1000.4 - 1000.1), t1: Math.ceil(3000.6 + 1000.1) });
  });
  it('keeps at least 1 µs of margin', () => {
    expect(gapWindow({ start_us: 10, end_us: 10 })).toEqual({ t0: 9, t1: 11 });
  });
  it('contains the gap on epoch-µs clocks', () => {
    const g = { start_us: 1717400000012525.2, end_us: 1717400000013749.5 };
    const w = gapWindow(g);
    expect(w.t0).toBeLessThanOrEqual(g.start_us);
    expect(w.t1).toBeGreaterThanOrEqual(g.end_us);
    expect(w.t1 - w.t0).toBeLessThanOrEqual(2 * (g.end_us - g.start_us) + 2);
  });
});

describe('pathsText / pctText / verdict', () => {
  it('lists paths by count', () => {
    expect(pathsText({ aclnn: 76, aclop: 2, cuda: 0 })).toBe('aclnn 76 · aclop 2');
    expect(pathsText({})).toBe('');
  });
  it('formats percentages', () => {
    expect(pctText(41.68)).toBe('41.7 %');
    expect(pctText(3.456)).toBe('3.46 %');
    expect(pctText(null)).toBe('—');
  });
  it('calls a profile dispatch-bound on gaps or on idle time waiting for launches', () => {
    expect(verdict(summary({}))).toBe('not dispatch-bound');
    expect(verdict(summary({ dequeue_gaps_over_1ms: 3 }))).toBe('dispatch-bound');
    expect(verdict(summary({ dispatch_bound_step_pct: 32 }))).toBe('dispatch-bound');
    expect(verdict(summary({ dispatch_bound_step_pct: null }))).toBe('unknown');
  });
});

describe('dispatchStepsOption', () => {
  it('has one category per step and splits the idle time', () => {
    const o = dispatchStepsOption([step({}), step({ step: 4, device_idle_us: 100, dispatch_bound_idle_us: 150 })]) as {
      xAxis: { data: string[] };
      series: { name: string; data: number[] }[];
    };
    expect(o.xAxis.data).toEqual(['3', '4']);
    const by = Object.fromEntries(o.series.map((s) => [s.name, s.data]));
    expect(by['Dequeue gaps > 1 ms']).toEqual([14400, 14400]);
    expect(by['Idle: waiting for a launch']).toEqual([8500, 150]);
    expect(by['Idle: other']).toEqual([300, 0]); // never negative
    expect(by['Launch delay p95']).toEqual([640, 640]);
  });
  it('numbers steps without ids and escapes names in the tooltip', () => {
    const o = dispatchStepsOption([step({ step: null })]) as {
      xAxis: { data: string[] };
      tooltip: { formatter: (p: unknown) => string };
    };
    expect(o.xAxis.data).toEqual(['1']);
    const html = o.tooltip.formatter([{ dataIndex: 0 }]);
    expect(html).toContain('Dequeue gaps &gt; 1 ms');
    expect(html).not.toContain('<script');
  });
});
