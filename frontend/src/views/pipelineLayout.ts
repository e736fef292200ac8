// Pure layout of the data pipeline graph (DataPipeline.tsx): ops as boxes in columns by their
// distance from the root, sources on the left, the root on the right, then the device queue.
// Kept apart from the component so vitest can check it without a DOM.

export interface PipelineOp {
  op_id: number;
  op_type: string;
  num_workers: number | null;
  parent_id: number | null;
  children_ids: number[];
  queue_avg_size: number | null;
  queue_capacity: number | null;
  queue_usage_pct: number | null;
  queue_empty_pct: number | null;
  cpu_pct_per_worker: number | null;
}

export interface NodeBox {
  /** op id, or null for the device queue box. */
  id: number | null;
  x: number;
  y: number;
  w: number;
  h: number;
  op?: PipelineOp;
}

export interface Edge {
  from: NodeBox;
  to: NodeBox;
}

export const BOX_W = 170;
export const BOX_H = 64;
export const GAP_X = 60;
export const GAP_Y = 24;

/** Distance of each op from the root (ops whose parent is unknown count as roots). */
export function depths(ops: PipelineOp[]): Map<number, number> {
  const byId = new Map(ops.map((o) => [o.op_id, o]));
  const out = new Map<number, number>();
  const depthOf = (o: PipelineOp, seen: Set<number>): number => {
    const known = out.get(o.op_id);
    if (known !== undefined) return known;
    const parent = o.parent_id === null ? undefined : byId.get(o.parent_id);
    const d = parent === undefined || seen.has(parent.op_id) ? 0 : depthOf(parent, new Set([...seen, o.op_id])) + 1;
    out.set(o.op_id, d);
    return d;
  };
  for (const o of ops) depthOf(o, new Set([o.op_id]));
  return out;
}

/** Boxes and edges (child → parent, root → device queue) with the graph's size. */
export function pipelineLayout(ops: PipelineOp[], withDevice: boolean): { nodes: NodeBox[]; edges: Edge[]; width: number; height: number } {
  const d = depths(ops);
  const maxDepth = Math.max(0, ...d.values());
  const columns = new Map<number, PipelineOp[]>();
  for (const o of [...ops].sort((a, b) => a.op_id - b.op_id)) {
    const k = d.get(o.op_id) ?? 0;
    columns.set(k, [...(columns.get(k) ?? []), o]);
  }
  const rows = Math.max(1, ...[...columns.values()].map((c) => c.length));
  const height = rows * BOX_H + (rows - 1) * GAP_Y;
  const nodes: NodeBox[] = [];
  const byId = new Map<number, NodeBox>();
  for (const [depth, col] of columns) {
    const colH = col.length * BOX_H + (col.length - 1) * GAP_Y;
    col.forEach((op, i) => {
      const box: NodeBox = { id: op.op_id, op, w: BOX_W, h: BOX_H, x: (maxDepth - depth) * (BOX_W + GAP_X), y: (height - colH) / 2 + i * (BOX_H + GAP_Y) };
      nodes.push(box);
      byId.set(op.op_id, box);
    });
  }
  const edges: Edge[] = [];
  for (const o of ops) {
    const to = o.parent_id === null ? undefined : byId.get(o.parent_id);
    const from = byId.get(o.op_id);
    if (from && to && to !== from) edges.push({ from, to });
  }
  let width = (maxDepth + 1) * (BOX_W + GAP_X) - GAP_X;
  if (withDevice && ops.length) {
    const dev: NodeBox = { id: null, w: BOX_W, h: BOX_H, x: width + GAP_X, y: (height - BOX_H) / 2 };
    nodes.push(dev);
    for (const o of ops) if ((d.get(o.op_id) ?? 0) === 0) edges.push({ from: byId.get(o.op_id)!, to: dev });
    width = dev.x + BOX_W;
  }
  return { nodes, edges, width, height };
}

/** Queue bar fill (0..1) of an op; null when it has no queue. */
export function queueFill(op: PipelineOp): number | null {
  const u = op.queue_usage_pct;
  if (u === null || !Number.isFinite(u)) return null;
  return Math.max(0, Math.min(1, u / 100));
}
