// Data pipeline view (MindSpore MindData): GET /data_pipeline drawn as a graph — each op a box
// with its output-queue bar, sources on the left, the root then the device queue on the right —
// with the bottleneck op marked, then the queue tables and the rule findings. Every name from
// the data is rendered as text (React escapes it; nothing goes through innerHTML).
import { getJson, isLoadingAnswer, profileParams, type ProfileKey } from '../api';
import type { ViewProps } from './types';
import { Figure } from '../components/Figure';
import { ErrorBox, Loading, Notice } from '../components/States';
import { useAsync } from '../hooks';
import { BOX_H, BOX_W, pipelineLayout, queueFill, type PipelineOp } from './pipelineLayout';

export interface PipelineResponse {
  ops: PipelineOp[];
  device_queue: { batches: number; empty: number; full: number; empty_pct: number } | null;
  get_next: { batches: number; empty: number; empty_pct: number } | null;
  cpu: { host_util_pct: number } | null;
  bottleneck: { op_id: number | null; op_type: string | null; reason: string; advice: string[] } | null;
  details: {
    device_queue_source: string | null;
    batch_times: Record<string, number | null> | null;
    host_cpu_saturated: boolean;
    findings: { rule: string; source: string; op_id: number | null; message: string }[];
  };
}

export const fetchPipeline = (key: ProfileKey, signal?: AbortSignal) =>
  getJson<PipelineResponse>('data_pipeline', profileParams(key), signal);

const pct = (v: number | null | undefined) => (v === null || v === undefined ? '—' : `${v.toFixed(1)}%`);
const num = (v: number | null | undefined, digits = 2) => (v === null || v === undefined ? '—' : v.toFixed(digits));

function PipelineGraph({ d }: { d: PipelineResponse }) {
  const hasDevice = d.device_queue !== null || d.get_next !== null;
  const { nodes, edges, width, height } = pipelineLayout(d.ops, hasDevice);
  const pad = 8;
  const bottleneck = d.bottleneck?.op_id;
  return (
    <svg
      data-testid="pipeline-graph"
      width={width + 2 * pad}
      height={height + 2 * pad}
      viewBox={`${-pad} ${-pad} ${width + 2 * pad} ${height + 2 * pad}`}
      role="img"
      aria-label="Data pipeline graph"
    >
      <defs>
        <marker id="pipeline-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">
          <path d="M0,0 L10,5 L0,10 z" fill="var(--muted, #888)" />
        </marker>
      </defs>
      {edges.map((e, i) => (
        <line
          key={i}
          x1={e.from.x + e.from.w}
          y1={e.from.y + e.from.h / 2}
          x2={e.to.x}
          y2={e.to.y + e.to.h / 2}
          stroke="var(--muted, #888)"
          markerEnd="url(#pipeline-arrow)"
        />
      ))}
      {nodes.map((n) => {
        if (n.op === undefined) {
          const dq = d.device_queue;
          return (
            <g key="device" data-testid="pipeline-device-queue" transform={`translate(${n.x},${n.y})`}>
              <rect width={BOX_W} height={BOX_H} rx={6} fill="var(--card, #fff)" stroke="var(--accent, #36c)" strokeDasharray="4 3" />
              <text x={8} y={20} fontWeight={500}>Device queue</text>
              <text x={8} y={40} fontSize={12}>{dq ? `empty ${dq.empty}/${dq.batches} (${pct(dq.empty_pct)})` : 'not recorded'}</text>
              <text x={8} y={56} fontSize={12}>{d.get_next ? `get_next empty ${d.get_next.empty}/${d.get_next.batches}` : ''}</text>
            </g>
          );
        }
        const op = n.op;
        const fill = queueFill(op);
        const marked = bottleneck !== null && bottleneck !== undefined && op.op_id === bottleneck;
        return (
          <g
            key={op.op_id}
            data-testid={`pipeline-op-${op.op_id}`}
            data-bottleneck={marked ? 'true' : undefined}
            transform={`translate(${n.x},${n.y})`}
          >
            <title>{`${op.op_type} (id ${op.op_id})`}</title>
            <rect
              width={BOX_W}
              height={BOX_H}
              rx={6}
              fill={marked ? 'rgba(220, 60, 40, 0.12)' : 'var(--card, #fff)'}
              stroke={marked ? '#d33' : 'var(--border, #999)'}
              strokeWidth={marked ? 3 : 1}
            />
            <text x={8} y={18} fontWeight={500}>{`${op.op_type} #${op.op_id}`}</text>
            <text x={8} y={34} fontSize={12}>
              {`workers ${op.num_workers ?? '—'} · CPU/worker ${pct(op.cpu_pct_per_worker)}`}
            </text>
            <rect x={8} y={42} width={BOX_W - 16} height={12} fill="none" stroke="var(--border, #999)" />
            {fill !== null && (
              <rect data-testid={`pipeline-queue-bar-${op.op_id}`} x={8} y={42} width={(BOX_W - 16) * fill} height={12} fill={fill < 0.3 ? '#e07b39' : '#4a90d9'} />
            )}
            <text x={BOX_W / 2} y={52} fontSize={10} textAnchor="middle">
              {fill === null ? 'no queue' : `queue ${pct(op.queue_usage_pct)}`}
            </text>
            {marked && (
              <text x={BOX_W - 8} y={18} fontSize={11} textAnchor="end" fill="#d33" fontWeight={600}>bottleneck</text>
            )}
          </g>
        );
      })}
    </svg>
  );
}

