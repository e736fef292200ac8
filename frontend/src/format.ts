// Number and text formatting shared by tables, charts and key figures. Pure functions.

const DASH = '—';

function isMissing(v: unknown): v is null | undefined {
  return v === null || v === undefined || (typeof v === 'number' && !Number.isFinite(v));
}

/** Rounds to `decimals` decimals, dropping trailing zeros ("1.50" → "1.5"). */
export function trimNumber(v: number, decimals: number): string {
  const s = v.toFixed(decimals);
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

function scaled(v: number): number {
  const a = Math.abs(v);
  if (a >= 100) return 0;
  if (a >= 10) return 1;
  return 2;
}

/** A duration given in microseconds, with a unit chosen by magnitude: µs, ms or s. */
export function formatDuration(us: number | null | undefined): string {
  if (isMissing(us)) return DASH;
  const a = Math.abs(us);
  if (a === 0) return '0 µs';
  if (a < 1000) return `${trimNumber(us, a >= 100 ? 0 : a >= 10 ? 1 : 2)} µs`;
  if (a < 1_000_000) return `${trimNumber(us / 1000, scaled(us / 1000))} ms`;
  return `${trimNumber(us / 1_000_000, scaled(us / 1_000_000))} s`;
}

/** A size given in KB (KiB), shown as KB, MB or GB. */
export function formatSizeKB(kb: number | null | undefined): string {
  if (isMissing(kb)) return DASH;
  const a = Math.abs(kb);
  if (a === 0) return '0 KB';
  if (a < 1) return `${trimNumber(kb * 1024, 0)} B`;
  if (a < 1024) return `${trimNumber(kb, scaled(kb))} KB`;
  if (a < 1024 * 1024) return `${trimNumber(kb / 1024, scaled(kb / 1024))} MB`;
  return `${trimNumber(kb / (1024 * 1024), scaled(kb / (1024 * 1024)))} GB`;
}

/** A size given in MB (MiB), shown as KB, MB or GB. */
export function formatSizeMB(mb: number | null | undefined): string {
  if (isMissing(mb)) return DASH;
  return formatSizeKB(mb * 1024);
}

/** An integer count with thousands separators (1234567 → "1,234,567"). */
export function formatCount(n: number | null | undefined): string {
  if (isMissing(n)) return DASH;
  const neg = n < 0;
  const digits = Math.round(Math.abs(n)).toString();
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return neg ? `-${grouped}` : grouped;
}

/** A fraction 0..1 as a percentage ("12.3%"). */
export function formatPercent(fraction: number | null | undefined, decimals = 1): string {
  if (isMissing(fraction)) return DASH;
  return `${(fraction * 100).toFixed(decimals)}%`;
}

/** Escapes text for the few places that need an HTML string (ECharts tooltips). */
export function escapeHtml(text: unknown): string {
  return String(text ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Shortens long names for chart legends and axis labels (tooltips show the full name). */
export function truncate(text: string, max = 40): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Human name of a breakdown category or column key ("comm_not_overlapped" → "Comm not overlapped"). */
export function humanize(key: string): string {
  const s = key.replace(/[_\s]+/g, ' ').trim();
  return s ? s.charAt(0).toUpperCase() + s.slice(1) : s;
}
