// Mouse, wheel and keyboard on the timeline canvas: wheel zooms at the pointer (Shift+wheel
// scrolls the tracks, a horizontal wheel pans), drag pans, Shift+drag (or measure mode)
// measures a range, clicks select slices, zoom into blocks and fold groups; W/S/A/D/F/M/Esc.
import { useEffect, useRef, type Dispatch, type KeyboardEvent, type MouseEvent, type MutableRefObject, type RefObject, type SetStateAction } from 'react';
import { LABEL_W, RULER_H, type Layout } from '../../timeline/layout';
import { hitTest, type Scene } from '../../timeline/render';
import { formatDuration, panBy, zoomAt, type Window } from '../../timeline/scale';

export type Mode = 'pan' | 'measure';
/** A measured range, relative µs; `b` follows the pointer while dragging. */
export type Measure = { a: number; b: number } | null;

interface Options {
  canvasRef: RefObject<HTMLCanvasElement | null>;
  sceneRef: MutableRefObject<Scene | null>;
  winRef: MutableRefObject<Window>;
  scrollRef: MutableRefObject<number>;
  viewH: number;
  layout: Layout;
  plotW: number;
  bounds: Window;
  mode: Mode;
  setMode: Dispatch<SetStateAction<Mode>>;
  measure: Measure;
  setMeasure: Dispatch<SetStateAction<Measure>>;
  collapsed: Set<string>;
  setCollapsed: (next: Set<string>) => void;
  setWin: (w: Window) => void;
  paint: () => void;
  select: (id: number | null) => void;
  zoomTo: (startRel: number, dur: number) => void;
  fit: () => void;
  setHover: (text: string) => void;
}

interface Drag {
  x: number;
  y: number;
  win: Window;
  scroll: number;
  moved: boolean;
  measure: boolean;
}

export function useCanvasInput(o: Options) {
  const { canvasRef, sceneRef, winRef, scrollRef, viewH, layout, plotW, bounds, paint, setWin } = o;
  const maxScroll = Math.max(layout.height - (viewH - RULER_H), 0);

  // A non-passive listener: the page must not scroll while the wheel zooms.
  useEffect(() => {
    const c = canvasRef.current;
    if (!c) return;
    const onWheel = (e: WheelEvent) => {
      if (e.shiftKey) {
        e.preventDefault();
        scrollRef.current = Math.max(0, Math.min(scrollRef.current + e.deltaY, maxScroll));
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
  }, [canvasRef, scrollRef, winRef, maxScroll, paint, setWin, plotW, bounds]);

  const drag = useRef<Drag | null>(null);
  const timeAt = (clientX: number) => {
    const rect = canvasRef.current!.getBoundingClientRect();
    const w = winRef.current;
    return w.start + ((clientX - rect.left - LABEL_W) / plotW) * (w.end - w.start);
  };
  const hitAt = (e: MouseEvent) => {
    const s = sceneRef.current;
    const rect = canvasRef.current!.getBoundingClientRect();
    return s ? hitTest(s, e.clientX - rect.left, e.clientY - rect.top) : undefined;
  };

  const onMouseDown = (e: MouseEvent) => {
    (e.currentTarget as HTMLElement).focus();
    const m = o.mode === 'measure' || e.shiftKey;
    drag.current = { x: e.clientX, y: e.clientY, win: winRef.current, scroll: scrollRef.current, moved: false, measure: m };
    if (m) o.setMeasure({ a: timeAt(e.clientX), b: timeAt(e.clientX) });
  };
  const onMouseMove = (e: MouseEvent) => {
    const d = drag.current;
    if (d) {
      const dx = e.clientX - d.x;
      const dy = e.clientY - d.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) d.moved = true;
      if (d.measure) {
        o.setMeasure((m) => (m ? { a: m.a, b: timeAt(e.clientX) } : m));
      } else if (d.moved) {
        scrollRef.current = Math.max(0, Math.min(d.scroll - dy, maxScroll));
        setWin(panBy(d.win, -dx, plotW, bounds));
      }
      return;
    }
    const h = hitAt(e);
    o.setHover(
      h?.kind === 'slice'
        ? `${h.name} · ${formatDuration(h.dur ?? 0)}`
        : h?.kind === 'block'
          ? `${h.count} slices (mostly ${h.name}) · ${formatDuration(h.dur ?? 0)} · click to zoom`
          : '',
    );
  };
  const onMouseUp = (e: MouseEvent) => {
    const d = drag.current;
    drag.current = null;
    if (!d || d.moved) {
      if (d?.measure && o.measure && Math.abs(o.measure.b - o.measure.a) < 1e-9) o.setMeasure(null);
      return;
    }
    if (d.measure) {
      o.setMeasure(null);
      return;
    }
    const h = hitAt(e);
    if (!h) o.select(null);
    else if (h.kind === 'group' && h.group) {
      const next = new Set(o.collapsed);
      if (next.has(h.group)) next.delete(h.group);
      else next.add(h.group);
      o.setCollapsed(next);
    } else if (h.kind === 'slice' && h.id !== undefined) o.select(h.id);
    else if (h.kind === 'block' && h.start !== undefined) o.zoomTo(h.start, h.dur ?? 0);
  };
  const onMouseLeave = () => {
    drag.current = null;
    o.setHover('');
  };
  const onKeyDown = (e: KeyboardEvent) => {
    const w = winRef.current;
    const k = e.key.toLowerCase();
    if (k === 'w') setWin(zoomAt(w, 0.7, plotW / 2, plotW, bounds));
    else if (k === 's') setWin(zoomAt(w, 1 / 0.7, plotW / 2, plotW, bounds));
    else if (k === 'a') setWin(panBy(w, -plotW * 0.2, plotW, bounds));
    else if (k === 'd') setWin(panBy(w, plotW * 0.2, plotW, bounds));
    else if (k === 'f') o.fit();
    else if (k === 'm') o.setMode((m) => (m === 'pan' ? 'measure' : 'pan'));
    else if (k === 'escape') {
      o.setMeasure(null);
      o.select(null);
    } else return;
    e.preventDefault();
  };

  return { onMouseDown, onMouseMove, onMouseUp, onMouseLeave, onKeyDown };
}
