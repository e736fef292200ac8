// Pure transforms behind the Advisor view: grouping and ranking of findings, the generic
// evidence renderer's model (scalars, lists, tables of row objects) and the translation of a
// finding's links into the app's URL state, so a link opens its view filtered or zoomed.
import type { AdvisorFinding, AdvisorLink, AdvisorRule, ProfileKey, Severity } from './api';
import { formatCount, formatDuration, formatSizeKB, formatSizeMB, humanize, trimNumber } from './format';
import { encodeState, type UrlState } from './state';

export const SEVERITIES: readonly Severity[] = ['high', 'medium', 'low', 'info'];

export const SEVERITY_TITLES: Record<Severity, string> = {
  high: 'High',
  medium: 'Medium',
  low: 'Low',
  info: 'Info',
};

function severityRank(s: string): number {
  const i = (SEVERITIES as readonly string[]).indexOf(s);
  return i < 0 ? SEVERITIES.length : i;
}

function impactOf(f: AdvisorFinding): number {
  return typeof f.impact_us === 'number' && Number.isFinite(f.impact_us) ? f.impact_us : -Infinity;
}

/** Larger estimated saving first; findings without an estimate last; stable otherwise. */
export function byImpact(a: AdvisorFinding, b: AdvisorFinding): number {
  const d = impactOf(b) - impactOf(a);
  if (d !== 0 && !Number.isNaN(d)) return d;
  return 0;
}

export interface SeverityGroup {
  severity: Severity;
  findings: AdvisorFinding[];
}

/** Findings grouped high → info (empty groups left out), each group by impact. An unknown
 * severity counts as info, so no finding disappears. */
export function groupBySeverity(findings: AdvisorFinding[]): SeverityGroup[] {
  const groups = new Map<Severity, AdvisorFinding[]>(SEVERITIES.map((s) => [s, []]));
  for (const f of findings) groups.get((SEVERITIES as readonly string[]).includes(f.severity) ? f.severity : 'info')!.push(f);
  return SEVERITIES.filter((s) => groups.get(s)!.length > 0).map((s) => ({
    severity: s,
    findings: [...groups.get(s)!].sort(byImpact),
  }));
}

/** The `n` findings that cost the most time; ties (and findings without an estimate) by severity. */
export function topFindings(findings: AdvisorFinding[], n = 3): AdvisorFinding[] {
  return [...findings]
    .sort((a, b) => byImpact(a, b) || severityRank(a.severity) - severityRank(b.severity))
    .slice(0, n);
}

/** The rules that produced nothing: those that did not apply (with the reason) and those
 * that were checked and found no problem. */
export function quietRules(rules: AdvisorRule[]): { notApplicable: AdvisorRule[]; passed: AdvisorRule[] } {
  const quiet = rules.filter((r) => !(r.fired > 0));
  return {
    notApplicable: quiet.filter((r) => !r.applies),
    passed: quiet.filter((r) => r.applies),
  };
}

/** "saves ≈ 1.2 ms per step (8.5 % of the step)"; empty when the backend gives no estimate. */
export function impactText(f: Pick<AdvisorFinding, 'impact_us' | 'impact_pct'>): string {
  const us = typeof f.impact_us === 'number' && Number.isFinite(f.impact_us) ? f.impact_us : null;
  const pct = typeof f.impact_pct === 'number' && Number.isFinite(f.impact_pct) ? f.impact_pct : null;
  if (us === null && pct === null) return '';
  const parts: string[] = [];
  if (us !== null) parts.push(`≈ ${formatDuration(us)} per step`);
  if (pct !== null) parts.push(us !== null ? `(${formatPct(pct)} of the step)` : `≈ ${formatPct(pct)} of the step`);
  return parts.join(' ');
}

function formatPct(pct: number): string {
  return `${trimNumber(pct, Math.abs(pct) >= 10 ? 1 : 2)} %`;
}

// ---- evidence -------------------------------------------------------------------------------

export interface EvidenceCell {
  text: string;
  /** The value as sent (numbers unformatted), for titles and tests. */
  raw: string;
}

export type EvidenceItem =
  | { kind: 'value'; key: string; label: string; value: EvidenceCell }
  | { kind: 'list'; key: string; label: string; values: EvidenceCell[] }
  | { kind: 'table'; key: string; label: string; columns: { key: string; label: string }[]; rows: EvidenceCell[][] };

const UNIT_SUFFIX = /_(us|ms|mb|kb|bytes)$/;
const PCT_TOKEN = /(^|_)(pct|percent)(_|$)/;
const TIMESTAMP_KEY = /(^|_)(start|end|ts|t0|t1|begin)(_us)?$/;

/** Column / row label of an evidence key: a unit suffix goes (the value carries it), "pct"
 * reads "%" ("gap_pct_of_step" → "Gap % of step"). */
export function evidenceLabel(key: string): string {
  // Names that are data themselves (environment variables, op types) stay as they are.
  if (/[A-Z]/.test(key)) return key;
  const base = key.replace(UNIT_SUFFIX, '') || key;
  return humanize(base.split('_').map((w) => (w === 'pct' || w === 'percent' ? '%' : w)).join('_'));
}

