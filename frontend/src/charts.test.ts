import { describe, expect, it } from 'vitest';
import { averageBreakdown, fitLegend, memoryCurveOption, pieOption, scaleFonts, stepBreakdownOption, topNWithOther } from './charts';
import type { MemoryResponse, StepsResponse } from './api';

const steps: StepsResponse = {
  categories: ['computing', 'free'],
  steps: [
    { step: 1, total_us: 100, breakdown: { computing: 70, free: 30 } },
    { step: 2, total_us: 200, breakdown: { computing: 150, free: 50 } },
  ],
};

type Fmt = (p: unknown) => string;

describe('step breakdown', () => {
  it('stacks one series per category', () => {
    const opt = stepBreakdownOption(steps) as { series: { name: string; stack: string; data: number[] }[]; xAxis: { data: string[] } };
    expect(opt.xAxis.data).toEqual(['1', '2']);
    expect(opt.series.map((s) => s.name)).toEqual(['Computing', 'Free']);
    expect(opt.series[0].data).toEqual([70, 150]);
    expect(opt.series.every((s) => s.stack === 'total')).toBe(true);
  });
  it('averages categories', () => {
    expect(averageBreakdown(steps)).toEqual([
      { name: 'computing', value: 110 },
      { name: 'free', value: 40 },
    ]);
    expect(averageBreakdown({ categories: ['a'], steps: [] })).toEqual([]);
  });
  it('escapes the tooltip', () => {
    const evil: StepsResponse = { categories: ['<b>x</b>'], steps: [{ step: '<i>', total_us: 1, breakdown: { '<b>x</b>': 1 } }] };
    const opt = stepBreakdownOption(evil) as { tooltip: { formatter: Fmt } };
    const html = opt.tooltip.formatter([{ dataIndex: 0, seriesName: '<b>x</b>', value: 1, color: '#fff' }]);
    expect(html).not.toContain('<b>x</b>');
    expect(html).not.toContain('<i>');
    expect(html).toContain('&lt;b&gt;x&lt;/b&gt;');
  });
});

describe('pie', () => {
  it('keeps top N and sums the rest into Other', () => {
    const items = [
      { name: 'a', value: 5 },
      { name: 'b', value: 3 },
      { name: 'c', value: 2 },
      { name: 'z', value: 0 },
    ];
    expect(topNWithOther(items, 2)).toEqual([
      { name: 'a', value: 5 },
      { name: 'b', value: 3 },
      { name: 'Other', value: 2 },
    ]);
    expect(topNWithOther(items, 5)).toEqual(items.slice(0, 3));
    // A server-side total includes rows that were not fetched.
    expect(topNWithOther(items.slice(0, 1), 1, 10)).toEqual([
      { name: 'a', value: 5 },
      { name: 'Other', value: 5 },
    ]);
  });
  it('escapes names in tooltips', () => {
    const opt = pieOption([{ name: '<img src=x onerror=alert(1)>', value: 10 }]) as { tooltip: { formatter: Fmt }; series: { data: { name: string }[] }[] };
    expect(opt.series[0].data[0].name).toBe('<img src=x onerror=alert(1)>');
    const html = opt.tooltip.formatter({ name: '<img src=x onerror=alert(1)>', value: 10, percent: 100, color: 'red;"><script>' });
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('10 µs (100.0%)');
  });
});

describe('memory curves', () => {
  const mem: MemoryResponse = {
    start_us: 1000,
    devices: [{ device: 'NPU:0', peak_allocated_mb: 3, peak_reserved_mb: 4 }],
    curves: [
      { device: 'NPU:0', component: 'PTA', points: [[1000, 1, 2], [1500, 3, 4], [2000, 2, 4]] },
      { device: 'CPU', component: 'X', points: [[1000, 1, 1]] },
    ],
    component_peaks: [],
  };
  it('draws allocated and reserved per component of the device, relative to start, with peaks', () => {
    const opt = memoryCurveOption(mem, 'NPU:0') as {
      series: { name: string; data: number[][]; markPoint: { data: { coord: number[] }[] } }[];
    };
    expect(opt.series.map((s) => s.name)).toEqual(['PTA Allocated', 'PTA Reserved']);
    expect(opt.series[0].data).toEqual([[0, 1], [500, 3], [1000, 2]]);
    expect(opt.series[0].markPoint.data[0].coord).toEqual([500, 3]);
    expect(opt.series[1].markPoint.data[0].coord).toEqual([500, 4]);
  });
});

describe('font scaling', () => {
  it('leaves options alone at the design size and scales text on large screens', () => {
    const opt = { xAxis: { type: 'value' }, legend: { top: 0 }, tooltip: {} };
    expect(scaleFonts(opt, 1)).toBe(opt);
    const big = scaleFonts(opt, 1.5) as { xAxis: { axisLabel: { fontSize: number } }; legend: { textStyle: { fontSize: number }; itemWidth: number } };
    expect(big.xAxis.axisLabel.fontSize).toBe(18);
    expect(big.legend.textStyle.fontSize).toBe(18);
    expect(big.legend.itemWidth).toBe(38);
  });
});

describe('legend fitting', () => {
  it('sizes vertical legend text to the space right of the pie', () => {
    const opt = pieOption([{ name: 'a', value: 1 }]);
    const lg = fitLegend(opt, 500) as { textStyle: { width: number; overflow: string } };
    expect(lg.textStyle.width).toBe(Math.floor(500 * (1 - 0.56) - 25 - 24));
    expect(lg.textStyle.overflow).toBe('truncate');
    expect(fitLegend(pieOption([{ name: 'a', value: 1 }], { legend: 'bottom' }), 500)).toBeNull();
  });
});
