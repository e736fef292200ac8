// The timeline's toolbar: fit / zoom / measure, zoom to a step, search with previous / next,
// download of the trace file.
import type { SearchState } from './useTraceSearch';
import type { Mode } from './useCanvasInput';
import { formatDuration } from '../../timeline/scale';

export interface StepWindow {
  step: number;
  /** Relative µs. */
  start: number;
  end: number;
}

interface Props {
  hasRange: boolean;
  mode: Mode;
  steps: StepWindow[];
  query: string;
  search: SearchState | null;
  downloadUrl: string;
  onFit: () => void;
  /** Zoom about the middle (factor < 1 zooms in). */
  onZoom: (factor: number) => void;
  onToggleMode: () => void;
  onStep: (s: StepWindow) => void;
  onQuery: (q: string) => void;
  onSearch: () => void;
  onHit: (d: number) => void;
}

export function TraceToolbar(p: Props) {
  return (
    <div className="trace-toolbar">
      <button className="btn" data-testid="trace-fit" onClick={p.onFit} title="Fit (F); with a measured range: zoom to it">
        {p.hasRange ? 'Zoom to range' : 'Fit'}
      </button>
      <button className="btn" onClick={() => p.onZoom(0.5)} title="Zoom in (W)">
        +
      </button>
      <button className="btn" onClick={() => p.onZoom(2)} title="Zoom out (S)">
        −
      </button>
      <button
        className={`btn${p.mode === 'measure' ? ' primary' : ''}`}
        data-testid="trace-measure"
        onClick={p.onToggleMode}
        title="Measure (M, or Shift+drag): drag a range to see its duration and what ran inside it"
      >
        Measure
      </button>
      {p.steps.length > 0 && (
        <select
          data-testid="trace-step"
          value=""
          onChange={(e) => {
            const st = p.steps.find((s) => String(s.step) === e.target.value);
            if (st) p.onStep(st);
          }}
        >
          <option value="">Zoom to step…</option>
          {p.steps.map((s) => (
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
          p.onSearch();
        }}
      >
        <input data-testid="trace-search" placeholder="Search slices (name substring)" value={p.query} onChange={(e) => p.onQuery(e.target.value)} />
        <button type="button" className="btn" data-testid="trace-prev" onClick={() => p.onHit(-1)} disabled={!p.search?.total}>
          ◀
        </button>
        <button type="button" className="btn" data-testid="trace-next" onClick={() => p.onHit(1)} disabled={!p.search?.total}>
          ▶
        </button>
        <span className="muted small" data-testid="trace-search-count">
          {p.search ? `${p.search.total ? p.search.pos + 1 : 0} / ${p.search.total}` : ''}
        </span>
      </form>
      <a className="btn" data-testid="trace-download" href={p.downloadUrl} download>
        Download
      </a>
    </div>
  );
}
