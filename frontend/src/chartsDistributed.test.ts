import { describe, expect, it } from 'vitest';
import { compareBarsOption, rankBreakdownOption, stepHeatmapOption } from './chartsDistributed';
import { decodeProfile, encodeProfile } from './apiDistributed';

type Fmt = (p: unknown) => string;

describe('distributed charts', () => {
  it('escapes worker names in the rank tooltip', () => {
    const opt = rankBreakdownOption([
      { rank: 0, worker: '<img src=x onerror=alert(1)>', step_count: 1, avg_total_us: 10, avg_computing_us: 5,
        avg_communication_not_overlapped_us: 3, avg_overlapped_us: 1, avg_free_us: 2, avg_comm_us: 4, avg_wait_us: 1 },
    ], ['computing', 'communication_not_overlapped', 'overlapped', 'free']);
    const html = ((opt.tooltip as { formatter: Fmt }).formatter)([{ dataIndex: 0 }]);
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;img');
    expect((opt.series as unknown[]).length).toBe(3);
  });

  it('builds a heatmap cell per rank row and step', () => {
    const opt = stepHeatmapOption({ steps: [1, 2], rows: [{ label: 'rank 0', ranks: [0, 0] }], values: [[5, null]], ranks_per_row: 1, aggregate: null });
    const series = opt.series as { data: unknown[] }[];
    expect(series[0].data).toEqual([[0, 0, 5], [1, 0, null]]);
  });

  it('compares base and experiment per category', () => {
    const opt = compareBarsOption([{ category: '<b>', base_us: 1, exp_us: 2, delta_us: 1, delta_pct: 100 }]);
    const html = ((opt.tooltip as { formatter: Fmt }).formatter)([{ dataIndex: 0 }]);
    expect(html).toContain('&lt;b&gt;');
    expect(html).toContain('+100.0%');
  });
});

describe('profile keys in the URL', () => {
  it('round-trips and rejects garbage', () => {
    const p = { run: 'a/b', worker: 'rank0', span: '' };
    expect(decodeProfile(encodeProfile(p))).toEqual(p);
    expect(decodeProfile('not json')).toBeUndefined();
    expect(decodeProfile('[1,2,3]')).toBeUndefined();
  });
});
