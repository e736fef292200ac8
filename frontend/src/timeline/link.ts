// Links from other views into the timeline: a hash the app's URL state understands.
import type { ProfileKey } from '../api';
import { encodeState } from '../state';

export function traceHash(p: ProfileKey, f: { q?: string; t0?: number; t1?: number }): string {
  const filters: Record<string, string> = {};
  if (f.q) filters['trace.q'] = f.q;
  if (f.t0 !== undefined && f.t1 !== undefined) {
    filters['trace.t0'] = String(f.t0);
    filters['trace.t1'] = String(f.t1);
  }
  return encodeState({ run: p.run, worker: p.worker, span: p.span, view: 'trace', filters });
}

/** Props of an <a> into the timeline. The plugin page has a <base href> (TensorBoard's
 * plugin_entry.html), so a bare "#..." href would leave the page: the click sets the hash. */
export function traceLinkProps(hash: string): { href: string; onClick: (e: { preventDefault(): void }) => void } {
  const h = hash.startsWith('#') ? hash : `#${hash}`;
  return {
    href: h,
    onClick: (e) => {
      e.preventDefault();
      window.location.hash = h;
    },
  };
}

/** A timeline window (absolute µs) centred on an instant: ±0.5% of the profile's span,
 * at least ±100 µs, so the slices running at that moment are readable. */
export function windowAround(tUs: number, spanUs: number): { t0: number; t1: number } {
  const half = Math.max(Math.abs(spanUs) * 0.005, 100);
  return { t0: Math.floor(tUs - half), t1: Math.ceil(tUs + half) };
}

// ---- search paging: the API returns hits a page at a time; the UI steps through all ----
export const SEARCH_PAGE = 200;

/** Offset of the page that holds hit number `pos` (0-based). */
export function searchPageOffset(pos: number, pageSize = SEARCH_PAGE): number {
  return Math.floor(Math.max(pos, 0) / pageSize) * pageSize;
}

/** Hit number after stepping `d` from `pos`, wrapping around `total` hits. */
export function stepHit(pos: number, d: number, total: number): number {
  if (total <= 0) return 0;
  return (((pos + d) % total) + total) % total;
}
