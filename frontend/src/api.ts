// Typed client of the plugin's HTTP API. Every URL is relative to the directory the bundle
// was loaded from (data/plugin/npu_profiler/), so the plugin works under
// `tensorboard --path_prefix=/x` and behind a reverse proxy, and never leaves the origin.

export type RunState = 'loading' | 'ready' | 'error';

export interface FileError {
  path: string;
  message: string;
}

export interface RunSummary {
  name: string;
  state: RunState;
  progress: number;
  errors: FileError[];
  /** The timeline is indexed after the views are served, with its own progress. */
  trace_state?: 'loading' | 'ready';
  trace_progress?: number;
}

export interface RunsResponse {
  runs: RunSummary[];
  /** False until the first scan of the logdir has finished (no runs then means "not known yet"). */
  scanned?: boolean;
  notes?: string[];
  /** Grows whenever a span's state may have changed; `runs(since)` is held until it does. */
  generation?: number;
}

export interface Worker {
  name: string;
  rank: number | null;
  device: string;
  producer: string;
  spans: string[];
}

export interface RunInfo {
  name: string;
  views: string[];
  workers: Worker[];
}

export interface Step {
  step: number | string;
  total_us: number;
  breakdown: Record<string, number>;
}

export interface StepsResponse {
  categories: string[];
  steps: Step[];
}

export type Row = Record<string, unknown>;

export interface TablePage<R = Row> {
  total_rows: number;
  rows: R[];
}

export interface KernelRow {
  name?: string;
  type?: string;
  core?: string;
  calls: number;
  total_us: number;
  avg_us: number;
  min_us: number;
  max_us: number;
  wait_us: number;
  // AI Core PMU counters (only when the profile has them; docs/http_api.md `kernels`)
  pmu?: Record<string, number>;
  bound?: string | null;
  dominant_pipe?: string | null;
  memory_bound?: number | null;
  pmu_calls?: number;
  block_dim?: number | null;
  core_num?: number | null;
  waves?: number | null;
  tail_waste?: number | null;
  block_dim_mismatch_calls?: number;
  l2_hit_rate?: number | null;
}

/** `counters` of a /kernels answer with PMU counters. */
export interface KernelCounters {
  pipes: string[];
  ratios: string[];
  bound_classes: string[];
  bound_ratio: number;
  ai_core_num: number | null;
  aiv_num: number | null;
  na_cells: number;
}

export interface OperatorRow {
  name: string;
  input_shapes?: string;
  calls: number;
  host_self_us: number;
  host_total_us: number;
  device_self_us: number;
  device_total_us: number;
}

export interface StacksResponse {
  stacks: { stack: string; calls: number }[];
}

export interface MemoryResponse {
  devices: { device: string; peak_allocated_mb: number | null; peak_reserved_mb: number | null; peak_ts_us?: number | null }[];
  curves: { device: string; component: string; points: [number, number | null, number | null][] }[];
  component_peaks: { device: string; component: string; peak_reserved_mb: number | null }[];
  start_us: number | null;
}

export interface AllocationRow {
  name: string;
  device: string;
  size_kb: number;
  alloc_us: number;
  release_us: number | null;
  duration_us: number | null;
}

// ---- advisor (GET /advisor, docs/http_api.md "Advisor") ----
export type Severity = 'high' | 'medium' | 'low' | 'info';

/** Where a finding's evidence is shown: a view and the parameters that filter / zoom it. */
export interface AdvisorLink {
  view: string;
  params: Record<string, unknown>;
}

export interface AdvisorFinding {
  id: string;
  rule: string;
  severity: Severity;
  title: string;
  message: string;
  advice: string;
  /** Estimated time per step that fixing it would save. */
  impact_us: number | null;
  /** The same as a percentage of the step time. */
  impact_pct: number | null;
  worker: string | null;
  span: string | null;
  rank: number | null;
  evidence: Record<string, unknown>;
  links: AdvisorLink[];
}

export interface AdvisorRule {
  rule: string;
  title: string;
  applies: boolean;
  fired: number;
  why_not: string | null;
}

export interface AdvisorResponse {
  findings: AdvisorFinding[];
  rules: AdvisorRule[];
}

/** Identifies one profile: a (run, worker, span). */
export interface ProfileKey {
  run: string;
  worker: string;
  span: string;
}

export interface TableQuery {
  limit?: number;
  offset?: number;
  sort?: string;
  search?: string;
}

export type Params = Record<string, string | number | undefined | null>;

/** An API error with the backend's message (`{"error": "..."}`) or the HTTP status. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Backend answer meaning "still reading files, ask again": `{"state":"loading","progress":p}`. */
export interface LoadingAnswer {
  state: 'loading';
  progress?: number;
}

export function isLoadingAnswer(v: unknown): v is LoadingAnswer {
  return typeof v === 'object' && v !== null && (v as { state?: unknown }).state === 'loading' &&
    !('rows' in v) && !('runs' in v);
}

function defaultBase(): string {
  // The directory of this module: .../data/plugin/npu_profiler/
  try {
    return new URL(/* @vite-ignore */ './', import.meta.url).href;
  } catch {
    return new URL('./', document.baseURI).href;
  }
}

let apiBase = defaultBase();

/** Overrides the API base (tests). */
export function setApiBase(base: string): void {
  apiBase = base.endsWith('/') ? base : `${base}/`;
}

