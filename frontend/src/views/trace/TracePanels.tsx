// Panels under the timeline: the measured range (its duration and what ran inside it, by
// name) and the selected slice (times, stack, args, flow links to other slices).
import { useEffect, useState } from 'react';
import type { ProfileKey } from '../../api';
import { traceApi, type FlowLink, type SliceDetails, type SummaryResponse } from '../../timeline/model';
import { formatDuration } from '../../timeline/scale';

/** The measured range [a, b] (relative µs, either order; a !== b). */
export function MeasurePanel({ profile, origin, a, b }: { profile: ProfileKey; origin: number; a: number; b: number }) {
  const [summary, setSummary] = useState<SummaryResponse | null>(null);
  useEffect(() => {
    const ctrl = new AbortController();
    traceApi.summary(profile, origin + Math.min(a, b), origin + Math.max(a, b), ctrl.signal).then(setSummary, () => undefined);
    return () => ctrl.abort();
  }, [profile, origin, a, b]);

  return (
    <section className="card" data-testid="trace-measure-panel">
      <h3>Range {formatDuration(Math.abs(b - a))}</h3>
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
  );
}

export function DetailsPanel({ details, origin, onFlow }: { details: SliceDetails; origin: number; onFlow: (f: FlowLink) => void }) {
  return (
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
                <button className="link" onClick={() => onFlow(f)}>
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
  );
}
