import { useCallback, useMemo, useRef } from 'react';
import { api, csvUrl, profileParams, type AllocationRow, type MemoryResponse } from '../api';
import type { ViewProps } from './types';
import { memoryCurveOption, memoryStart } from '../charts';
import { Chart, type ChartInstance } from '../components/Chart';
import { DataTable, localPage, toCsv, type Column } from '../components/DataTable';
import { ErrorBox, Loading, Notice } from '../components/States';
import { formatDuration, formatSizeMB } from '../format';
import { useAsync } from '../hooks';
import { traceHash, traceLinkProps, windowAround } from '../timeline/link';
import { tableState, tableStatePatch } from './tableState';

type DeviceRow = MemoryResponse['devices'][number];
type PeakRow = MemoryResponse['component_peaks'][number];

export function memoryDevices(mem: MemoryResponse): string[] {
  const out: string[] = [];
  for (const d of mem.devices) if (!out.includes(d.device)) out.push(d.device);
  for (const c of mem.curves) if (!out.includes(c.device)) out.push(c.device);
  return out;
}

/** The device's peak (time, size) and a timeline window around it, if the curve has one. */
export function devicePeak(mem: MemoryResponse, device: string | undefined): { ts_us: number; mb: number | null; t0: number; t1: number } | undefined {
  const d = mem.devices.find((x) => x.device === device);
  const ts = d?.peak_ts_us;
  if (!d || typeof ts !== 'number' || !Number.isFinite(ts)) return undefined;
  let lo = Infinity;
  let hi = -Infinity;
  for (const c of mem.curves)
    if (c.device === device)
      for (const p of c.points) {
        if (p[0] < lo) lo = p[0];
        if (p[0] > hi) hi = p[0];
      }
  const w = windowAround(ts, Number.isFinite(hi - lo) ? hi - lo : 0);
  return { ts_us: ts, mb: d.peak_allocated_mb ?? d.peak_reserved_mb, ...w };
}

/** Parses the time range filter (absolute µs, as the API takes it). */
export function parseRange(from?: string, to?: string): { start_us: number; end_us: number } | undefined {
  const a = Number(from);
  const b = Number(to);
  if (from === undefined || to === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b <= a) return undefined;
  return { start_us: a, end_us: b };
}

