import { describe, expect, it } from 'vitest';
import { averageRows, phaseDuration, phasesOption, reduceDuration, type Phases } from './views/stepPhases';

const ph: Phases = {
  labels: { iteration_interval: 'Iteration interval (data wait)', fp_and_bp: 'Forward + backward', tail: 'Tail', reduce: 'Reduce' },
  steps: [
    {
      step: 1,
      total_us: 10,
      start_us: 0,
      phases: [
        { phase: 'iteration_interval', name: '', offset_us: 0, dur_us: 1 },
        { phase: 'fp_and_bp', name: '', offset_us: 1, dur_us: 6 },
        { phase: 'reduce', name: 'r0', offset_us: 5, dur_us: 2 },
        { phase: 'reduce', name: 'r1', offset_us: 7, dur_us: 1.5 },
        { phase: 'tail', name: '', offset_us: 7, dur_us: 3 },
      ],
    },
    { step: 2, total_us: 8, start_us: 10, phases: [{ phase: 'fp_and_bp', name: '', offset_us: 0, dur_us: 8 }] },
  ],
  steps_total: 2,
  average_source: 'computed',
  average: {
    total_us: 9, iteration_interval_us: 0.5, fp_and_bp_us: 7, tail_us: 1.5,
    iteration_interval_pct: 5.56, fp_and_bp_pct: 77.78, tail_pct: 16.67,
    reduce: [{ name: 'r0', offset_us: 5, dur_us: 2, steps: 1 }],
  },
};

describe('step phases', () => {
  it('sums the phases of a step', () => {
    expect(phaseDuration(ph.steps[0], 'fp_and_bp')).toBe(6);
    expect(reduceDuration(ph.steps[0])).toBe(3.5);
    expect(phaseDuration(ph.steps[1], 'tail')).toBe(0);
  });
  it('counts overlapping reduce segments once', () => {
    const st = { ...ph.steps[0], phases: [
      { phase: 'reduce', name: 'a', offset_us: 1, dur_us: 4 },
      { phase: 'reduce', name: 'b', offset_us: 2, dur_us: 1 },
      { phase: 'reduce', name: 'c', offset_us: 4, dur_us: 3 },
      { phase: 'reduce', name: 'd', offset_us: 9, dur_us: 1 },
    ] };
    expect(reduceDuration(st)).toBe(7);
  });
  it('stacks the three phases per step and puts reduce beside them', () => {
    const opt = phasesOption(ph) as { series: { name: string; stack?: string; data: number[] }[]; xAxis: { data: string[] } };
    expect(opt.xAxis.data).toEqual(['1', '2']);
    expect(opt.series.map((s) => s.name)).toEqual(['Iteration interval (data wait)', 'Forward + backward', 'Tail', 'Reduce (any stream)']);
    expect(opt.series[1].data).toEqual([6, 8]);
    expect(opt.series[3].stack).toBeUndefined();
    expect(opt.series[3].data).toEqual([3.5, 0]);
  });
  it('has no reduce bar without reduce segments', () => {
    const none = { ...ph, steps: [ph.steps[1]] };
    const opt = phasesOption(none) as { series: unknown[] };
    expect(opt.series).toHaveLength(3);
  });
  it('lists the averages with shares, the total, then each reduce segment', () => {
    const rows = averageRows(ph);
    expect(rows.map((r) => r.phase)).toEqual(['Iteration interval (data wait)', 'Forward + backward', 'Tail', 'Step total', 'r0']);
    expect(rows[1].share_pct).toBe(77.78);
    expect(rows[4].offset_us).toBe(5);
  });
  it('escapes names in the tooltip', () => {
    const evil = { ...ph, steps: [{ ...ph.steps[0], step: '<b>' as unknown as number }] };
    const opt = phasesOption(evil) as { tooltip: { formatter: (p: unknown) => string } };
    const html = opt.tooltip.formatter([{ dataIndex: 0, seriesName: '<img>', value: 1 }]);
    expect(html).not.toContain('<img>');
    expect(html).toContain('&lt;b&gt;');
  });
});
