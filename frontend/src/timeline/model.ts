// Trace API types and client (routes under trace/, see docs/http_api.md).
import { getJson, profileParams, type ProfileKey } from '../api';

export interface TrackInfo {
  id: number;
  process: string;
  thread: string;
  pid: string;
  tid: string;
  kind: string;
  sort: number;
  max_depth: number;
  slices: number;
  counters: string[];
}

export interface TracksResponse {
  start_us: number;
  end_us: number;
  origin_us: number;
  tracks: TrackInfo[];
  steps: { step: number; start_us: number; end_us: number }[];
}

/** [id, rel_start_us, dur_us, name_index] */
export type SliceItem = [number, number, number, number];
/** [rel_start_us, dur_us, count, busy_us, name_index] */
export type BlockItem = [number, number, number, number, number];

export interface Lane {
  track: number;
  depth: number;
  slices: SliceItem[];
  blocks: BlockItem[];
}

export interface ViewportResponse {
  start_us: number;
  end_us: number;
  px_us: number;
  names: string[];
  lanes: Lane[];
}

export interface SliceBrief {
  id: number;
  name: string;
  track: number;
  depth: number;
  start_us: number;
  dur_us: number;
}

export interface FlowLink extends SliceBrief {
  flow: string;
  direction: 'in' | 'out';
  hop: number;
  from: number;
}

export interface SliceDetails extends SliceBrief {
  category: string;
  end_us: number;
  args: Record<string, unknown>;
  call_stack: string;
  input_shapes: string;
  parents: SliceBrief[];
  flows: FlowLink[];
}

export interface SearchResponse {
  total: number;
  offset: number;
  hits: SliceBrief[];
}

export interface CounterSeries {
  track: number;
  series: string;
  points: [number, number | null][];
  max: number | null;
  min: number | null;
}

export interface CountersResponse {
  start_us: number;
  end_us: number;
  series: CounterSeries[];
}

export interface SummaryResponse {
  start_us: number;
  end_us: number;
  slices: number;
  rows: { name: string; count: number; total_us: number }[];
}

export const traceApi = {
  tracks: (k: ProfileKey, signal?: AbortSignal) => getJson<TracksResponse>('trace/tracks', profileParams(k), signal),
  viewport: (k: ProfileKey, start: number, end: number, width: number, tracks: number[] | null, signal?: AbortSignal) =>
    getJson<ViewportResponse>(
      'trace/viewport',
      profileParams(k, { start_us: start, end_us: end, width_px: Math.max(1, Math.round(width)), tracks: tracks ? tracks.join(',') : undefined }),
      signal,
    ),
  slice: (k: ProfileKey, id: number, signal?: AbortSignal) => getJson<SliceDetails>('trace/slice', profileParams(k, { id }), signal),
  search: (k: ProfileKey, q: string, offset: number, signal?: AbortSignal) =>
    getJson<SearchResponse>('trace/search', profileParams(k, { q, offset, limit: 200 }), signal),
  counters: (k: ProfileKey, start: number, end: number, width: number, signal?: AbortSignal) =>
    getJson<CountersResponse>('trace/counters', profileParams(k, { start_us: start, end_us: end, width_px: Math.max(1, Math.round(width)) }), signal),
  summary: (k: ProfileKey, start: number, end: number, signal?: AbortSignal) =>
    getJson<SummaryResponse>('trace/summary', profileParams(k, { start_us: start, end_us: end, limit: 20 }), signal),
};
