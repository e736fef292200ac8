import { describe, expect, it } from 'vitest';
import { buildLayout, HEADER_H, LANE_H, laneY, rowAt } from './layout';
import type { TrackInfo } from './model';
import { around, clamp, formatDuration, panBy, tOf, ticks, xOf, zoomAt } from './scale';

const B = { start: 0, end: 1000 };

describe('scale', () => {
  it('maps time and pixels both ways', () => {
    const w = { start: 100, end: 300 };
    expect(xOf(200, w, 400)).toBe(200);
    expect(tOf(200, w, 400)).toBe(200);
  });
  it('zooms around the pointer and keeps the time under it', () => {
    const w = { start: 0, end: 1000 };
    const z = zoomAt(w, 0.5, 250, 1000, B);
    expect(z.end - z.start).toBeCloseTo(500);
    expect(tOf(250, z, 1000)).toBeCloseTo(250);
  });
  it('pans by pixels and clamps to the trace with a margin', () => {
    const w = { start: 0, end: 100 };
    expect(panBy(w, 100, 1000, B).start).toBeCloseTo(10);
    expect(panBy(w, -100000, 1000, B).start).toBeCloseTo(-100);
    expect(clamp({ start: 2000, end: 2100 }, B).end).toBeCloseTo(1100);
  });
  it('does not zoom out beyond the trace', () => {
    const z = zoomAt({ start: 0, end: 1000 }, 100, 500, 1000, B);
    expect(z.end - z.start).toBeLessThanOrEqual(1400);
  });
  it('ticks use 1/2/5 steps', () => {
    const t = ticks({ start: 0, end: 1000 }, 1000, 100);
    expect(t.step).toBe(100);
    expect(t.values[0]).toBe(0);
    expect(ticks({ start: 3, end: 7 }, 1000, 100).step).toBeCloseTo(0.5);
  });
  it('formats durations', () => {
    expect(formatDuration(1500)).toBe('1.5 ms');
    expect(formatDuration(0.25)).toBe('250 ns');
    expect(formatDuration(2.5e6)).toBe('2.5 s');
    expect(around(10, 20, 0.1)).toEqual({ start: 9, end: 21 });
  });
});

const t = (id: number, process: string, pid: string, sort: number, max_depth: number, extra: Partial<TrackInfo> = {}): TrackInfo => ({
  id, process, thread: `T${id}`, pid, tid: String(id), kind: 'host', sort, max_depth, slices: 10, counters: [], ...extra,
});

describe('layout', () => {
  const tracks = [t(2, 'CANN', 'p2', 2, 0), t(1, 'Python', 'p1', 0, 2), t(3, 'Python', 'p1', 1, 0),
    t(4, 'NPU MEM', 'p3', 3, -1, { kind: 'counter', slices: 0, counters: ['a', 'b'] })];
  it('groups by process in sort order with one row per depth', () => {
    const l = buildLayout(tracks, new Set());
    expect(l.rows.map((r) => r.kind)).toEqual(['group', 'lane', 'lane', 'lane', 'lane', 'group', 'lane', 'group', 'counter', 'counter']);
    expect(l.rows[0].label).toBe('Python');
    expect(laneY(l, 1, 2)).toBe(HEADER_H + 2 * LANE_H + LANE_H / 2);
    expect(rowAt(l, HEADER_H + LANE_H + 1)?.depth).toBe(1);
    expect(l.visibleTracks).toEqual([1, 3, 2, 4]);
  });
  it('collapsed groups hide their tracks and anchor them on the header', () => {
    const l = buildLayout(tracks, new Set(['Python\u0000p1']));
    expect(l.visibleTracks).toEqual([2, 4]);
    expect(laneY(l, 3, 0)).toBe(HEADER_H / 2);
    expect(l.rows[1].kind).toBe('group');
  });
});

describe('links and search paging', () => {
  it('centres a window on an instant', async () => {
    const { windowAround } = await import('./link');
    expect(windowAround(10_000, 1_000_000)).toEqual({ t0: 5_000, t1: 15_000 });
    expect(windowAround(10_000, 100)).toEqual({ t0: 9_900, t1: 10_100 });
  });
  it('finds the page of a hit and wraps steps', async () => {
    const { searchPageOffset, stepHit } = await import('./link');
    expect(searchPageOffset(0)).toBe(0);
    expect(searchPageOffset(199)).toBe(0);
    expect(searchPageOffset(200)).toBe(200);
    expect(searchPageOffset(450, 200)).toBe(400);
    expect(stepHit(0, -1, 450)).toBe(449);
    expect(stepHit(449, 1, 450)).toBe(0);
    expect(stepHit(199, 1, 450)).toBe(200);
    expect(stepHit(3, 1, 0)).toBe(0);
  });
});

describe('fetch window', () => {
  it('adds half a view each side, and at least 1 µs', async () => {
    const { fetchWindow } = await import('./scale');
    expect(fetchWindow({ start: 100, end: 300 })).toEqual({ start: 0, end: 400 });
    const w = fetchWindow({ start: 5, end: 5.01 });
    const origin = 1717200011562756.8;
    expect(origin + w.end > origin + w.start).toBe(true);
    expect(w.end - w.start).toBeGreaterThanOrEqual(2);
  });
});
