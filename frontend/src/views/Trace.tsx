import { api } from '../api';
import type { ViewProps } from '../App';

export function TraceView({ profile }: ViewProps) {
  return (
    <div className="view" data-testid="view-trace">
      <section className="card trace-card">
        <h2>Trace timeline</h2>
        <p>
          <strong>The interactive timeline is not part of this version yet.</strong> Until it is, download the
          original trace file of this profile and open it in Perfetto UI (ui.perfetto.dev) or in Chrome at{' '}
          <code>chrome://tracing</code>.
        </p>
        <p>
          <a className="btn primary" data-testid="trace-download" href={api.traceDownloadUrl(profile)} download>
            Download trace file
          </a>
        </p>
        <p className="muted small">
          Run: {profile.run} · Worker: {profile.worker}
          {profile.span ? ` · Span: ${profile.span}` : ''}. The file is served by this TensorBoard; nothing is
          uploaded anywhere.
        </p>
      </section>
    </div>
  );
}
