import { describe, expect, it } from 'vitest';
import type { AdvisorFinding, AdvisorRule } from './api';
import {
  evidenceItems,
  evidenceLabel,
  formatEvidenceValue,
  groupBySeverity,
  impactText,
  linkHash,
  linkLabel,
  linkState,
  quietRules,
  topFindings,
} from './advisor';
import { decodeState } from './state';

function finding(id: string, severity: string, impact: number | null, extra: Partial<AdvisorFinding> = {}): AdvisorFinding {
  return {
    id,
    rule: id.split(':')[0],
    severity: severity as AdvisorFinding['severity'],
    title: `title ${id}`,
    message: 'm',
    advice: 'a',
    impact_us: impact,
    impact_pct: null,
    worker: 'w0',
    span: 's0',
    rank: 0,
    evidence: {},
    links: [],
    ...extra,
  };
}

const here = { run: 'run a', worker: 'w0', span: 's0' };

describe('grouping and ranking', () => {
  const fs = [
    finding('a', 'low', 50),
    finding('b', 'high', 10),
    finding('c', 'high', null),
    finding('d', 'high', 300),
    finding('e', 'info', null),
    finding('f', 'bogus', 5),
  ];
  it('groups high → info, leaves empty groups out, unknown severities as info', () => {
    const g = groupBySeverity(fs);
    expect(g.map((x) => x.severity)).toEqual(['high', 'low', 'info']);
    expect(g[0].findings.map((f) => f.id)).toEqual(['d', 'b', 'c']);
    expect(g[2].findings.map((f) => f.id)).toEqual(['f', 'e']);
    expect(g.reduce((n, x) => n + x.findings.length, 0)).toBe(fs.length);
  });
  it('takes the costliest findings first, estimates before none, then by severity', () => {
    expect(topFindings(fs, 3).map((f) => f.id)).toEqual(['d', 'a', 'b']);
    expect(topFindings(fs, 10).map((f) => f.id)).toEqual(['d', 'a', 'b', 'f', 'c', 'e']);
    expect(topFindings([], 3)).toEqual([]);
  });
  it('splits the quiet rules into not applicable and passed', () => {
    const rules: AdvisorRule[] = [
      { rule: 'transdata', title: 'T', applies: true, fired: 2, why_not: null },
      { rule: 'amp', title: 'A', applies: false, fired: 0, why_not: 'not a GPU profile' },
      { rule: 'long_tasks', title: 'L', applies: true, fired: 0, why_not: null },
    ];
    const q = quietRules(rules);
    expect(q.notApplicable.map((r) => r.rule)).toEqual(['amp']);
    expect(q.passed.map((r) => r.rule)).toEqual(['long_tasks']);
  });
  it('describes the impact per step and as a share of the step', () => {
    expect(impactText({ impact_us: 1500, impact_pct: 12.5 })).toBe('≈ 1.5 ms per step (12.5 % of the step)');
    expect(impactText({ impact_us: 80, impact_pct: null })).toBe('≈ 80 µs per step');
    expect(impactText({ impact_us: null, impact_pct: 3.25 })).toBe('≈ 3.25 % of the step');
    expect(impactText({ impact_us: null, impact_pct: null })).toBe('');
  });
});

describe('evidence', () => {
  it('formats values by the unit in the key', () => {
    expect(formatEvidenceValue('worst_gap_us', 2500)).toBe('2.5 ms');
    expect(formatEvidenceValue('total_ms', 3)).toBe('3 ms');
    expect(formatEvidenceValue('free_pct', 41.234)).toBe('41.2 %');
    expect(formatEvidenceValue('gap_pct_of_step', 6.5)).toBe('6.5 %');
    expect(formatEvidenceValue('peak_mb', 2048)).toBe('2 GB');
    expect(formatEvidenceValue('gap_count', 123456)).toBe('123,456');
    expect(formatEvidenceValue('rank', 12345)).toBe('12345');
    expect(formatEvidenceValue('fused', true)).toBe('yes');
    expect(formatEvidenceValue('name', '<b>x</b>')).toBe('<b>x</b>');
    expect(formatEvidenceValue('x', null)).toBe('—');
    expect(formatEvidenceValue('ratio', 0.123456)).toBe('0.1235');
    // An absolute timestamp is not a duration.
    expect(formatEvidenceValue('start_us', 1700000000123.5)).toBe('1700000000123.5 µs');
  });
  it('labels keys without their unit suffix', () => {
    expect(evidenceLabel('worst_gap_us')).toBe('Worst gap');
    expect(evidenceLabel('device_share_pct')).toBe('Device share %');
    expect(evidenceLabel('gap_pct_of_step')).toBe('Gap % of step');
    expect(evidenceLabel('count')).toBe('Count');
    expect(evidenceLabel('ASCEND_LAUNCH_BLOCKING')).toBe('ASCEND_LAUNCH_BLOCKING');
  });
  it('renders scalars as values, scalar arrays as lists, row arrays as tables, objects flattened', () => {
    const items = evidenceItems({
      gap_count: 4,
      kernels: [
        { name: 'TransData', total_us: 1200 },
        { name: 'Cast', calls: 3 },
      ],
      names: ['a', 'b'],
      worst: { start_us: 10, dur_us: 2000 },
      empty: [],
    });
    expect(items.map((i) => [i.kind, i.key])).toEqual([
      ['value', 'gap_count'],
      ['table', 'kernels'],
      ['list', 'names'],
      ['value', 'worst.start_us'],
      ['value', 'worst.dur_us'],
      ['list', 'empty'],
    ]);
    const t = items[1];
    if (t.kind !== 'table') throw new Error('table expected');
    expect(t.columns.map((c) => c.key)).toEqual(['name', 'total_us', 'calls']);
    expect(t.rows.map((r) => r.map((c) => c.text))).toEqual([
      ['TransData', '1.2 ms', '—'],
      ['Cast', '—', '3'],
    ]);
    expect(t.rows[0][1].raw).toBe('1200');
    const w = items[4];
    expect(w.kind === 'value' && [w.label, w.value.text]).toEqual(['Worst · Dur', '2 ms']);
    expect(evidenceItems(null)).toEqual([]);
  });
  it('renders an object of row objects as a table, one row per entry', () => {
    const [t] = evidenceItems({ by_cause: { aicpu: { count: 2, total_us: 30 }, compile: { count: 1 } } });
    if (t.kind !== 'table') throw new Error('table expected');
    expect(t.columns.map((c) => c.label)).toEqual(['Cause', 'Count', 'Total']);
    expect(t.rows.map((r) => r.map((c) => c.text))).toEqual([
      ['aicpu', '2', '30 µs'],
      ['compile', '1', '—'],
    ]);
  });
});

