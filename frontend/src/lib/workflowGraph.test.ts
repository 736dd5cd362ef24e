import { describe, expect, it } from 'vitest';
import { edge, makeMember } from '../test/fixtures';
import {
  COLLAPSE_ABOVE,
  LAYER_GAP,
  NODE_HEIGHT,
  NODE_WIDTH,
  ROW_GAP,
  describeCounts,
  emptyCounts,
  layerOf,
  layoutWorkflow,
  type GroupNode,
} from './workflowGraph';

const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((ref) => makeMember(ref));

/** `n` members `<prefix>-<i>`, each in `status` unless `statusOf` says otherwise. */
function many(prefix: string, n: number, statusOf: (i: number) => 'succeeded' | 'failed' | 'running' = () => 'succeeded') {
  return Array.from({ length: n }, (_, i) => makeMember(`${prefix}-${i}`, { status: statusOf(i) }));
}

describe('layerOf', () => {
  it('puts a chain one layer per step', () => {
    const layers = layerOf([a!, b!, c!], [edge(a!, b!), edge(b!, c!)]);
    expect([a, b, c].map((m) => layers.get(m!.id))).toEqual([0, 1, 2]);
  });

  it('puts a job one layer right of its deepest parent, not its nearest', () => {
    // a -> b -> c and a -> c: c waits for b too, so it cannot sit beside b.
    const layers = layerOf([a!, b!, c!], [edge(a!, b!), edge(b!, c!), edge(a!, c!)]);
    expect(layers.get(c!.id)).toBe(2);
  });

  it('puts every job without a parent in the first layer, whatever its creation order', () => {
    const layers = layerOf([c!, a!, b!], [edge(a!, c!)]);
    expect(layers.get(a!.id)).toBe(0);
    expect(layers.get(b!.id)).toBe(0);
    expect(layers.get(c!.id)).toBe(1);
  });

  it('ignores edges to jobs not listed (a truncated workflow)', () => {
    const layers = layerOf([b!, c!], [edge(a!, b!), edge(b!, c!)]);
    expect(layers.get(b!.id)).toBe(0);
    expect(layers.get(c!.id)).toBe(1);
  });

  it('places the jobs of a cycle after the rest instead of looping', () => {
    const layers = layerOf([a!, b!, c!], [edge(a!, b!), edge(b!, c!), edge(c!, b!)]);
    expect(layers.get(a!.id)).toBe(0);
    expect(layers.get(b!.id)).toBe(1);
    expect(layers.get(c!.id)).toBe(1);
  });
});

describe('layoutWorkflow', () => {
  it('places layers left to right and centres a shorter layer on the tallest', () => {
    // a -> b, a -> c, b -> d, c -> d: a diamond.
    const graph = layoutWorkflow([a!, b!, c!, d!], [edge(a!, b!), edge(a!, c!), edge(b!, d!), edge(c!, d!)]);
    expect(graph.layers).toEqual([[a!.id], [b!.id, c!.id], [d!.id]]);
    const at = (id: string) => graph.nodes.find((n) => n.id === id)!;
    expect(at(b!.id).x).toBe(NODE_WIDTH + LAYER_GAP);
    expect(at(c!.id).y).toBe(NODE_HEIGHT + ROW_GAP);
    expect(at(a!.id).y).toBe((NODE_HEIGHT + ROW_GAP) / 2);
    expect(graph.width).toBe(3 * NODE_WIDTH + 2 * LAYER_GAP);
    expect(graph.height).toBe(2 * NODE_HEIGHT + ROW_GAP);
  });

  it('orders a layer by where its parents sit, so edges cross less', () => {
    // p1 above p2; q (child of p2) was created before r (child of p1).
    const [p1, p2, q, r] = ['p1', 'p2', 'q', 'r'].map((ref) => makeMember(ref));
    const graph = layoutWorkflow([p1!, p2!, q!, r!], [edge(p2!, q!), edge(p1!, r!)]);
    expect(graph.layers[1]).toEqual([r!.id, q!.id]);
  });

  it('draws one edge per dependency, between the two jobs', () => {
    const graph = layoutWorkflow([a!, b!, c!], [edge(a!, b!), edge(b!, c!)]);
    expect(graph.edges).toEqual([
      { from: a!.id, to: b!.id, count: 1 },
      { from: b!.id, to: c!.id, count: 1 },
    ]);
  });

  it('marks the current job', () => {
    const graph = layoutWorkflow([a!, b!], [edge(a!, b!)], { currentId: b!.id });
    expect(graph.nodes.filter((n) => n.kind === 'job' && n.current).map((n) => n.id)).toEqual([b!.id]);
  });

  it(`keeps a layer of ${COLLAPSE_ABOVE} jobs as jobs`, () => {
    const group = many('g', COLLAPSE_ABOVE);
    const graph = layoutWorkflow([a!, ...group], group.map((g) => edge(a!, g)));
    expect(graph.layers[1]).toHaveLength(COLLAPSE_ABOVE);
    expect(graph.nodes.every((n) => n.kind === 'job')).toBe(true);
  });

  it(`collapses a layer of more than ${COLLAPSE_ABOVE} jobs into one node counting them by status`, () => {
    const group = many('g', 10_000, (i) => (i < 3 ? 'failed' : i < 10 ? 'running' : 'succeeded'));
    const callback = makeMember('callback', { status: 'waiting' });
    const graph = layoutWorkflow(
      [a!, ...group, callback],
      [...group.map((g) => edge(a!, g)), ...group.map((g) => edge(g, callback))],
    );
    expect(graph.layers).toEqual([[a!.id], ['layer-1'], [callback.id]]);
    const node = graph.nodes.find((n) => n.id === 'layer-1') as GroupNode;
    expect(node.kind).toBe('group');
    expect(node.memberIds).toHaveLength(10_000);
    expect(node.counts).toEqual({ ...emptyCounts(), failed: 3, running: 7, succeeded: 9_990 });
    // 20,000 dependencies, two edges drawn.
    expect(graph.edges).toEqual([
      { from: a!.id, to: 'layer-1', count: 10_000 },
      { from: 'layer-1', to: callback.id, count: 10_000 },
    ]);
    expect(graph.height).toBe(NODE_HEIGHT);
  });

  it('keeps the current job out of a collapsed layer, as a node of its own beside it', () => {
    const group = many('g', 20);
    const graph = layoutWorkflow([a!, ...group], group.map((g) => edge(a!, g)), { currentId: group[5]!.id });
    expect(graph.layers[1]).toEqual(['layer-1', group[5]!.id]);
    expect((graph.nodes.find((n) => n.id === 'layer-1') as GroupNode).memberIds).toHaveLength(19);
    expect(graph.edges).toContainEqual({ from: a!.id, to: group[5]!.id, count: 1 });
    expect(graph.edges).toContainEqual({ from: a!.id, to: 'layer-1', count: 19 });
  });

  it('lays out no nodes for a workflow without jobs', () => {
    expect(layoutWorkflow([], [])).toEqual({ nodes: [], edges: [], layers: [], width: 0, height: 0 });
  });
});

describe('describeCounts', () => {
  it('names the statuses with jobs, finished ones first', () => {
    expect(describeCounts({ ...emptyCounts(), waiting: 2, succeeded: 9_990, failed: 10 })).toBe(
      '9,990 succeeded · 10 failed · 2 waiting',
    );
  });

  it('says when there are none', () => {
    expect(describeCounts(emptyCounts())).toBe('no jobs');
  });
});