function rawText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** One evidence value as text, its unit taken from the key's suffix (`_us`, `_pct`, `_mb`, ...). */
export function formatEvidenceValue(key: string, v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'string') return v;
  if (typeof v !== 'number') {
    if (Array.isArray(v) && v.every((x) => x === null || typeof x !== 'object')) return v.map((x) => formatEvidenceValue(key, x)).join(', ');
    return JSON.stringify(v);
  }
  if (!Number.isFinite(v)) return '—';
  const k = key.toLowerCase();
  // Absolute timestamps mean nothing as durations: shown as the number they are.
  if (TIMESTAMP_KEY.test(k)) return `${trimNumber(v, 3)}${k.endsWith('_us') ? ' µs' : ''}`;
  if (PCT_TOKEN.test(k)) return formatPct(v);
  if (k.endsWith('_us')) return formatDuration(v);
  if (k.endsWith('_ms')) return formatDuration(v * 1000);
  if (k.endsWith('_mb')) return formatSizeMB(v);
  if (k.endsWith('_kb')) return formatSizeKB(v);
  if (k.endsWith('_bytes')) return formatSizeKB(v / 1024);
  if (Number.isInteger(v)) return Math.abs(v) >= 10000 && !/(^|_)(rank|step|id)$/.test(k) ? formatCount(v) : String(v);
  return trimNumber(v, Math.abs(v) >= 100 ? 1 : Math.abs(v) >= 1 ? 3 : 4);
}

function cell(key: string, v: unknown): EvidenceCell {
  return { text: formatEvidenceValue(key, v), raw: rawText(v) };
}

function isRowObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The evidence object as items to render: scalars as key/value, arrays of scalars as lists,
 * arrays of row objects as tables (columns: every key, in order of first appearance), nested
 * objects flattened one level ("worst_gap" → "Worst gap · start").
 */
export function evidenceItems(evidence: Record<string, unknown> | null | undefined): EvidenceItem[] {
  const out: EvidenceItem[] = [];
  if (!isRowObject(evidence)) return out;
  for (const [key, v] of Object.entries(evidence)) {
    const label = evidenceLabel(key);
    if (Array.isArray(v)) {
      if (v.length > 0 && v.every(isRowObject)) {
        const cols: string[] = [];
        for (const row of v as Record<string, unknown>[]) for (const c of Object.keys(row)) if (!cols.includes(c)) cols.push(c);
        out.push({
          kind: 'table',
          key,
          label,
          columns: cols.map((c) => ({ key: c, label: evidenceLabel(c) })),
          rows: (v as Record<string, unknown>[]).map((row) => cols.map((c) => cell(c, row[c]))),
        });
      } else if (v.every((x) => !isRowObject(x))) {
        out.push({ kind: 'list', key, label, values: v.map((x) => cell(key, x)) });
      } else {
        out.push({ kind: 'value', key, label, value: { text: JSON.stringify(v), raw: JSON.stringify(v) } });
      }
    } else if (isRowObject(v) && Object.keys(v).length > 0 && Object.values(v).every(isRowObject)) {
      // {"iteration_start": {"count": 1, ...}, "unknown": {...}}: one row per entry, the entry's
      // name first ("by_cause" → a "Cause" column).
      const rows = Object.entries(v as Record<string, Record<string, unknown>>);
      const cols: string[] = [];
      for (const [, row] of rows) for (const c of Object.keys(row)) if (!cols.includes(c)) cols.push(c);
      const first = key.startsWith('by_') ? humanize(key.slice(3)) : 'Name';
      out.push({
        kind: 'table',
        key,
        label,
        columns: [{ key: '', label: first }, ...cols.map((c) => ({ key: c, label: evidenceLabel(c) }))],
        rows: rows.map(([name, row]) => [{ text: name, raw: name }, ...cols.map((c) => cell(c, row[c]))]),
      });
    } else if (isRowObject(v)) {
      for (const [sub, sv] of Object.entries(v)) {
        out.push({ kind: 'value', key: `${key}.${sub}`, label: `${label} · ${evidenceLabel(sub)}`, value: cell(sub, sv) });
      }
    } else {
      out.push({ kind: 'value', key, label, value: cell(key, v) });
    }
  }
  return out;
}

// ---- links ----------------------------------------------------------------------------------