export function DataPipelineView({ profile }: ViewProps) {
  const res = useAsync((signal) => fetchPipeline(profile, signal), [profile.run, profile.worker, profile.span]);
  if (res.error) return <ErrorBox message={res.error} />;
  const d = res.data;
  if (!d || isLoadingAnswer(d)) return <Loading what="data pipeline" progress={res.progress} />;
  const b = d.bottleneck;
  const times = d.details.batch_times;
  return (
    <div className="view" data-testid="data-pipeline-view">
      <div className="figures">
        <Figure label="Bottleneck" testId="pipeline-bottleneck-figure" value={b ? (b.op_type !== null ? `${b.op_type} #${b.op_id}` : 'host pipeline') : 'none'} raw={b?.op_id ?? ''} />
        <Figure label="Device queue empty" testId="pipeline-dq-empty" value={pct(d.device_queue?.empty_pct)} raw={d.device_queue?.empty_pct ?? ''} />
        <Figure label="get_next empty" testId="pipeline-gn-empty" value={pct(d.get_next?.empty_pct)} raw={d.get_next?.empty_pct ?? ''} />
        <Figure label="Host CPU busy" testId="pipeline-host-cpu" value={pct(d.cpu?.host_util_pct)} raw={d.cpu?.host_util_pct ?? ''} />
      </div>
      {b ? (
        <div className="card" data-testid="pipeline-bottleneck">
          <h2>Bottleneck: {b.op_type !== null ? `${b.op_type} (op ${b.op_id})` : 'the host pipeline'}</h2>
          <p>{b.reason}</p>
          <ul>
            {b.advice.map((a, i) => (
              <li key={i}>{a}</li>
            ))}
          </ul>
        </div>
      ) : (
        <Notice>No bottleneck: no op of the pipeline matches MindSpore's or MindInsight's rules.</Notice>
      )}
      <div className="card">
        <h2>Pipeline</h2>
        <div style={{ overflowX: 'auto' }}>
          <PipelineGraph d={d} />
        </div>
      </div>
      <div className="card">
        <h2>Ops and their output queues</h2>
        <table className="simple-table" data-testid="pipeline-ops-table">
          <thead>
            <tr>
              <th>Op</th><th>Type</th><th>Workers</th><th>Parent</th><th>Children</th><th>Queue avg</th><th>Capacity</th><th>Usage</th><th>Empty</th><th>CPU / worker</th>
            </tr>
          </thead>
          <tbody>
            {d.ops.map((o) => (
              <tr key={o.op_id} data-bottleneck={b?.op_id === o.op_id ? 'true' : undefined}>
                <td>{o.op_id}</td><td>{o.op_type}</td><td>{o.num_workers ?? '—'}</td><td>{o.parent_id ?? '—'}</td>
                <td>{o.children_ids.join(', ') || '—'}</td><td>{num(o.queue_avg_size)}</td><td>{o.queue_capacity ?? '—'}</td>
                <td>{pct(o.queue_usage_pct)}</td><td>{pct(o.queue_empty_pct)}</td><td>{pct(o.cpu_pct_per_worker)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div className="card">
        <h2>Device side</h2>
        <table className="simple-table" data-testid="pipeline-queues-table">
          <thead>
            <tr><th>Queue</th><th>Batches</th><th>Empty</th><th>Full</th><th>Empty %</th></tr>
          </thead>
          <tbody>
            <tr>
              <td>{`Device queue${d.details.device_queue_source === 'dataset_iterator' ? ' (dataset iterator)' : ''}`}</td>
              <td>{d.device_queue?.batches ?? '—'}</td><td>{d.device_queue?.empty ?? '—'}</td><td>{d.device_queue?.full ?? '—'}</td><td>{pct(d.device_queue?.empty_pct)}</td>
            </tr>
            <tr>
              <td>get_next</td><td>{d.get_next?.batches ?? '—'}</td><td>{d.get_next?.empty ?? '—'}</td><td>—</td><td>{pct(d.get_next?.empty_pct)}</td>
            </tr>
          </tbody>
        </table>
        {times && (
          <p data-testid="pipeline-batch-times">
            {`Per batch: pipeline get ${num(times.get_ms, 3)} ms · push ${num(times.push_ms, 3)} ms · batch ${num(times.batch_ms, 3)} ms · get_next wait ${num(times.get_next_wait_ms, 4)} ms`}
          </p>
        )}
      </div>
      {d.details.findings.length > 0 && (
        <div className="card">
          <h2>What the rules found</h2>
          <ul data-testid="pipeline-findings">
            {d.details.findings.map((f, i) => (
              <li key={i}>{`${f.source}: ${f.message}`}</li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
