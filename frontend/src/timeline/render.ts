// Canvas 2D renderer of the timeline. Pure function of its inputs (no DOM state kept), so it
// is cheap to call on every frame; names are drawn with fillText (never as HTML).
import { HEADER_H, LABEL_W, LANE_H, RULER_H, type Layout, rowAt } from './layout';
import type { CounterSeries, FlowLink, Lane, SliceBrief, ViewportResponse } from './model';
import { colorOf, formatDuration, ticks, xOf, type Window } from './scale';

export interface LaneData {
  /** offset (µs, relative to the trace origin) of the response's item times */
  base: number;
  names: string[];
  lanes: Map<string, Lane>;
}

export function laneData(resp: ViewportResponse, origin: number): LaneData {
  const lanes = new Map<string, Lane>();
  for (const l of resp.lanes) lanes.set(`${l.track}:${l.depth}`, l);
  return { base: resp.start_us - origin, names: resp.names, lanes };
}

export interface Scene {
  width: number; // css px of the whole canvas
  height: number;
  dpr: number;
  win: Window; // relative µs
  layout: Layout;
  scrollY: number;
  data: LaneData | null;
  counters: { base: number; series: CounterSeries[] } | null;
  steps: { step: number; start: number; end: number }[];
  selected: (SliceBrief & { rel: number }) | null;
  flows: (FlowLink & { rel: number })[];
  measure: { a: number; b: number } | null;
  collapsed: Set<string>;
  dark: boolean;
}

export interface Hit {
  kind: 'slice' | 'block' | 'group' | 'counter';
  id?: number;
  start?: number;
  dur?: number;
  name?: string;
  group?: string;
  count?: number;
}

const FONT = '11px Roboto, "Segoe UI", Arial, sans-serif';