function str(v: unknown): string | undefined {
  if (typeof v === 'string' && v !== '') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

function num(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : undefined;
}

/** A time window (absolute µs, as the trace and memory routes take it) from the link's params. */
function windowOf(p: Record<string, unknown>): { t0: number; t1: number } | undefined {
  const a = num(p.start_us);
  const b = num(p.end_us);
  if (a === undefined || b === undefined || !(b > a)) return undefined;
  return { t0: Math.floor(a), t1: Math.ceil(b) };
}

/** Sortable numeric columns of the Kernels and Operators tables (a link's `sort` outside them
 * would make the table's request fail, so it is dropped). */
const SORT_KEYS: Record<'kernels' | 'operators', readonly string[]> = {
  kernels: ['calls', 'total_us', 'avg_us', 'min_us', 'max_us', 'wait_us'],
  operators: ['calls', 'host_self_us', 'host_total_us', 'device_self_us', 'device_total_us'],
};

function sortOf(view: 'kernels' | 'operators', v: unknown): string | undefined {
  const s = str(v);
  return s && SORT_KEYS[view].includes(s.replace(/^-/, '')) ? s : undefined;
}

/**
 * The URL state a finding's link opens: its view, the profile the finding is about (the link's
 * own worker/span win, then the finding's, then the current one), and the view's filters from
 * the params — kernels/operators: `search` (or `name`), `group_by`, `sort`, `step`; trace: `start_us` +
 * `end_us` (zoom) or `search`/`name` (first hit); memory: `device`, `start_us` + `end_us`.
 */
export function linkState(link: AdvisorLink, finding: Pick<AdvisorFinding, 'worker' | 'span'>, current: ProfileKey): UrlState {
  const p = isRowObject(link.params) ? link.params : {};
  const worker = str(p.worker) ?? finding.worker ?? current.worker;
  const sameWorker = worker === current.worker;
  const span = str(p.span) ?? finding.span ?? (sameWorker ? current.span : undefined);
  const view = typeof link.view === 'string' && link.view ? link.view : 'overview';
  const text = str(p.search) ?? str(p.name) ?? str(p.q);
  const filters: Record<string, string> = {};
  switch (view) {
    case 'kernels': {
      const g = str(p.group_by) ?? 'name';
      const group = ['name', 'type', 'core'].includes(g) ? g : 'name';
      if (group !== 'name') filters['kernels.group'] = group;
      if (text) filters[`kernels.${group}.q`] = text;
      const sort = sortOf('kernels', p.sort);
      if (sort) filters[`kernels.${group}.sort`] = sort;
      const step = str(p.step);
      if (step) filters['kernels.step'] = step;
      break;
    }
    case 'operators': {
      const group = str(p.group_by) === 'name_shape' ? 'name_shape' : 'name';
      if (group !== 'name') filters['operators.group'] = group;
      if (text) filters[`operators.${group}.q`] = text;
      const sort = sortOf('operators', p.sort);
      if (sort) filters[`operators.${group}.sort`] = sort;
      // A named operator is also selected, which shows where it was called from.
      const name = str(p.name);
      if (name) filters['operators.op'] = name;
      break;
    }
    case 'trace': {
      const w = windowOf(p);
      if (w) {
        filters['trace.t0'] = String(w.t0);
        filters['trace.t1'] = String(w.t1);
      } else if (text) {
        // The timeline zooms to the first hit of a search; a window, when given, wins.
        filters['trace.q'] = text;
      }
      break;
    }
    case 'memory': {
      const device = str(p.device);
      if (device) filters['memory.device'] = device;
      const w = windowOf(p);
      if (w) {
        filters['memory.from'] = String(w.t0);
        filters['memory.to'] = String(w.t1);
      }
      break;
    }
    default:
      break;
  }
  return { run: current.run, worker, span, view, filters };
}

/** The hash a link opens (see linkState). */
export function linkHash(link: AdvisorLink, finding: Pick<AdvisorFinding, 'worker' | 'span'>, current: ProfileKey): string {
  return encodeState(linkState(link, finding, current));
}

const LINK_VIEW_TITLES: Record<string, string> = {
  overview: 'Overview',
  operators: 'Operators',
  kernels: 'Kernels',
  memory: 'Memory',
  trace: 'Timeline',
  dispatch: 'Dispatch',
  distributed: 'Distributed',
};

/** Button text of a link: the view and what it is filtered or zoomed to. */
export function linkLabel(link: AdvisorLink): string {
  const p = isRowObject(link.params) ? link.params : {};
  const title = LINK_VIEW_TITLES[link.view] ?? humanize(String(link.view ?? ''));
  const text = str(p.search) ?? str(p.name) ?? str(p.q);
  const w = windowOf(p);
  if ((link.view === 'trace' || link.view === 'memory') && w) return `${title}: ${formatDuration(w.t1 - w.t0)} window`;
  if (text && link.view !== 'memory') return `${title}: “${text}”`;
  if (link.view === 'memory' && str(p.device)) return `${title}: ${str(p.device)}`;
  return title;
}

/** The views a finding's link can open (those `linkState` turns into URL state). Not read
 * from the registry: it imports the Advisor view, which imports this module. */
const LINKABLE_VIEWS: readonly string[] = [
  'overview', 'advisor', 'operators', 'kernels', 'memory', 'trace', 'dispatch', 'distributed',
];

/** Whether the app has a view for the link (unknown views are shown, but not as links). */
export function isKnownView(view: string): boolean {
  return LINKABLE_VIEWS.includes(view);
}
