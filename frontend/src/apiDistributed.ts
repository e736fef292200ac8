// Client of the distributed-view and compare routes (docs/http_api.md, "Distributed view and
// comparison"). Kept apart from api.ts so each view's client grows on its own.
import { getJson, tableParams, type Params, type ProfileKey, type Row, type TablePage, type TableQuery } from './api';

export interface Breakdown {
  computing?: number;
  communication_not_overlapped?: number;
  overlapped?: number;
  free?: number;
  [k: string]: number | undefined;
}

export interface RankStats {
  rank: number;
  worker: string;
  step_count: number;
  avg_total_us: number | null;
  avg_computing_us: number | null;
  avg_communication_not_overlapped_us: number | null;
  avg_overlapped_us: number | null;
  avg_free_us: number | null;
  avg_comm_us: number | null;
  avg_wait_us: number | null;
}

export interface RankPage {
  rank: number;
  worker: string;
  steps: { step: number; total_us: number; breakdown: Breakdown }[];
  stats: RankStats;
}

export interface Finding {
  kind: string;
  rank: number | null;
  link: string | null;
  message: string;
  evidence: Record<string, unknown>;
}

export interface Quantiles {
  min: number | null;
  p25: number | null;
  median: number | null;
  p75: number | null;
  max: number | null;
  mean: number | null;
}

export interface LinkRow {
  link: string;
  src: number;
  dst: number;
  transport: string;
  size_mb: number;
  time_us: number;
  bandwidth_gbps: number | null;
}

export interface DistributedResponse {
  run: string;
  span_count: number;
  total_ranks: number;
  rank_count: number;
  categories: string[];
  steps: number[];
  ranks: RankPage[];
  failed: { rank: number; worker: string; span: string; error: string | null }[];
  distribution: {
    avg_step_us: Quantiles;
    histogram: { edges: number[]; counts: number[] };
    per_step: (Quantiles & { step: number })[];
    [k: string]: unknown;
  };
  slowest: RankStats[];
  fastest: RankStats[];
  heatmap: { steps: number[]; rows: { label: string; ranks: [number, number] }[]; values: (number | null)[][]; ranks_per_row: number; aggregate: string | null };
  comm_source: string | null;
  comm_ops: Row[];
  matrix: { rank_count: number; total_links: number; links: LinkRow[] } | null;
  findings: Finding[];
}

export interface CompareStepRow {
  category: string;
  base_us: number | null;
  exp_us: number | null;
  delta_us: number | null;
  delta_pct: number | null;
}

export interface CompareStepsResponse {
  base: { producer: string; device: string; step_count: number; categories: string[] };
  exp: { producer: string; device: string; step_count: number; categories: string[] };
  rows: CompareStepRow[];
  common: CompareStepRow[];
}

export interface CompareSummary {
  base_total_us: number;
  exp_total_us: number;
  both: number;
  only_base: number;
  only_exp: number;
}

export type CompareTable = TablePage<Row> & { summary?: CompareSummary; time_basis?: { base: string; exp: string } };

export function pairParams(base: ProfileKey, exp: ProfileKey, extra: Params = {}): Params {
  return {
    base_run: base.run,
    base_worker: base.worker,
    base_span: base.span,
    exp_run: exp.run,
    exp_worker: exp.worker,
    exp_span: exp.span,
    ...extra,
  };
}

export const distApi = {
  distributed: (run: string, spanIndex: number, rankSort: string, rankLimit: number, signal?: AbortSignal) =>
    getJson<DistributedResponse>('distributed', { run, span_index: spanIndex, rank_sort: rankSort, rank_limit: rankLimit }, signal),
  commOps: (run: string, spanIndex: number, groupBy: string, q: TableQuery, signal?: AbortSignal) =>
    getJson<TablePage<Row>>('distributed/comm_ops', { run, span_index: spanIndex, group_by: groupBy, ...tableParams(q) }, signal),
  links: (run: string, spanIndex: number, q: TableQuery, signal?: AbortSignal) =>
    getJson<TablePage<LinkRow>>('distributed/links', { run, span_index: spanIndex, ...tableParams(q) }, signal),
  compareSteps: (base: ProfileKey, exp: ProfileKey, signal?: AbortSignal) =>
    getJson<CompareStepsResponse>('compare/steps', pairParams(base, exp), signal),
  compareOperators: (base: ProfileKey, exp: ProfileKey, groupBy: string, presence: string, q: TableQuery, signal?: AbortSignal) =>
    getJson<CompareTable>('compare/operators', pairParams(base, exp, { group_by: groupBy, presence, ...tableParams(q) }), signal),
  compareKernels: (base: ProfileKey, exp: ProfileKey, groupBy: string, presence: string, q: TableQuery, signal?: AbortSignal) =>
    getJson<CompareTable>('compare/kernels', pairParams(base, exp, { group_by: groupBy, presence, ...tableParams(q) }), signal),
};

/** Encodes a profile key for the URL state ("run\u0001worker\u0001span" would be unreadable): JSON. */
export function encodeProfile(p: ProfileKey): string {
  return JSON.stringify([p.run, p.worker, p.span]);
}

export function decodeProfile(s: string | undefined): ProfileKey | undefined {
  if (!s) return undefined;
  try {
    const v = JSON.parse(s) as unknown;
    if (Array.isArray(v) && v.length === 3 && v.every((x) => typeof x === 'string')) {
      return { run: v[0] as string, worker: v[1] as string, span: v[2] as string };
    }
  } catch {
    /* not a profile */
  }
  return undefined;
}
