import { describe, expect, it } from 'vitest';
import type { RunInfo, RunSummary } from './api';
import { availableViews, defaultRun, resolveSelection } from './selection';

const runs: RunSummary[] = [
  { name: 'bad', state: 'ready', progress: 1, errors: [{ path: 'x', message: 'y' }] },
  { name: 'loading', state: 'loading', progress: 0.5, errors: [] },
  { name: 'good', state: 'ready', progress: 1, errors: [] },
];
const info: RunInfo = {
  name: 'good',
  views: ['overview', 'kernels', 'custom'],
  workers: [
    { name: 'w0', rank: 0, device: 'npu', producer: 'torch_npu', spans: ['a', 'b'] },
    { name: 'w1', rank: 1, device: 'npu', producer: 'torch_npu', spans: ['c'] },
  ],
};

describe('selection', () => {
  it('opens a clean ready run by default', () => {
    expect(defaultRun(runs)?.name).toBe('good');
    expect(defaultRun([runs[0], runs[1]])?.name).toBe('bad');
    expect(defaultRun([runs[1]])?.name).toBe('loading');
    expect(defaultRun([])).toBeUndefined();
  });
  it('lists known views in order, Trace always', () => {
    expect(availableViews(['kernels', 'overview', 'custom'])).toEqual(['overview', 'kernels', 'trace']);
  });
  it('falls back to the first worker, span and view', () => {
    const s = resolveSelection({ filters: {} }, runs, info);
    expect([s.run?.name, s.worker?.name, s.span, s.view]).toEqual(['good', 'w0', 'a', 'overview']);
  });
  it('keeps what the URL names when it exists', () => {
    const s = resolveSelection({ run: 'good', worker: 'w0', span: 'b', view: 'kernels', filters: {} }, runs, info);
    expect([s.worker?.name, s.span, s.view]).toEqual(['w0', 'b', 'kernels']);
    const t = resolveSelection({ run: 'good', worker: 'w1', span: 'zz', view: 'memory', filters: {} }, runs, info);
    expect([t.worker?.name, t.span, t.view]).toEqual(['w1', 'c', 'overview']);
  });
  it('reports an unknown run instead of silently switching', () => {
    expect(resolveSelection({ run: 'nope', filters: {} }, runs, info).run).toBeUndefined();
  });
  it('ignores run info of another run', () => {
    const s = resolveSelection({ run: 'bad', filters: {} }, runs, info);
    expect(s.info).toBeUndefined();
    expect(s.worker).toBeUndefined();
  });
});
