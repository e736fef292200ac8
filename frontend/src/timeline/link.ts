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
