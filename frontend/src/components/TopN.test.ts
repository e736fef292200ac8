import { describe, expect, it } from 'vitest';
import { TOP_N_CHOICES, topNOf } from './TopN';

describe('topNOf', () => {
  it('reads the view’s own `<view>.top` filter', () => {
    expect(topNOf({ 'kernels.top': '20', 'operators.top': '5' }, 'kernels')).toBe(20);
    expect(topNOf({ 'kernels.top': '20', 'operators.top': '5' }, 'operators')).toBe(5);
  });

  it('is 10 when the filter is absent, not a number or not positive', () => {
    for (const v of [undefined, '', 'many', '0', '-5', 'NaN']) {
      const filters: Record<string, string> = v === undefined ? {} : { 'kernels.top': v };
      expect(topNOf(filters, 'kernels')).toBe(10);
    }
    expect(TOP_N_CHOICES).toContain(10);
  });
});