export function draw(ctx: CanvasRenderingContext2D, s: Scene): void {
  const { width, height, dpr, win, layout, scrollY, dark } = s;
  const plotW = Math.max(width - LABEL_W, 1);
  const fg = dark ? '#e8eaed' : '#202124';
  const muted = dark ? '#9aa0a6' : '#5f6368';
  const bg = dark ? '#1e1e1e' : '#ffffff';
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = bg;
  ctx.fillRect(0, 0, width, height);
  ctx.font = FONT;
  ctx.textBaseline = 'middle';
  const X = (t: number) => LABEL_W + xOf(t, win, plotW);
  const top = RULER_H;
  const viewH = height - top;

  // Rows
  ctx.save();
  ctx.beginPath();
  ctx.rect(0, top, width, viewH);
  ctx.clip();
  const first = rowAt(layout, scrollY);
  let i = first ? layout.rows.indexOf(first) : 0;
  for (; i < layout.rows.length; i++) {
    const r = layout.rows[i];
    const y = top + r.y - scrollY;
    if (y > height) break;
    if (y + r.h < top) continue;
    if (r.kind === 'group') {
      ctx.fillStyle = dark ? '#2d2f31' : '#f1f3f4';
      ctx.fillRect(0, y, width, r.h);
      ctx.fillStyle = fg;
      ctx.font = `bold ${FONT}`;
      ctx.fillText(`${s.collapsed.has(r.group) ? '▸' : '▾'} ${r.label}`, 6, y + r.h / 2, LABEL_W + plotW - 12);
      ctx.font = FONT;
      continue;
    }
    // label column
    ctx.fillStyle = muted;
    if (r.label) ctx.fillText(r.label, 14, y + r.h / 2, LABEL_W - 18);
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, y, plotW, r.h);
    ctx.clip();
    if (r.kind === 'counter' && s.counters && r.track) {
      const ser = s.counters.series.find((c) => c.track === r.track!.id && c.series === r.series);
      if (ser) drawCounter(ctx, ser, s.counters.base, X, y, r.h, dark);
    } else if (r.kind === 'lane' && s.data && r.track) {
      const lane = s.data.lanes.get(`${r.track.id}:${r.depth}`);
      if (lane) drawLane(ctx, lane, s.data, X, y, r.h, plotW, dark, s.selected?.id);
    }
    ctx.restore();
  }
  ctx.restore();

  // Steps, measure range, flows over the rows
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_W, 0, plotW, height);
  ctx.clip();
  ctx.strokeStyle = dark ? 'rgba(255,255,255,0.25)' : 'rgba(0,0,0,0.2)';
  ctx.setLineDash([4, 4]);
  for (const st of s.steps) {
    const x = X(st.start);
    if (x < LABEL_W - 1 || x > width + 1) continue;
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, height);
    ctx.stroke();
  }
  ctx.setLineDash([]);
  if (s.measure) {
    const a = X(Math.min(s.measure.a, s.measure.b));
    const b = X(Math.max(s.measure.a, s.measure.b));
    ctx.fillStyle = 'rgba(66,133,244,0.15)';
    ctx.fillRect(a, top, Math.max(b - a, 1), viewH);
    ctx.strokeStyle = '#4285f4';
    ctx.strokeRect(a, top, Math.max(b - a, 1), viewH);
  }
  if (s.selected) {
    const from = sliceAnchor(s, s.selected, s.selected.rel, X, top);
    ctx.strokeStyle = dark ? '#fdd663' : '#e37400';
    ctx.fillStyle = ctx.strokeStyle;
    ctx.lineWidth = 1.5;
    for (const f of s.flows) {
      const to = sliceAnchor(s, f, f.rel, X, top);
      if (!from || !to) continue;
      const [x0, y0, x1, y1] = f.direction === 'out' ? [from[1], from[2], to[0], to[2]] : [to[1], to[2], from[0], from[2]];
      arrow(ctx, x0, y0, x1, y1);
    }
    ctx.lineWidth = 1;
  }
  ctx.restore();

  // Ruler
  ctx.fillStyle = dark ? '#252526' : '#fafafa';
  ctx.fillRect(0, 0, width, RULER_H);
  ctx.strokeStyle = muted;
  ctx.fillStyle = muted;
  const tk = ticks(win, plotW, 110);
  for (const v of tk.values) {
    const x = X(v);
    ctx.beginPath();
    ctx.moveTo(x, RULER_H - 6);
    ctx.lineTo(x, RULER_H);
    ctx.stroke();
    ctx.fillText(formatDuration(v), x + 3, RULER_H / 2);
  }
  for (const st of s.steps) {
    const x = X(st.start);
    const x1 = X(st.end);
    if (x1 < LABEL_W || x > width) continue;
    if (x1 - x > 40) {
      ctx.fillStyle = fg;
      ctx.fillText(`#${st.step}`, Math.max(x, LABEL_W) + 2, 6);
    }
  }
  ctx.fillStyle = fg;
  ctx.fillText(`${formatDuration(win.end - win.start)} shown`, 6, RULER_H / 2, LABEL_W - 10);
  ctx.strokeStyle = dark ? '#3c4043' : '#dadce0';
  ctx.beginPath();
  ctx.moveTo(LABEL_W + 0.5, 0);
  ctx.lineTo(LABEL_W + 0.5, height);
  ctx.moveTo(0, RULER_H + 0.5);
  ctx.lineTo(width, RULER_H + 0.5);
  ctx.stroke();
}

function sliceAnchor(s: Scene, b: SliceBrief, rel: number, X: (t: number) => number, top: number): [number, number, number] | null {
  const t = s.layout.trackY.get(b.track);
  if (!t) return null;
  const y = top + (t.collapsed ? t.y + HEADER_H / 2 : t.y + b.depth * LANE_H + LANE_H / 2) - s.scrollY;
  return [X(rel), X(rel + b.dur_us), y];
}

function arrow(ctx: CanvasRenderingContext2D, x0: number, y0: number, x1: number, y1: number): void {
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  const mx = (x0 + x1) / 2;
  ctx.bezierCurveTo(mx, y0, mx, y1, x1, y1);
  ctx.stroke();
  const ang = Math.atan2(y1 - y0, Math.max(x1 - mx, 1));
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - 7 * Math.cos(ang - 0.4), y1 - 7 * Math.sin(ang - 0.4));
  ctx.lineTo(x1 - 7 * Math.cos(ang + 0.4), y1 - 7 * Math.sin(ang + 0.4));
  ctx.closePath();
  ctx.fill();
}

