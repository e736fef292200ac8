import { describe, expect, it } from 'vitest';
import { escapeHtml, formatCount, formatDuration, formatPercent, formatSizeKB, formatSizeMB, humanize, truncate } from './format';

describe('formatDuration', () => {
  it('picks µs, ms or s by magnitude', () => {
    expect(formatDuration(0)).toBe('0 µs');
    expect(formatDuration(1.234)).toBe('1.23 µs');
    expect(formatDuration(12.34)).toBe('12.3 µs');
    expect(formatDuration(999)).toBe('999 µs');
    expect(formatDuration(1000)).toBe('1 ms');
    expect(formatDuration(1500)).toBe('1.5 ms');
    expect(formatDuration(123456)).toBe('123 ms');
    expect(formatDuration(2_500_000)).toBe('2.5 s');
    expect(formatDuration(-1500)).toBe('-1.5 ms');
  });
  it('shows a dash for missing values', () => {
    expect(formatDuration(null)).toBe('—');
    expect(formatDuration(undefined)).toBe('—');
    expect(formatDuration(Number.NaN)).toBe('—');
  });
});

describe('sizes', () => {
  it('formats KB as KB/MB/GB', () => {
    expect(formatSizeKB(0)).toBe('0 KB');
    expect(formatSizeKB(0.5)).toBe('512 B');
    expect(formatSizeKB(512)).toBe('512 KB');
    expect(formatSizeKB(1024)).toBe('1 MB');
    expect(formatSizeKB(1536)).toBe('1.5 MB');
    expect(formatSizeKB(3 * 1024 * 1024)).toBe('3 GB');
  });
  it('formats MB', () => {
    expect(formatSizeMB(0.5)).toBe('512 KB');
    expect(formatSizeMB(100)).toBe('100 MB');
    expect(formatSizeMB(2048)).toBe('2 GB');
    expect(formatSizeMB(null)).toBe('—');
  });
});

describe('misc', () => {
  it('groups thousands', () => {
    expect(formatCount(1234567)).toBe('1,234,567');
    expect(formatCount(12)).toBe('12');
    expect(formatCount(-1234)).toBe('-1,234');
  });
  it('formats percentages', () => {
    expect(formatPercent(0.1234)).toBe('12.3%');
    expect(formatPercent(1, 0)).toBe('100%');
  });
  it('escapes HTML', () => {
    expect(escapeHtml('<img src=x onerror="alert(1)">')).toBe('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;');
    expect(escapeHtml("a&b'")).toBe('a&amp;b&#39;');
  });
  it('truncates and humanizes', () => {
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('abc', 4)).toBe('abc');
    expect(humanize('communication_not_overlapped')).toBe('Communication not overlapped');
  });
});
