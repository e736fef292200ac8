// Trace view: a canvas timeline served by the backend (level of detail included), so the
// browser only ever holds one viewport's worth of slices whatever the trace size.
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { api } from '../api';
import type { ViewProps } from '../App';
import { ErrorBox, Loading } from '../components/States';
import { useTheme } from '../theme';
import { buildLayout, LABEL_W, RULER_H } from '../timeline/layout';
import {
  traceApi,
  type CountersResponse,
  type SliceDetails,
  type SummaryResponse,
  type TracksResponse,
} from '../timeline/model';
import { searchPageOffset, stepHit } from '../timeline/link';
import { draw, hitTest, laneData, type LaneData, type Scene } from '../timeline/render';
import { around, fetchWindow, formatDuration, panBy, zoomAt, type Window } from '../timeline/scale';

const VIEW_H = 560;

export function TraceView({ profile, filters, setFilters }: ViewProps) {
  const [tracks, setTracks] = useState<TracksResponse>();
  const [error, setError] = useState<string>();
  const [loadingMsg, setLoadingMsg] = useState<string>('timeline');
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const [details, setDetails] = useState<SliceDetails | null>(null);
  const [measure, setMeasure] = useState<{ a: number; b: number } | null>(null);
  const [summary, setSummary] = useState<SummaryResponse | null>(null);
  const [mode, setMode] = useState<'pan' | 'measure'>('pan');
  const [query, setQuery] = useState(filters['trace.q'] ?? '');
  // One page of hits at a time (`offset` = number of the first); `pos` is over all `total`.
  const [search, setSearch] = useState<{ q: string; total: number; pos: number; offset: number; ids: { id: number; start_us: number; dur_us: number }[] } | null>(null);
  const [hover, setHover] = useState<string>('');
  const [painted, setPainted] = useState(0);
  const [retry, setRetry] = useState(0);
  const dark = useTheme() === 'dark';

  const canvasRef = useRef<HTMLCanvasElement>(null);
  const boxRef = useRef<HTMLDivElement>(null);
  const winRef = useRef<Window>({ start: 0, end: 1 });
  const scrollRef = useRef(0);
  const dataRef = useRef<LaneData | null>(null);
  const countersRef = useRef<{ base: number; series: CountersResponse['series'] } | null>(null);
  const fetchedRef = useRef<{ start: number; end: number; px: number; tracks: string } | null>(null);
  const frame = useRef(0);
  const [width, setWidth] = useState(1000);
  const [, setTick] = useState(0);

  const origin = tracks?.start_us ?? 0;
  const bounds: Window = useMemo(() => ({ start: 0, end: tracks ? Math.max(tracks.end_us - tracks.start_us, 0.001) : 1 }), [tracks]);
  const layout = useMemo(() => buildLayout(tracks?.tracks ?? [], collapsed), [tracks, collapsed]);
  const steps = useMemo(
    () => (tracks?.steps ?? []).map((s) => ({ step: s.step, start: s.start_us - origin, end: s.end_us - origin })),
    [tracks, origin],
  );
  const plotW = Math.max(width - LABEL_W, 1);

  // ---- load tracks (polls while the timeline is being indexed) --------------------------
  useEffect(() => {
    const ctrl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = () => {
      traceApi.tracks(profile, ctrl.signal).then(
        (t) => {
          if ((t as unknown as { state?: string }).state === 'loading') {
            setLoadingMsg('timeline index');
            timer = setTimeout(load, 1000);
            return;
          }
          const full = { start: 0, end: Math.max(t.end_us - t.start_us, 0.001) };
          const t0 = Number(filters['trace.t0']);
          const t1 = Number(filters['trace.t1']);
          winRef.current = Number.isFinite(t0) && Number.isFinite(t1) && t1 > t0 ? around(t0 - t.start_us, t1 - t.start_us, 0.02) : full;
          setTracks(t);
        },
        (e: Error) => {
          if (e.name !== 'AbortError') setError(e.message);
        },
      );
    };
    load();
    return () => {
      ctrl.abort();
      if (timer) clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [profile.run, profile.worker, profile.span]);

  // ---- size ------------------------------------------------------------------------------
  useEffect(() => {
    const el = boxRef.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setWidth(el.clientWidth));
    ro.observe(el);
    setWidth(el.clientWidth);
    return () => ro.disconnect();
  }, [tracks]);

  // ---- drawing ---------------------------------------------------------------------------
  const sceneRef = useRef<Scene | null>(null);
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
        data: dataRef.current,
        counters: countersRef.current,
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
  }, [tracks, width, layout, steps, details, origin, measure, collapsed, dark]);

  // ---- data for the window (debounced; a margin on each side makes panning smooth) ------
  const fetchTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const fetchCtrl = useRef<AbortController | null>(null);
  const requestData = useCallback(() => {
    if (!tracks) return;
    clearTimeout(fetchTimer.current);
    fetchTimer.current = setTimeout(() => {
      const w = winRef.current;
      const span = w.end - w.start;
      const px = span / plotW;
      const trackKey = layout.visibleTracks.join(',');
      const f = fetchedRef.current;
      if (f && f.tracks === trackKey && w.start >= f.start && w.end <= f.end && px >= f.px * 0.75 && px <= f.px * 1.5) return;
      const { start, end } = fetchWindow(w);
      fetchCtrl.current?.abort();
      const ctrl = new AbortController();
      fetchCtrl.current = ctrl;
      const all = layout.visibleTracks.length === tracks.tracks.length ? null : layout.visibleTracks;
      traceApi.viewport(profile, origin + start, origin + end, plotW * 2, all, ctrl.signal).then(
        (resp) => {
          if (!resp || !('lanes' in resp)) {
            // 503 "loading" (the profile or its index is being (re)read): ask again shortly.
            fetchedRef.current = null;
            setTimeout(() => setRetry((n) => n + 1), 1000);
            return;
          }
          dataRef.current = laneData(resp, origin);
          fetchedRef.current = { start, end, px, tracks: trackKey };
          paint();
          setPainted((n) => n + 1);
        },
        (e: Error) => {
          if (e.name !== 'AbortError') setError(e.message);
        },
      );
      if (tracks.tracks.some((t) => t.counters.length)) {
        traceApi.counters(profile, origin + start, origin + end, plotW * 2, ctrl.signal).then(
          (resp) => {
            if (!resp || !('series' in resp)) return;
            countersRef.current = { base: resp.start_us - origin, series: resp.series };
            paint();
          },
          () => undefined,
        );
      }
    }, 60);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [tracks, plotW, layout, profile, origin, paint, retry]);

  const setWin = useCallback(
    (w: Window) => {
      winRef.current = w;
      paint();
      requestData();
      setTick((n) => n + 1);
    },
    [paint, requestData],
  );

  useEffect(() => {
    fetchedRef.current = null;
    requestData();
    paint();
  }, [requestData, paint]);

  // ---- slice selection ----------------------------------------------------------------
  const select = useCallback(
    (id: number | null) => {
      if (id === null) {
        setDetails(null);
        return;
      }
      traceApi.slice(profile, id).then(setDetails, (e: Error) => setError(e.message));
    },
    [profile],
  );

  const zoomTo = useCallback((startRel: number, dur: number) => setWin(around(startRel, startRel + Math.max(dur, 0.01), 0.3)), [setWin]);

  // ---- search ----------------------------------------------------------------------------
  const searchSeq = useRef(0);
  const runSearch = useCallback(
    (q: string, pos = 0) => {
      const seq = ++searchSeq.current;
      if (!q) {
        setSearch(null);
        return;
      }
      const offset = searchPageOffset(pos);
      traceApi.search(profile, q, offset).then(
        (r) => {
          if (seq !== searchSeq.current) return; // a later search or step won
          const at = Math.min(pos, Math.max(r.total - 1, 0));
          setSearch({ q, total: r.total, pos: at, offset: r.offset, ids: r.hits });
          const h = r.hits[at - r.offset];
          if (h) {
            zoomTo(h.start_us - origin, h.dur_us);
            select(h.id);
          }
        },
        (e: Error) => setError(e.message),
      );
    },
    [profile, origin, zoomTo, select],
  );
  const step = (d: number) => {
    if (!search || !search.total) return;
    const pos = stepHit(search.pos, d, search.total);
    const h = search.ids[pos - search.offset];
    if (pos < search.offset || !h) {
      runSearch(search.q, pos); // the hit is on another page
      return;
    }
    searchSeq.current++;
    setSearch({ ...search, pos });
    zoomTo(h.start_us - origin, h.dur_us);
    select(h.id);
  };
  // deep link: trace.q opens the first hit
  useEffect(() => {
    if (tracks && filters['trace.q']) runSearch(filters['trace.q']);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [tracks]);

  // ---- measure summary ------------------------------------------------------------------
  useEffect(() => {
    if (!measure || Math.abs(measure.b - measure.a) <= 0) {
      setSummary(null);
      return;
    }
    const ctrl = new AbortController();
    const a = Math.min(measure.a, measure.b);
    const b = Math.max(measure.a, measure.b);
    traceApi.summary(profile, origin + a, origin + b, ctrl.signal).then(setSummary, () => undefined);
    return () => ctrl.abort();
  }, [measure, profile, origin]);

  // ---- input -----------------------------------------------------------------------------
  useEffect(() => {
    const c = canvasRef.current;
    if (!c) return;
    const onWheel = (e: WheelEvent) => {
      if (e.shiftKey) {
        e.preventDefault();
        scrollRef.current = Math.max(0, Math.min(scrollRef.current + e.deltaY, Math.max(layout.height - (VIEW_H - RULER_H), 0)));
        paint();
        return;
      }
      e.preventDefault();
      const rect = c.getBoundingClientRect();
      const x = e.clientX - rect.left - LABEL_W;
      if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) setWin(panBy(winRef.current, e.deltaX, plotW, bounds));
      else setWin(zoomAt(winRef.current, Math.exp(e.deltaY * 0.002), Math.max(x, 0), plotW, bounds));
    };
    c.addEventListener('wheel', onWheel, { passive: false });
    return () => c.removeEventListener('wheel', onWheel);
  }, [layout, paint, setWin, plotW, bounds]);

  const drag = useRef<{ x: number; y: number; win: Window; scroll: number; moved: boolean; measure: boolean } | null>(null);
  const timeAt = (clientX: number) => {
    const rect = canvasRef.current!.getBoundingClientRect();
    const w = winRef.current;
    return w.start + ((clientX - rect.left - LABEL_W) / plotW) * (w.end - w.start);
  };
  const onMouseDown = (e: React.MouseEvent) => {
    (e.currentTarget as HTMLElement).focus();
    const m = mode === 'measure' || e.shiftKey;
    drag.current = { x: e.clientX, y: e.clientY, win: winRef.current, scroll: scrollRef.current, moved: false, measure: m };
    if (m) setMeasure({ a: timeAt(e.clientX), b: timeAt(e.clientX) });
  };
  const onMouseMove = (e: React.MouseEvent) => {
    const d = drag.current;
    if (d) {
      const dx = e.clientX - d.x;
      const dy = e.clientY - d.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) d.moved = true;
      if (d.measure) {
        setMeasure((m) => (m ? { a: m.a, b: timeAt(e.clientX) } : m));
      } else if (d.moved) {
        scrollRef.current = Math.max(0, Math.min(d.scroll - dy, Math.max(layout.height - (VIEW_H - RULER_H), 0)));
        setWin(panBy(d.win, -dx, plotW, bounds));
      }
      return;
    }
    const s = sceneRef.current;
    const rect = canvasRef.current!.getBoundingClientRect();
    const h = s ? hitTest(s, e.clientX - rect.left, e.clientY - rect.top) : undefined;
    setHover(
      h?.kind === 'slice'
        ? `${h.name} · ${formatDuration(h.dur ?? 0)}`
        : h?.kind === 'block'
          ? `${h.count} slices (mostly ${h.name}) · ${formatDuration(h.dur ?? 0)} · click to zoom`
          : '',
    );
  };
  const onMouseUp = (e: React.MouseEvent) => {
    const d = drag.current;
    drag.current = null;
    if (!d || d.moved) {
      if (d?.measure && measure && Math.abs(measure.b - measure.a) < 1e-9) setMeasure(null);
      return;
    }
    if (d.measure) {
      setMeasure(null);
      return;
    }
    const s = sceneRef.current;
    const rect = canvasRef.current!.getBoundingClientRect();
    const h = s ? hitTest(s, e.clientX - rect.left, e.clientY - rect.top) : undefined;
    if (!h) select(null);
    else if (h.kind === 'group' && h.group) {
      const next = new Set(collapsed);
      if (next.has(h.group)) next.delete(h.group);
      else next.add(h.group);
      setCollapsed(next);
    } else if (h.kind === 'slice' && h.id !== undefined) select(h.id);
    else if (h.kind === 'block' && h.start !== undefined) zoomTo(h.start, h.dur ?? 0);
  };
  const fit = () => {
    if (measure && measure.a !== measure.b) setWin(around(Math.min(measure.a, measure.b), Math.max(measure.a, measure.b), 0.02));
    else setWin({ ...bounds });
  };
  const onKey = (e: React.KeyboardEvent) => {
    const w = winRef.current;
    const k = e.key.toLowerCase();
    if (k === 'w') setWin(zoomAt(w, 0.7, plotW / 2, plotW, bounds));
    else if (k === 's') setWin(zoomAt(w, 1 / 0.7, plotW / 2, plotW, bounds));
    else if (k === 'a') setWin(panBy(w, -plotW * 0.2, plotW, bounds));
    else if (k === 'd') setWin(panBy(w, plotW * 0.2, plotW, bounds));
    else if (k === 'f') fit();
    else if (k === 'm') setMode((m) => (m === 'pan' ? 'measure' : 'pan'));
    else if (k === 'escape') {
      setMeasure(null);
      select(null);
    } else return;
    e.preventDefault();
  };

  useEffect(() => paint(), [paint, painted]);

  if (error) return <ErrorBox title="Cannot show the timeline" message={error} />;
  if (!tracks) return <Loading what={loadingMsg} />;

  const w = winRef.current;
  return (
    <div className="view trace-view" data-testid="view-trace">
      <div className="trace-toolbar">
        <button className="btn" data-testid="trace-fit" onClick={fit} title="Fit (F); with a measured range: zoom to it">
          {measure && measure.a !== measure.b ? 'Zoom to range' : 'Fit'}
        </button>
        <button className="btn" onClick={() => setWin(zoomAt(w, 0.5, plotW / 2, plotW, bounds))} title="Zoom in (W)">
          +
        </button>
        <button className="btn" onClick={() => setWin(zoomAt(w, 2, plotW / 2, plotW, bounds))} title="Zoom out (S)">
          −
        </button>
        <button
          className={`btn${mode === 'measure' ? ' primary' : ''}`}
          data-testid="trace-measure"
          onClick={() => setMode(mode === 'pan' ? 'measure' : 'pan')}
          title="Measure (M, or Shift+drag): drag a range to see its duration and what ran inside it"
        >
          Measure
        </button>
        {steps.length > 0 && (
          <select
            data-testid="trace-step"
            value=""
            onChange={(e) => {
              const st = steps.find((s) => String(s.step) === e.target.value);
              if (st) setWin(around(st.start, st.end, 0.02));
            }}
          >
            <option value="">Zoom to step…</option>
            {steps.map((s) => (
              <option key={s.step} value={String(s.step)}>
                Step {s.step} ({formatDuration(s.end - s.start)})
              </option>
            ))}
          </select>
        )}
        <form
          className="trace-search"
          onSubmit={(e) => {
            e.preventDefault();
            setFilters({ 'trace.q': query || undefined });
            runSearch(query);
          }}
        >
          <input data-testid="trace-search" placeholder="Search slices (name substring)" value={query} onChange={(e) => setQuery(e.target.value)} />
          <button type="button" className="btn" data-testid="trace-prev" onClick={() => step(-1)} disabled={!search?.total}>
            ◀
          </button>
          <button type="button" className="btn" data-testid="trace-next" onClick={() => step(1)} disabled={!search?.total}>
            ▶
          </button>
          <span className="muted small" data-testid="trace-search-count">
            {search ? `${search.total ? search.pos + 1 : 0} / ${search.total}` : ''}
          </span>
        </form>
        <a className="btn" data-testid="trace-download" href={api.traceDownloadUrl(profile)} download>
          Download
        </a>
      </div>
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
          onMouseDown={onMouseDown}
          onMouseMove={onMouseMove}
          onMouseUp={onMouseUp}
          onMouseLeave={() => {
            drag.current = null;
            setHover('');
          }}
          onKeyDown={onKey}
        />
      </div>
      <div className="trace-panels">
        {measure && measure.a !== measure.b && (
          <section className="card" data-testid="trace-measure-panel">
            <h3>Range {formatDuration(Math.abs(measure.b - measure.a))}</h3>
            {summary && (
              <>
                <p className="muted small">{summary.slices} slices overlap the range; time inside the range by name:</p>
                <table className="small">
                  <tbody>
                    {summary.rows.map((r) => (
                      <tr key={r.name}>
                        <td>{r.name}</td>
                        <td>{r.count}</td>
                        <td>{formatDuration(r.total_us)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </>
            )}
          </section>
        )}
        {details && (
          <section className="card" data-testid="trace-details">
            <h3 data-testid="trace-details-name">{details.name}</h3>
            <p className="small">
              {formatDuration(details.dur_us)} · starts at {formatDuration(details.start_us - origin)} · {details.category}
            </p>
            {details.input_shapes && <p className="small">Input shapes: {details.input_shapes}</p>}
            {details.parents.length > 0 && <p className="small muted">In: {details.parents.map((p) => p.name).join(' › ')}</p>}
            {details.flows.length > 0 && (
              <div data-testid="trace-flows">
                <h4>Linked</h4>
                <ul className="small">
                  {details.flows.map((f) => (
                    <li key={`${f.id}-${f.direction}`}>
                      {f.direction === 'out' ? '→' : '←'} {f.flow}:{' '}
                      <button
                        className="link"
                        onClick={() => {
                          zoomTo(f.start_us - origin, f.dur_us);
                          select(f.id);
                        }}
                      >
                        {f.name}
                      </button>{' '}
                      ({formatDuration(f.dur_us)})
                    </li>
                  ))}
                </ul>
              </div>
            )}
            {details.call_stack && <pre className="small trace-stack">{details.call_stack}</pre>}
            <details>
              <summary className="small">Args</summary>
              <pre className="small trace-stack">{JSON.stringify(details.args, null, 1)}</pre>
            </details>
          </section>
        )}
      </div>
    </div>
  );
}