export function MemoryView({ profile, filters, setFilters }: ViewProps) {
  const pk = [profile.run, profile.worker, profile.span];
  const res = useAsync((signal) => api.memory(profile, signal), pk);
  const mem = res.data;
  const devices = useMemo(() => (mem ? memoryDevices(mem) : []), [mem]);
  const device = devices.includes(filters['memory.device'] ?? '') ? filters['memory.device']! : devices[0];
  const range = parseRange(filters['memory.from'], filters['memory.to']);
  const start = mem ? memoryStart(mem) : 0;
  const option = useMemo(() => (mem && device !== undefined ? memoryCurveOption(mem, device) : null), [mem, device]);

  // Latest values for the chart's event handlers (bound once per chart instance).
  const live = useRef({ start, range, setFilters });
  live.current = { start, range, setFilters };
  const bound = useRef(new WeakSet<ChartInstance>());

  const onReady = useCallback((chart: ChartInstance) => {
    // Dragging on the plot selects a time range (brush along x).
    chart.dispatchAction({ type: 'takeGlobalCursor', key: 'brush', brushOption: { brushType: 'lineX', brushMode: 'single' } });
    const r = live.current.range;
    chart.dispatchAction({
      type: 'brush',
      areas: r ? [{ brushType: 'lineX', xAxisIndex: 0, coordRange: [r.start_us - live.current.start, r.end_us - live.current.start] }] : [],
    });
    if (bound.current.has(chart)) return;
    bound.current.add(chart);
    chart.on('brushEnd', (ev: unknown) => {
      const areas = (ev as { areas?: { coordRange?: number[] }[] }).areas ?? [];
      const cr = areas[0]?.coordRange;
      const { start: s, setFilters: set } = live.current;
      if (!cr || cr.length < 2 || !(cr[1] > cr[0])) {
        set({ 'memory.from': undefined, 'memory.to': undefined, 'memory.alloc.page': undefined });
        return;
      }
      set({
        'memory.from': String(Math.floor(cr[0] + s)),
        'memory.to': String(Math.ceil(cr[1] + s)),
        'memory.alloc.page': undefined,
      });
    });
  }, []);

  const peak = mem ? devicePeak(mem, device) : undefined;

  if (res.error) return <ErrorBox message={res.error} />;
  if (!mem) return <Loading what="memory" progress={res.progress} />;
  if (devices.length === 0) return <Notice>This profile has no memory records (profile with profile_memory=True).</Notice>;

  const allocColumns: Column<AllocationRow>[] = [
    { key: 'name', label: 'Operator' },
    { key: 'device', label: 'Device', width: 'minmax(80px, 0.8fr)' },
    { key: 'size_kb', label: 'Size', kind: 'sizeKB' },
    { key: 'alloc_us', label: 'Allocated at', kind: 'duration', text: (r) => relTime(r.alloc_us, start) },
    { key: 'release_us', label: 'Released at', kind: 'duration', text: (r) => relTime(r.release_us, start) },
    { key: 'duration_us', label: 'Duration', kind: 'duration' },
  ];
  const deviceColumns: Column<DeviceRow>[] = [
    { key: 'device', label: 'Device' },
    { key: 'peak_allocated_mb', label: 'Peak allocated', kind: 'sizeMB' },
    { key: 'peak_reserved_mb', label: 'Peak reserved', kind: 'sizeMB' },
  ];
  const peakColumns: Column<PeakRow>[] = [
    { key: 'device', label: 'Device', width: 'minmax(100px, 1fr)' },
    { key: 'component', label: 'Component' },
    { key: 'peak_reserved_mb', label: 'Peak reserved', kind: 'sizeMB' },
  ];
  const allocTs = tableState(filters, 'memory.alloc');
  const allocParams = profileParams(profile, { start_us: range?.start_us, end_us: range?.end_us });

  return (
    <div className="view" data-testid="view-memory">
      <div className="controls">
        <label className="inline-field">
          Device
          <select data-testid="memory-device" value={device} onChange={(e) => setFilters({ 'memory.device': e.target.value })}>
            {devices.map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </label>
        <span className="muted">Drag on the chart to select a time range; the allocations table shows what was allocated in it.</span>
      </div>
      <section className="card">
        <h2>Memory usage — {device}</h2>
        <Chart option={option!} label={`Memory curves of ${device}`} testId="chart-memory" height={360} onReady={onReady} />
        <p className="small muted">
          {peak && (
            <>
              Peak {peak.mb !== null ? formatSizeMB(peak.mb) : ''} at {formatDuration(peak.ts_us - start)}:{' '}
              <a data-testid="memory-peak-trace-link" {...traceLinkProps(traceHash(profile, { t0: peak.t0, t1: peak.t1 }))}>
                show in the timeline
              </a>
            </>
          )}
          {range && (
            <>
              {peak ? ' · ' : ''}
              <a data-testid="memory-range-trace-link" {...traceLinkProps(traceHash(profile, { t0: range.start_us, t1: range.end_us }))}>
                Show the selected range in the timeline
              </a>
            </>
          )}
        </p>
      </section>
      <section className="card">
        <h2>
          Allocations
          {range ? (
            <span className="range-chip" data-testid="memory-range">
              {formatDuration(range.start_us - start)} – {formatDuration(range.end_us - start)}
              <button
                type="button"
                className="btn small"
                aria-label="Clear time range"
                onClick={() => setFilters({ 'memory.from': undefined, 'memory.to': undefined, 'memory.alloc.page': undefined })}
              >
                ×
              </button>
            </span>
          ) : (
            <span className="muted small"> (whole profile)</span>
          )}
        </h2>
        <DataTable<AllocationRow>
          label="Allocations"
          testId="table-allocations"
          columns={allocColumns}
          deps={[...pk, range?.start_us, range?.end_us]}
          load={(q, signal) => api.allocations(profile, range ?? {}, q, signal)}
          state={allocTs}
          onStateChange={(s) => setFilters(tableStatePatch('memory.alloc', s))}
          csvHref={(q) => csvUrl('memory/allocations', { ...allocParams, sort: q.sort, search: q.search })}
          csvName="allocations.csv"
          searchPlaceholder="Search operator…"
        />
      </section>
      <div className="grid-2 even">
        <section className="card">
          <h2>Peaks per device</h2>
          <DataTable<DeviceRow>
            label="Device peaks"
            testId="table-memory-devices"
            columns={deviceColumns}
            deps={[mem]}
            load={async (q) => localPage(mem.devices, q, 'device')}
            state={tableState(filters, 'memory.dev')}
            onStateChange={(s) => setFilters(tableStatePatch('memory.dev', s))}
            csvText={(q) => toCsv(localPage(mem.devices, q, 'device').rows, deviceColumns.map((c) => c.key))}
            csvName="memory_devices.csv"
            searchable={false}
            maxHeight={240}
          />
        </section>
        <section className="card">
          <h2>Peak reserved per component</h2>
          <DataTable<PeakRow>
            label="Component peaks"
            testId="table-memory-components"
            columns={peakColumns}
            deps={[mem]}
            load={async (q) => localPage(mem.component_peaks, q, 'component')}
            state={tableState(filters, 'memory.comp')}
            onStateChange={(s) => setFilters(tableStatePatch('memory.comp', s))}
            csvText={(q) => toCsv(localPage(mem.component_peaks, q, 'component').rows, peakColumns.map((c) => c.key))}
            csvName="memory_components.csv"
            searchPlaceholder="Search component…"
            maxHeight={240}
          />
        </section>
      </div>
    </div>
  );
}

function relTime(us: number | null | undefined, start: number): string {
  if (us === null || us === undefined || us < 0) return '—';
  return formatDuration(us - start);
}
