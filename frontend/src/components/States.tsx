// Visible loading / error / empty states.
import type { ReactNode } from 'react';
import { formatPercent } from '../format';

export function Loading({ what, progress }: { what?: string; progress?: number }) {
  const hasProgress = typeof progress === 'number' && Number.isFinite(progress);
  return (
    <div className="state loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      <span>
        Loading{what ? ` ${what}` : ''}
        {hasProgress ? ` — ${formatPercent(progress, 0)}` : '…'}
      </span>
      {hasProgress && <ProgressBar value={progress} />}
    </div>
  );
}

export function ProgressBar({ value }: { value: number }) {
  const v = Math.max(0, Math.min(1, value));
  return (
    <div className="progress" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(v * 100)}>
      <div className="progress-fill" style={{ width: `${v * 100}%` }} />
    </div>
  );
}

export function ErrorBox({ message, title = 'Error' }: { message: string; title?: string }) {
  return (
    <div className="state error" role="alert">
      <strong>{title}: </strong>
      <span className="error-message">{message}</span>
    </div>
  );
}

export function Notice({ children }: { children: ReactNode }) {
  return <div className="state notice">{children}</div>;
}

export const RECOGNIZED_LAYOUTS: [string, string][] = [
  ['*_ascend_pt', 'torch_npu'],
  ['*_ascend_ms', 'MindSpore'],
  ['PROF_*', 'msprof'],
  ['*.pt.trace.json[.gz]', 'PyTorch kineto'],
];

export function EmptyState() {
  return (
    <div className="empty-state" data-testid="empty-state">
      <h2>No profiler data under this logdir</h2>
      <p>These layouts are recognized:</p>
      <ul>
        {RECOGNIZED_LAYOUTS.map(([pattern, producer]) => (
          <li key={pattern}>
            <code>{pattern}</code> ({producer})
          </li>
        ))}
      </ul>
      <p className="muted">Point <code>tensorboard --logdir</code> at a directory that contains one of these, then reload.</p>
    </div>
  );
}
