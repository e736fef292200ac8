// Left panel: run / worker / span selectors, the run's load progress and per-file errors
// right under the run selector, the navigation between views, and the shareable link.
import { useState } from 'react';
import type { RunInfo, RunSummary, Worker } from '../api';
import { formatPercent } from '../format';
import { ProgressBar } from './States';
import { COMPARE_VIEW, viewTitle } from '../views/registry';

export interface LeftPanelProps {
  runs?: RunSummary[];
  runsError?: string;
  selectedRun?: RunSummary;
  info?: RunInfo;
  infoLoading: boolean;
  worker?: Worker;
  span?: string;
  views: string[];
  view?: string;
  link: string;
  onRun: (run: string) => void;
  onWorker: (worker: string) => void;
  onSpan: (span: string) => void;
  onView: (view: string) => void;
  /** Compare: take the current profile as base / experiment, open the compare view. */
  canCompare?: boolean;
  onCompare?: (side: 'base' | 'exp') => void;
  onCompareView?: () => void;
}

function runLabel(r: RunSummary): string {
  if (r.state === 'loading') return `${r.name} (loading ${formatPercent(r.progress, 0)})`;
  if (r.state === 'error') return `${r.name} (error)`;
  return r.errors.length ? `${r.name} (${r.errors.length} file error${r.errors.length > 1 ? 's' : ''})` : r.name;
}

export function workerLabel(w: Worker): string {
  const parts: string[] = [];
  if (w.rank !== null && w.rank !== undefined) parts.push(`rank ${w.rank}`);
  if (w.device) parts.push(w.device.toUpperCase());
  if (w.producer) parts.push(w.producer);
  return parts.length ? `${w.name} (${parts.join(', ')})` : w.name;
}

export function LeftPanel(p: LeftPanelProps) {
  const [copied, setCopied] = useState(false);
  const run = p.selectedRun;
  const copy = () => {
    const done = () => {
      setCopied(true);
      setTimeout(() => setCopied(false), 1500);
    };
    if (navigator.clipboard?.writeText) navigator.clipboard.writeText(p.link).then(done, () => undefined);
  };

  return (
    <nav className="left-panel" aria-label="Profiler navigation">
      <div className="brand">
        <span className="brand-mark" aria-hidden="true" />
        NPU Profiler
      </div>

      <label className="field">
        <span className="field-label">Run</span>
        <select
          data-testid="run-select"
          value={run?.name ?? ''}
          disabled={!p.runs || p.runs.length === 0}
          onChange={(e) => p.onRun(e.target.value)}
        >
          {!run && <option value="">{p.runs ? (p.runs.length ? 'Select a run' : 'No runs') : 'Loading…'}</option>}
          {p.runs?.map((r) => (
            <option key={r.name} value={r.name}>
              {runLabel(r)}
            </option>
          ))}
        </select>
      </label>

      {p.runsError && p.runs && <div className="run-status error">Cannot refresh runs: {p.runsError}</div>}

      {run && run.state === 'loading' && (
        <div className="run-status" data-testid="run-progress">
          <span>Reading files… {formatPercent(run.progress, 0)}</span>
          <ProgressBar value={run.progress} />
        </div>
      )}

      {run && run.errors.length > 0 && (
        <details className="run-errors" data-testid="run-errors" open>
          <summary>
            {run.errors.length} file{run.errors.length > 1 ? 's' : ''} could not be read
          </summary>
          <ul>
            {run.errors.map((e, i) => (
              <li key={i} className="file-error">
                <code className="file-error-path" title={e.path}>
                  {e.path}
                </code>
                <span className="file-error-message">{e.message}</span>
              </li>
            ))}
          </ul>
        </details>
      )}

      {p.info && p.info.workers.length > 0 && (
        <label className="field">
          <span className="field-label">Worker</span>
          <select data-testid="worker-select" value={p.worker?.name ?? ''} onChange={(e) => p.onWorker(e.target.value)}>
            {p.info.workers.map((w) => (
              <option key={w.name} value={w.name}>
                {workerLabel(w)}
              </option>
            ))}
          </select>
        </label>
      )}

      {p.worker && p.worker.spans.length > 0 && (
        <label className="field">
          <span className="field-label">Span</span>
          <select
            data-testid="span-select"
            value={p.span ?? ''}
            disabled={p.worker.spans.length < 2}
            onChange={(e) => p.onSpan(e.target.value)}
          >
            {p.worker.spans.map((s) => (
              <option key={s} value={s}>
                {s || '(default)'}
              </option>
            ))}
          </select>
        </label>
      )}

      {p.views.length > 0 && (
        <div className="views-nav" role="tablist" aria-label="Views">
          <span className="field-label">Views</span>
          {p.views.map((v) => (
            <button
              key={v}
              type="button"
              role="tab"
              aria-selected={v === p.view}
              data-testid={`nav-${v}`}
              className={`nav-item ${v === p.view ? 'active' : ''}`}
              onClick={() => p.onView(v)}
            >
              {viewTitle(v)}
            </button>
          ))}
        </div>
      )}

      {p.onCompareView && (
        <div className="compare-nav">
          <span className="field-label">Compare</span>
          <div className="link-row">
            <button type="button" className="btn small" data-testid="set-base" disabled={!p.canCompare} onClick={() => p.onCompare?.('base')}>
              Set as base
            </button>
            <button type="button" className="btn small" data-testid="set-exp" disabled={!p.canCompare} onClick={() => p.onCompare?.('exp')}>
              Set as experiment
            </button>
          </div>
          <button
            type="button"
            data-testid="nav-compare"
            aria-selected={p.view === COMPARE_VIEW.id}
            className={`nav-item ${p.view === COMPARE_VIEW.id ? 'active' : ''}`}
            onClick={() => p.onCompareView?.()}
          >
            {COMPARE_VIEW.title}
          </button>
        </div>
      )}

      <div className="link-box">
        <span className="field-label">Link to this view</span>
        <div className="link-row">
          <a href={p.link} target="_blank" rel="noopener" className="deep-link" data-testid="deep-link" title={p.link}>
            Open in new tab
          </a>
          <button type="button" className="btn small" onClick={copy}>
            {copied ? 'Copied' : 'Copy link'}
          </button>
        </div>
      </div>
    </nav>
  );
}
