// Pure time <-> pixel math for the timeline: a window [start, end] in µs mapped on `width` px.

export interface Window {
  start: number;
  end: number;
}

export const MIN_SPAN_US = 0.01;

export function xOf(t: number, w: Window, width: number): number {
  return ((t - w.start) / (w.end - w.start)) * width;
}

export function tOf(x: number, w: Window, width: number): number {
  return w.start + (x / width) * (w.end - w.start);
}

/** Zoom by `factor` (<1 zooms in) keeping the time under pixel `x` fixed, clamped to bounds. */
export function zoomAt(w: Window, factor: number, x: number, width: number, bounds: Window): Window {
  const t = tOf(x, w, width);
  const full = bounds.end - bounds.start;
  let span = Math.min(Math.max((w.end - w.start) * factor, MIN_SPAN_US), full * 1.2);
  const frac = width > 0 ? x / width : 0.5;
  let start = t - frac * span;
  return clamp({ start, end: start + span }, bounds);
}

/** Pan by `dx` pixels (positive moves the view to later times). */
export function panBy(w: Window, dx: number, width: number, bounds: Window): Window {
  const dt = (dx / width) * (w.end - w.start);
  return clamp({ start: w.start + dt, end: w.end + dt }, bounds);
}

export function clamp(w: Window, bounds: Window): Window {
  const span = w.end - w.start;
  const full = bounds.end - bounds.start;
  const margin = full * 0.1;
  let start = w.start;
  if (span >= full + 2 * margin) return { start: bounds.start - margin, end: bounds.start - margin + span };
  if (start < bounds.start - margin) start = bounds.start - margin;
  if (start + span > bounds.end + margin) start = bounds.end + margin - span;
  return { start, end: start + span };
}

/** The window to fetch for a view: half a view of margin on each side (smooth panning), and
 * at least 1 µs, because the API takes absolute µs, which near 1.7e15 (epoch µs) are only
 * 0.25 µs apart as doubles: a 10 ns view would otherwise ask for start == end. */
export function fetchWindow(w: Window): Window {
  const pad = Math.max((w.end - w.start) * 0.5, 1);
  return { start: w.start - pad, end: w.end + pad };
}

/** A window showing [a, b] with a small margin on each side. */
export function around(a: number, b: number, margin = 0.05): Window {
  const span = Math.max(b - a, MIN_SPAN_US);
  return { start: a - span * margin, end: b + span * margin };
}

/** Ruler ticks: a 1/2/5 step giving about `target` px between ticks. */
export function ticks(w: Window, width: number, target = 100): { step: number; values: number[] } {
  const span = w.end - w.start;
  const raw = (span / Math.max(width, 1)) * target;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / p;
  const step = (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  const values: number[] = [];
  for (let v = Math.ceil(w.start / step) * step; v <= w.end && values.length < 1000; v += step) values.push(v);
  return { step, values };
}

/** "1.5 ms", "230 µs", "12 ns", "2.3 s". */
export function formatDuration(us: number): string {
  const a = Math.abs(us);
  if (a >= 1e6) return `${+(us / 1e6).toPrecision(4)} s`;
  if (a >= 1e3) return `${+(us / 1e3).toPrecision(4)} ms`;
  if (a >= 1) return `${+us.toPrecision(4)} µs`;
  return `${+(us * 1e3).toPrecision(3)} ns`;
}

/** Stable color of a name (hash to a hue). */
export function colorOf(name: string, dark = false): string {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  const hue = (h >>> 0) % 360;
  return dark ? `hsl(${hue} 45% 42%)` : `hsl(${hue} 60% 70%)`;
}