describe('links', () => {
  const f = finding('transdata:w0', 'high', 100);
  it('opens kernels filtered by the name, in the group the link asks for', () => {
    const s = linkState({ view: 'kernels', params: { search: 'TransData' } }, f, here);
    expect(s).toEqual({ run: 'run a', worker: 'w0', span: 's0', view: 'kernels', filters: { 'kernels.name.q': 'TransData' } });
    const t = linkState({ view: 'kernels', params: { group_by: 'type', search: 'AI_CPU', step: 3 } }, f, here);
    expect(t.filters).toEqual({ 'kernels.group': 'type', 'kernels.type.q': 'AI_CPU', 'kernels.step': '3' });
    expect(linkState({ view: 'kernels', params: { group_by: 'evil', search: 'x' } }, f, here).filters).toEqual({ 'kernels.name.q': 'x' });
    // A sort the table has is kept; one it has not would fail the table's request.
    expect(linkState({ view: 'kernels', params: { search: 'x', sort: '-max_us' } }, f, here).filters).toEqual({
      'kernels.name.q': 'x',
      'kernels.name.sort': '-max_us',
    });
    expect(linkState({ view: 'kernels', params: { search: 'x', sort: '-avg_wait_us' } }, f, here).filters).toEqual({ 'kernels.name.q': 'x' });
  });
  it('opens operators searched and selected (call stack)', () => {
    const s = linkState({ view: 'operators', params: { name: 'aten::copy_' } }, f, here);
    expect(s.filters).toEqual({ 'operators.name.q': 'aten::copy_', 'operators.op': 'aten::copy_' });
  });
  it('zooms the timeline to the window, else searches', () => {
    const s = linkState({ view: 'trace', params: { start_us: 1000.4, end_us: 2500.2, search: 'x' } }, f, here);
    expect(s.filters).toEqual({ 'trace.t0': '1000', 'trace.t1': '2501' });
    expect(linkState({ view: 'trace', params: { name: 'Dequeue' } }, f, here).filters).toEqual({ 'trace.q': 'Dequeue' });
    expect(linkState({ view: 'trace', params: { start_us: 5, end_us: 5 } }, f, here).filters).toEqual({});
  });
  it('opens memory on the device and range', () => {
    const s = linkState({ view: 'memory', params: { device: 'NPU:0', start_us: '10', end_us: '20' } }, f, here);
    expect(s.filters).toEqual({ 'memory.device': 'NPU:0', 'memory.from': '10', 'memory.to': '20' });
  });
  it('opens the profile of the finding, or the one the link names', () => {
    const other = finding('straggler:w3', 'high', 5, { worker: 'w3', span: null, rank: 3 });
    const s = linkState({ view: 'overview', params: {} }, other, here);
    expect([s.worker, s.span, s.view]).toEqual(['w3', undefined, 'overview']);
    const t = linkState({ view: 'distributed', params: { worker: 'w1', span: 's9' } }, f, here);
    expect([t.worker, t.span, t.view]).toEqual(['w1', 's9', 'distributed']);
    const runLevel = finding('slow_link', 'medium', null, { worker: null, span: null, rank: null });
    expect(linkState({ view: 'distributed', params: {} }, runLevel, here)).toEqual({ ...here, view: 'distributed', filters: {} });
  });
  it('round-trips through the URL hash, names with special characters included', () => {
    const name = 'trans_TransData_1&view=memory#x';
    const h = linkHash({ view: 'kernels', params: { search: name } }, f, here);
    expect(decodeState(h)).toEqual({ run: 'run a', worker: 'w0', span: 's0', view: 'kernels', filters: { 'kernels.name.q': name } });
  });
  it('labels a link by its view and target', () => {
    expect(linkLabel({ view: 'kernels', params: { search: 'Cast' } })).toBe('Kernels: “Cast”');
    expect(linkLabel({ view: 'trace', params: { start_us: 0, end_us: 1500 } })).toBe('Timeline: 1.5 ms window');
    expect(linkLabel({ view: 'memory', params: { device: 'NPU:0' } })).toBe('Memory: NPU:0');
    expect(linkLabel({ view: 'distributed', params: {} })).toBe('Distributed');
  });
});

