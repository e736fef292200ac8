import { describe, expect, it } from 'vitest';
import type { KernelRow } from '../api';
import { BOUND_CLASSES, PIPES, blockText, boundFilter, counterColumns, hasCounters, pipeStackOption, pmuValue } from './kernelCounters';

function row(name: string, pmu: Record<string, number> | undefined, extra: Partial<KernelRow> = {}): KernelRow {
  return { name, calls: 1, total_us: 10, avg_us: 10, min_us: 10, max_us: 10, wait_us: 0, pmu, ...extra };
}

type Opt = {
  yAxis: { data: string[] };
  series: { name: string; stack: string; data: number[] }[];
  tooltip: { formatter: (p: { dataIndex: number; seriesName: string; value: number }[]) => string };
};

describe('kernel counters', () => {
  it('accepts only known bound classes', () => {
    expect(boundFilter('none')).toBe('none');
    expect(boundFilter('memory')).toBe('memory');
    expect(boundFilter('fast')).toBeUndefined();
    expect(boundFilter(undefined)).toBeUndefined();
    expect(BOUND_CLASSES).toContain('mixed');
  });
  it('knows when a page has counters', () => {
    expect(hasCounters({ counters: { pipes: [] } })).toBe(true);
    expect(hasCounters({})).toBe(false);
    expect(hasCounters(null)).toBe(false);
  });
  it('reads ratios from the pmu map', () => {
    const r = row('k', { mac_ratio: 0.9, vec_ratio: Number.NaN });
    expect(pmuValue(r, 'mac_ratio')).toBe(0.9);
    expect(pmuValue(r, 'vec_ratio')).toBeUndefined();
    expect(pmuValue(row('x', undefined), 'mac_ratio')).toBeUndefined();
  });
  it('describes Block Num against the cores', () => {
    expect(blockText(row('a', {}, { block_dim: 64, core_num: 48, waves: 2, tail_waste: 1 / 3 }))).toBe('64 / 48 (2 waves, 33% idle)');
    expect(blockText(row('b', {}, { block_dim: 48, core_num: 48, waves: 1, tail_waste: 0 }))).toBe('48 / 48');
    expect(blockText(row('c', {}, { block_dim: 20 }))).toBe('20');
    expect(blockText(row('d', {}))).toBe('');
  });
  it('formats the counter columns as percentages, sortable by the flat API column', () => {
    const cols = counterColumns();
    const mac = cols.find((c) => c.key === 'mac_ratio')!;
    expect(mac.text!(row('k', { mac_ratio: 0.875 }))).toBe('87.5%');
    expect(mac.text!(row('k', {}))).toBe('—');
    const bound = cols.find((c) => c.key === 'bound')!;
    expect(bound.text!(row('k', {}, { bound: 'none' }))).toBe('No pipe over 80%');
  });
  it('stacks one segment per pipe, largest kernel on top, skipping rows without counters', () => {
    const rows = [row('big', { mac_ratio: 0.9, mte2_ratio: 0.6 }), row('cpu', undefined), row('small', { vec_ratio: 0.5 })];
    const opt = pipeStackOption(rows, 10) as unknown as Opt;
    expect(opt.yAxis.data).toEqual(['small', 'big']);
    expect(opt.series.map((s) => s.name)).toEqual(PIPES.map((p) => p.label));
    expect(opt.series.every((s) => s.stack === 'pipes')).toBe(true);
    const mac = opt.series[PIPES.findIndex((p) => p.key === 'mac_ratio')];
    expect(mac.data).toEqual([0, 0.9]);
    expect((pipeStackOption(rows, 1) as unknown as Opt).yAxis.data).toEqual(['big']);
  });
  it('escapes kernel names in the tooltip', () => {
    const opt = pipeStackOption([row('<img src=x>', { mac_ratio: 0.5 })]) as unknown as Opt;
    const html = opt.tooltip.formatter([{ dataIndex: 0, seriesName: 'Cube (mac)', value: 0.5 }]);
    expect(html).toContain('&lt;img src=x&gt;');
    expect(html).not.toContain('<img');
  });
});
