import { describe, expect, it } from 'vitest';
import { applyPatch, decodeState, encodeState } from './state';

describe('URL state', () => {
  it('round-trips run, worker, span, view and filters', () => {
    const s = {
      run: 'my run/1 & co',
      worker: 'host_123_rank0',
      span: '2024-01-01 10:00',
      view: 'kernels',
      filters: { 'kernels.group': 'core', 'kernels.top': '20', 'kernels.name.q': 'mat mul#?' },
    };
    const hash = encodeState(s);
    expect(hash.startsWith('#run=')).toBe(true);
    expect(decodeState(hash)).toEqual(s);
  });
  it('orders keys stably: main keys first, then sorted filters', () => {
    const hash = encodeState({ view: 'memory', run: 'r', filters: { z: '1', a: '2' } });
    expect(hash).toBe('#run=r&view=memory&a=2&z=1');
  });
  it('decodes an empty or partial hash', () => {
    expect(decodeState('')).toEqual({ filters: {} });
    expect(decodeState('#')).toEqual({ filters: {} });
    expect(decodeState('#view=trace&run=')).toEqual({ view: 'trace', filters: {} });
  });
  it('applies patches; empty values delete', () => {
    const s = decodeState('#run=a&worker=w&kernels.top=5');
    const n = applyPatch(s, { worker: undefined, view: 'kernels', filters: { 'kernels.top': undefined, 'kernels.step': '3' } });
    expect(n).toEqual({ run: 'a', view: 'kernels', filters: { 'kernels.step': '3' } });
    // The input is not mutated.
    expect(s.worker).toBe('w');
  });
  it('produces an empty hash for an empty state', () => {
    expect(encodeState({ filters: {} })).toBe('');
  });
});
