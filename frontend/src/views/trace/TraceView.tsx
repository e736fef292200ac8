// Trace view: a canvas timeline served by the backend (level of detail included), so the
// browser only ever holds one viewport's worth of slices whatever the trace size. This file
// puts the parts together and paints; data, input, search, toolbar and panels live beside it.
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { api } from '../../api';
import { ErrorBox, Loading } from '../../components/States';
import { useTheme } from '../../theme';
import { buildLayout, LABEL_W } from '../../timeline/layout';
import { traceApi, type SliceDetails } from '../../timeline/model';
import { draw, type Scene } from '../../timeline/render';
import { around, formatDuration, zoomAt, type Window } from '../../timeline/scale';
import type { ViewProps } from '../types';
import { DetailsPanel, MeasurePanel } from './TracePanels';
import { TraceToolbar, type StepWindow } from './TraceToolbar';
import { useCanvasInput, type Measure, type Mode } from './useCanvasInput';
import { useTraceSearch } from './useTraceSearch';
import { useTracks } from './useTracks';
import { useViewportData } from './useViewportData';

const VIEW_H = 560;

export function TraceView({ profile, filters, setFilters }: ViewProps) {
  const winRef = useRef<Window>({ start: 0, end: 1 });
  const { tracks, error: tracksError, loadingWhat } = useTracks(profile, filters, winRef);
  const [error, setError] = useState<string>();
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const [details, setDetails] = useState<SliceDetails | null>(null);
  const [measure, setMeasure] = useState<Measure>(null);
  const [mode, setMode] = useState<Mode>('pan');
  const [query, setQuery] = useState(filters['trace.q'] ?? '');
  const [hover, setHover] = useState<string>('');
  const [painted, setPainted] = useState(0);
  const [width, setWidth] = useState(1000);
  const [, setTick] = useState(0);
  const dark = useTheme() === 'dark';

  const canvasRef = useRef<HTMLCanvasElement>(null);
  const boxRef = useRef<HTMLDivElement>(null);
  const scrollRef = useRef(0);
  const sceneRef = useRef<Scene | null>(null);
  const frame = useRef(0);

  const origin = tracks?.start_us ?? 0;
  const bounds: Window = useMemo(() => ({ start: 0, end: tracks ? Math.max(tracks.end_us - tracks.start_us, 0.001) : 1 }), [tracks]);
  const layout = useMemo(() => buildLayout(tracks?.tracks ?? [], collapsed), [tracks, collapsed]);
  const steps: StepWindow[] = useMemo(
    () => (tracks?.steps ?? []).map((s) => ({ step: s.step, start: s.start_us - origin, end: s.end_us - origin })),
    [tracks, origin],
  );
  const plotW = Math.max(width - LABEL_W, 1);

  // ---- size ------------------------------------------------------------------------------
  useEffect(() => {
    const el = boxRef.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    setWidth(el.clientWidth);
    return () => ro.disconnect();
  }, [tracks]);

  // ---- data of the window -----------------------------------------------------------------
  const onError = useCallback((message: string) => setError(message), []);
  const viewport = useViewportData({
    profile,
    tracks,
    layout,
    plotW,
    origin,
    winRef,
    // Called after this render's `paint` exists (answers arrive asynchronously).
    onData: (slices) => {
      paint();
      if (slices) setPainted((n) => n + 1);
    },
    onError,
  });
  const { requestData } = viewport;

  // ---- drawing (at most once per animation frame) -----------------------------------------
  const paint = useCallback(() => {
    cancelAnimationFrame(frame.current);
    frame.current = requestAnimationFrame(() => {
      const c = canvasRef.current;
      if (!c || !tracks) return;
      const dpr = window.devicePixelRatio || 1;
      const h = VIEW_H;
      if (c.width !== Math.round(width * dpr) || c.height !== Math.round(h * dpr)) {
        c.width = Math.round(width * dpr);
        c.height = Math.round(h * dpr);
        c.style.width = `${width}px`;
        c.style.height = `${h}px`;
      }
      const scene: Scene = {
        width,
        height: h,
        dpr,
        win: winRef.current,
        layout,
        scrollY: scrollRef.current,
        data: viewport.data.current,
        counters: viewport.counters.current,
        steps,
        selected: details ? { ...details, rel: details.start_us - origin } : null,
        flows: details ? details.flows.map((f) => ({ ...f, rel: f.start_us - origin })) : [],
        measure,
        collapsed,
        dark,
      };
      sceneRef.current = scene;
      const ctx = c.getContext('2d');
      if (ctx) draw(ctx, scene);
    });
  }, [tracks, width, layout, steps, details, origin, measure, collapsed, dark, viewport.data, viewport.counters]);


  const setWin = useCallback(
    (w: Window) => {
      winRef.current = w;
      paint();
      requestData();
      setTick((n) => n + 1);
    },
    [paint, requestData],
  );

  useEffect(() => paint(), [paint, painted]);

  // ---- selection, zoom -------------------------------------------------------------------
  // The latest selection wins: its request aborts the one before, so a slow answer for a
  // slice selected earlier never replaces the details of the one selected now.
  const selecting = useRef<AbortController | null>(null);
  const select = useCallback(
    (id: number | null) => {
      selecting.current?.abort();
      selecting.current = null;
      if (id === null) {
        setDetails(null);
        return;
      }
      const ctrl = new AbortController();
      selecting.current = ctrl;
      traceApi.slice(profile, id, ctrl.signal).then(
        (d) => {
          if (!ctrl.signal.aborted) setDetails(d);
        },
        (e: Error) => {
          if (!ctrl.signal.aborted) setError(e.message);
        },
      );
    },
    [profile],
  );
  useEffect(() => () => selecting.current?.abort(), []);
  const zoomTo = useCallback((startRel: number, dur: number) => setWin(around(startRel, startRel + Math.max(dur, 0.01), 0.3)), [setWin]);
  const hasRange = !!measure && measure.a !== measure.b;
  const fit = () => {
    if (measure && hasRange) setWin(around(Math.min(measure.a, measure.b), Math.max(measure.a, measure.b), 0.02));
    else setWin({ ...bounds });
  };

  // ---- search ----------------------------------------------------------------------------
  const showHit = useCallback(
    (startRel: number, dur: number, id: number) => {
      zoomTo(startRel, dur);
      select(id);
    },
    [zoomTo, select],
  );
  const { search, runSearch, step } = useTraceSearch({ profile, origin, show: showHit, onError });
  // deep link: trace.q opens the first hit
  useEffect(() => {
    if (tracks && filters['trace.q']) runSearch(filters['trace.q']);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [tracks]);

  const input = useCanvasInput({
    canvasRef,
    sceneRef,
    winRef,
    scrollRef,
    viewH: VIEW_H,
    layout,
    plotW,
    bounds,
    mode,
    setMode,
    measure,
    setMeasure,
    collapsed,
    setCollapsed,
    setWin,
    paint,
    select,
    zoomTo,
    fit,
    setHover,
  });

  const shownError = error ?? tracksError;
  if (shownError) return <ErrorBox title="Cannot show the timeline" message={shownError} />;
  if (!tracks) return <Loading what={loadingWhat} />;

  const w = winRef.current;
  return (
    <div className="view trace-view" data-testid="view-trace">
      <TraceToolbar
        hasRange={hasRange}
        mode={mode}
        steps={steps}
        query={query}
        search={search}
        downloadUrl={api.traceDownloadUrl(profile)}
        onFit={fit}
        onZoom={(factor) => setWin(zoomAt(w, factor, plotW / 2, plotW, bounds))}
        onToggleMode={() => setMode(mode === 'pan' ? 'measure' : 'pan')}
        onStep={(st) => setWin(around(st.start, st.end, 0.02))}
        onQuery={setQuery}
        onSearch={() => {
          setFilters({ 'trace.q': query || undefined });
          runSearch(query);
        }}
        onHit={step}
      />
      <div className="trace-status muted small" data-testid="trace-status">
        {formatDuration(w.start)} – {formatDuration(w.end)} ({formatDuration(w.end - w.start)}) · wheel/W/S zoom · drag/A/D pan · Shift+wheel scroll ·
        Shift+drag measure · {hover}
      </div>
      <div ref={boxRef} className="trace-canvas-box">
        <canvas
          ref={canvasRef}
          data-testid="trace-canvas"
          data-painted={painted}
          data-window={`${w.start},${w.end}`}
          tabIndex={0}
          style={{ display: 'block', width: '100%', height: VIEW_H, cursor: mode === 'measure' ? 'crosshair' : 'grab', outline: 'none' }}
          {...input}
        />
      </div>
      <div className="trace-panels">
        {measure && hasRange && <MeasurePanel profile={profile} origin={origin} a={measure.a} b={measure.b} />}
        {details && (
          <DetailsPanel
            details={details}
            origin={origin}
            onFlow={(f) => {
              zoomTo(f.start_us - origin, f.dur_us);
              select(f.id);
            }}
          />
        )}
      </div>
    </div>
  );
}