export function getApiBase(): string {
  return apiBase;
}

/** Builds the absolute URL of a route; parameters that are undefined, null or "" are left out. */
export function apiUrl(route: string, params: Params = {}, base: string = apiBase): string {
  const url = new URL(route.replace(/^\/+/, ''), base);
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v));
  }
  return url.href;
}

export function profileParams(key: ProfileKey, extra: Params = {}): Params {
  return { run: key.run, worker: key.worker, span: key.span, ...extra };
}

export function tableParams(q: TableQuery): Params {
  return { limit: q.limit, offset: q.offset, sort: q.sort, search: q.search };
}

/** How long the backend may hold a request asked again after a "still loading" answer
 * (`wait_ms`, docs/http_api.md): it answers as soon as the profile is ready or its progress
 * moved. Short enough that a handful of held requests never keeps the browser's few
 * connections per host from a view that is ready. */
export const HELD_WAIT_MS = 1500;
const MAX_LOADING_URLS = 256;
/** URLs whose last answer was "still loading": asked again, they are held. */
const loadingUrls = new Set<string>();

/** The URL to request for `url`: with `wait_ms` when its last answer was "still loading". */
export function requestUrl(url: string): string {
  if (!loadingUrls.has(url)) return url;
  const held = new URL(url);
  held.searchParams.set('wait_ms', String(HELD_WAIT_MS));
  return held.href;
}

/** Notes whether `url` answered "still loading" (bounded: the oldest are forgotten). */
export function noteLoading(url: string, loading: boolean): void {
  if (!loading) {
    loadingUrls.delete(url);
    return;
  }
  loadingUrls.add(url);
  if (loadingUrls.size > MAX_LOADING_URLS) loadingUrls.delete(loadingUrls.values().next().value as string);
}

/** GET a JSON route; throws ApiError with the backend's message on failure. */
export async function getJson<T>(route: string, params: Params = {}, signal?: AbortSignal): Promise<T> {
  const url = apiUrl(route, params);
  let resp: Response;
  try {
    resp = await fetch(requestUrl(url), { signal, credentials: 'same-origin', headers: { Accept: 'application/json' } });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(`Cannot reach the TensorBoard server (${(e as Error).message})`, 0);
  }
  const text = await resp.text();
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  // 503 {"state":"loading","progress":p}: the profile is still being read; callers poll,
  // and their next request is held by the backend until there is news.
  const loading = resp.status === 503 && isLoadingAnswer(body);
  noteLoading(url, loading);
  if (loading) return body as T;
  if (!resp.ok) {
    const msg =
      body && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string'
        ? (body as { error: string }).error
        : `HTTP ${resp.status} ${resp.statusText}`.trim();
    throw new ApiError(msg, resp.status);
  }
  if (body === undefined) throw new ApiError(`Invalid JSON from ${route}`, resp.status);
  return body as T;
}

export const api = {
  /** With `since` (a `generation` seen), held by the backend until something changed. */
  runs: (signal?: AbortSignal, since?: number) =>
    getJson<RunsResponse>('runs', since === undefined ? {} : { since, wait_ms: HELD_WAIT_MS }, signal),
  run: (run: string, signal?: AbortSignal) => getJson<RunInfo>('run', { run }, signal),
  steps: (key: ProfileKey, signal?: AbortSignal) => getJson<StepsResponse>('steps', profileParams(key), signal),
  kernels: (key: ProfileKey, groupBy: string, q: TableQuery, step?: string, signal?: AbortSignal, bound?: string) =>
    getJson<TablePage<KernelRow> & { counters?: KernelCounters }>(
      'kernels', profileParams(key, { group_by: groupBy, step, bound, ...tableParams(q) }), signal),
  operators: (key: ProfileKey, groupBy: string, q: TableQuery, signal?: AbortSignal) =>
    getJson<TablePage<OperatorRow>>('operators', profileParams(key, { group_by: groupBy, ...tableParams(q) }), signal),
  operatorStack: (key: ProfileKey, name: string, inputShapes: string | undefined, signal?: AbortSignal) =>
    getJson<StacksResponse>('operators/stack', profileParams(key, { name, input_shapes: inputShapes }), signal),
  memory: (key: ProfileKey, signal?: AbortSignal) => getJson<MemoryResponse>('memory', profileParams(key), signal),
  allocations: (key: ProfileKey, range: { start_us?: number; end_us?: number }, q: TableQuery, signal?: AbortSignal) =>
    getJson<TablePage<AllocationRow>>(
      'memory/allocations',
      profileParams(key, { start_us: range.start_us, end_us: range.end_us, ...tableParams(q) }),
      signal,
    ),
  /** The run's findings, or one profile's when `profile` is given. */
  advisor: (run: string, profile?: { worker: string; span: string }, signal?: AbortSignal) =>
    getJson<AdvisorResponse>('advisor', { run, worker: profile?.worker, span: profile?.span }, signal),
  traceDownloadUrl: (key: ProfileKey) => apiUrl('trace/download', profileParams(key)),
};

/** The CSV export URL of a table route: same filters and sort, no paging, format=csv. */
export function csvUrl(route: string, params: Params): string {
  const p: Params = { ...params, format: 'csv' };
  delete p.limit;
  delete p.offset;
  return apiUrl(route, p);
}
