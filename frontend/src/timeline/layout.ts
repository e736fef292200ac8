// Pure layout: tracks grouped by process in the producer's order, one row per depth lane,
// collapsible groups, counter rows; y <-> row hit testing.
import type { TrackInfo } from './model';

export const LANE_H = 18;
export const HEADER_H = 22;
export const COUNTER_H = 36;
export const RULER_H = 24;
export const LABEL_W = 200;

export interface Row {
  kind: 'group' | 'lane' | 'counter';
  y: number;
  h: number;
  group: string;
  track?: TrackInfo;
  depth?: number;
  series?: string;
  label: string;
}

export interface Layout {
  rows: Row[];
  height: number;
  /** track id -> y of its depth-0 lane (or of its group header when collapsed) */
  trackY: Map<number, { y: number; collapsed: boolean }>;
  visibleTracks: number[];
}

export function groupKey(t: TrackInfo): string {
  return `${t.process}\u0000${t.pid}`;
}

export function buildLayout(tracks: TrackInfo[], collapsed: Set<string>): Layout {
  const rows: Row[] = [];
  const trackY = new Map<number, { y: number; collapsed: boolean }>();
  const visible: number[] = [];
  let y = 0;
  let current: string | null = null;
  const sorted = [...tracks].sort((a, b) => a.sort - b.sort);
  for (const t of sorted) {
    const g = groupKey(t);
    if (g !== current) {
      current = g;
      rows.push({ kind: 'group', y, h: HEADER_H, group: g, label: t.process || `pid ${t.pid}` });
      y += HEADER_H;
    }
    if (collapsed.has(g)) {
      trackY.set(t.id, { y: y - HEADER_H, collapsed: true });
      continue;
    }
    visible.push(t.id);
    if (t.kind === 'counter' || (t.slices === 0 && t.counters.length)) {
      trackY.set(t.id, { y, collapsed: false });
      for (const s of t.counters) {
        rows.push({ kind: 'counter', y, h: COUNTER_H, group: g, track: t, series: s, label: s });
        y += COUNTER_H;
      }
      continue;
    }
    trackY.set(t.id, { y, collapsed: false });
    const lanes = Math.max(t.max_depth + 1, 1);
    for (let d = 0; d < lanes; d++) {
      rows.push({ kind: 'lane', y, h: LANE_H, group: g, track: t, depth: d, label: d === 0 ? t.thread || `tid ${t.tid}` : '' });
      y += LANE_H;
    }
  }
  return { rows, height: y, trackY, visibleTracks: visible };
}

/** The row at content y (binary search; rows are sorted by y). */
export function rowAt(layout: Layout, y: number): Row | undefined {
  const rows = layout.rows;
  let lo = 0;
  let hi = rows.length - 1;
  while (lo <= hi) {
    const m = (lo + hi) >> 1;
    const r = rows[m];
    if (y < r.y) hi = m - 1;
    else if (y >= r.y + r.h) lo = m + 1;
    else return r;
  }
  return undefined;
}

/** y (content coordinates) of the middle of a slice's lane. */
export function laneY(layout: Layout, track: number, depth: number): number | undefined {
  const t = layout.trackY.get(track);
  if (!t) return undefined;
  return t.collapsed ? t.y + HEADER_H / 2 : t.y + depth * LANE_H + LANE_H / 2;
}
