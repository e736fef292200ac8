import { describe, expect, it } from 'vitest';
import { BOX_W, GAP_X, depths, pipelineLayout, queueFill, type PipelineOp } from './pipelineLayout';

const op = (op_id: number, parent_id: number | null, children_ids: number[], usage: number | null = 50): PipelineOp => ({
  op_id, op_type: `Op${op_id}`, num_workers: 2, parent_id, children_ids, queue_avg_size: null,
  queue_capacity: 64, queue_usage_pct: usage, queue_empty_pct: 0, cpu_pct_per_worker: null,
});

// MindInsight's run_1 shape: Batch(0) <- Shuffle(1) <- TFReader(2), TFReader(3)
const RUN1 = [op(0, null, [1], null), op(1, 0, [2, 3]), op(2, 1, []), op(3, 1, [])];

describe('pipelineLayout', () => {
  it('puts the root nearest the device and the sources left', () => {
    expect([...depths(RUN1).entries()].sort()).toEqual([[0, 0], [1, 1], [2, 2], [3, 2]]);
    const { nodes, edges, width } = pipelineLayout(RUN1, true);
    const x = (id: number | null) => nodes.find((n) => n.id === id)!.x;
    expect(x(2)).toBe(0);
    expect(x(3)).toBe(0);
    expect(x(1)).toBe(BOX_W + GAP_X);
    expect(x(0)).toBe(2 * (BOX_W + GAP_X));
    expect(x(null)).toBe(3 * (BOX_W + GAP_X));
    expect(width).toBe(4 * BOX_W + 3 * GAP_X);
    // child -> parent edges, and the root -> device queue
    expect(edges.map((e) => [e.from.id, e.to.id]).sort()).toEqual([[0, null], [1, 0], [2, 1], [3, 1]]);
    // siblings do not overlap
    const y2 = nodes.find((n) => n.id === 2)!.y;
    const y3 = nodes.find((n) => n.id === 3)!.y;
    expect(Math.abs(y2 - y3)).toBeGreaterThanOrEqual(nodes[0].h);
  });

  it('survives a parent cycle and an unknown parent', () => {
    const ops = [op(0, 1, []), op(1, 0, []), op(5, 42, [])];
    const { nodes } = pipelineLayout(ops, false);
    expect(nodes).toHaveLength(3);
    expect(nodes.every((n) => Number.isFinite(n.x) && Number.isFinite(n.y))).toBe(true);
  });

  it('fills queue bars from the usage', () => {
    expect(queueFill(op(1, 0, [], 31.25))).toBeCloseTo(0.3125);
    expect(queueFill(op(1, 0, [], 250))).toBe(1);
    expect(queueFill(op(1, 0, [], null))).toBeNull();
  });
});