function drawLane(ctx: CanvasRenderingContext2D, lane: Lane, d: LaneData, X: (t: number) => number, y: number, h: number, plotW: number, dark: boolean, selected?: number): void {
  for (const [rs, dur, , busy, ni] of lane.blocks) {
    const x0 = X(d.base + rs);
    const w = Math.max(X(d.base + rs + dur) - x0, 1);
    ctx.globalAlpha = 0.35 + 0.55 * Math.min(1, dur > 0 ? busy / dur : 1);
    ctx.fillStyle = colorOf(d.names[ni], dark);
    ctx.fillRect(x0, y + 1, w, h - 2);
  }
  ctx.globalAlpha = 1;
  for (const [id, rs, dur, ni] of lane.slices) {
    const x0 = X(d.base + rs);
    const x1 = X(d.base + rs + dur);
    const a = Math.max(x0, LABEL_W - 10);
    const w = Math.max(x1 - a, 1);
    const name = d.names[ni];
    ctx.fillStyle = colorOf(name, dark);
    ctx.fillRect(a, y + 1, w, h - 2);
    if (id === selected) {
      ctx.strokeStyle = dark ? '#fdd663' : '#e37400';
      ctx.lineWidth = 2;
      ctx.strokeRect(a + 1, y + 1, w - 2, h - 2);
      ctx.lineWidth = 1;
    }
    if (w > 28) {
      ctx.fillStyle = dark ? '#ffffff' : '#202124';
      const tx = Math.max(a, LABEL_W) + 3;
      ctx.fillText(name, tx, y + h / 2, Math.max(Math.min(x1, LABEL_W + plotW) - tx - 3, 1));
    }
  }
}

function drawCounter(ctx: CanvasRenderingContext2D, ser: CounterSeries, base: number, X: (t: number) => number, y: number, h: number, dark: boolean): void {
  const pts = ser.points;
  if (!pts.length) return;
  const max = ser.max && ser.max > 0 ? ser.max : 1;
  ctx.fillStyle = dark ? 'rgba(129,201,149,0.45)' : 'rgba(52,168,83,0.35)';
  ctx.strokeStyle = dark ? '#81c995' : '#188038';
  ctx.beginPath();
  ctx.moveTo(X(base + pts[0][0]), y + h);
  let lastY = y + h;
  for (const [t, v] of pts) {
    const x = X(base + t);
    ctx.lineTo(x, lastY);
    lastY = y + h - 2 - ((v ?? 0) / max) * (h - 4);
    ctx.lineTo(x, lastY);
  }
  ctx.lineTo(X(base + pts[pts.length - 1][0]) + 2000, lastY);
  ctx.lineTo(X(base + pts[pts.length - 1][0]) + 2000, y + h);
  ctx.closePath();
  ctx.fill();
  ctx.fillStyle = dark ? '#e8eaed' : '#202124';
  ctx.fillText(`max ${+max.toPrecision(4)}`, X(base + pts[0][0]) + 4, y + 8);
}

/** What is under the pointer: a slice, a merged block, a group header or a counter row. */
export function hitTest(s: Scene, px: number, py: number): Hit | undefined {
  if (py < RULER_H) return undefined;
  const r = rowAt(s.layout, py - RULER_H + s.scrollY);
  if (!r) return undefined;
  if (r.kind === 'group') return { kind: 'group', group: r.group };
  if (r.kind === 'counter' || px < LABEL_W) return r.kind === 'counter' ? { kind: 'counter' } : undefined;
  if (!s.data || !r.track) return undefined;
  const lane = s.data.lanes.get(`${r.track.id}:${r.depth}`);
  if (!lane) return undefined;
  const plotW = s.width - LABEL_W;
  const t = s.win.start + ((px - LABEL_W) / plotW) * (s.win.end - s.win.start) - s.data.base;
  const tol = (2 / plotW) * (s.win.end - s.win.start);
  let best: Hit | undefined;
  for (const [id, rs, dur, ni] of lane.slices) {
    if (t >= rs - tol && t <= rs + dur + tol) {
      if (!best || (best.dur ?? Infinity) > dur) best = { kind: 'slice', id, start: rs + s.data.base, dur, name: s.data.names[ni] };
    }
  }
  if (best) return best;
  for (const [rs, dur, count, , ni] of lane.blocks) {
    if (t >= rs - tol && t <= rs + dur + tol) return { kind: 'block', start: rs + s.data.base, dur, count, name: s.data.names[ni] };
  }
  return undefined;
}
