/**
 * A workflow's graph, laid out for the page: pure functions from the API's members and
 * edges to positioned nodes and edges, no DOM.
 *
 * Layers by longest path from the roots: a job sits one layer right of its deepest
 * parent, so every edge points rightwards and a job never sits beside one it waits for.
 * A layer with more than `collapseAbove` jobs becomes one node that counts them by status
 * (a group of 10,000 stays one box, not a 600,000-pixel column); the job the page is
 * about stays a node of its own beside it.
 */
import { JOB_STATUSES, type JobStatus, type WorkflowEdge, type WorkflowMember } from '../api/types';

/** A layer with more jobs than this is drawn as one node with counts. */
export const COLLAPSE_ABOVE = 12;

export const NODE_WIDTH = 184;
export const NODE_HEIGHT = 52;
/** Space between layers (where the edges run) and between the nodes of a layer. */
export const LAYER_GAP = 56;
export const ROW_GAP = 12;

export type StatusCounts = Record<JobStatus, number>;

interface Box {
  x: number;
  y: number;
  layer: number;
}

export interface JobNode extends Box {
  kind: 'job';
  id: string;
  member: WorkflowMember;
  current: boolean;
}

export interface GroupNode extends Box {
  kind: 'group';
  /** `layer-<n>`: one group per collapsed layer. */
  id: string;
  /** The members it stands for, in creation order. */
  memberIds: string[];
  counts: StatusCounts;
}

export type GraphNode = JobNode | GroupNode;

export interface GraphEdge {
  /** Node ids (a job's id, or a group's `layer-<n>`). */
  from: string;
  to: string;
  /** How many member edges this one stands for (more than one through a group). */
  count: number;
}

export interface WorkflowGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  /** Node ids per layer, left to right, each top to bottom. */
  layers: string[][];
  width: number;
  height: number;
}

export function emptyCounts(): StatusCounts {
  return Object.fromEntries(JOB_STATUSES.map((s) => [s, 0])) as StatusCounts;
}

/**
 * Each member's layer: 0 for a job with no parent among the members shown, else one more
 * than its deepest parent's. Edges naming a job not shown (a truncated list) are ignored.
 * A cycle cannot be created through the API; were one there, its jobs go one layer right
 * of the rest rather than hanging the page.
 */
export function layerOf(members: readonly WorkflowMember[], edges: readonly WorkflowEdge[]): Map<string, number> {
  const known = new Set(members.map((m) => m.id));
  const children = new Map<string, string[]>();
  const waiting = new Map<string, number>(members.map((m) => [m.id, 0]));
  for (const { parent, child } of edges) {
    if (!known.has(parent) || !known.has(child) || parent === child) continue;
    children.set(parent, [...(children.get(parent) ?? []), child]);
    waiting.set(child, (waiting.get(child) ?? 0) + 1);
  }
  const layer = new Map<string, number>();
  const ready = members.filter((m) => waiting.get(m.id) === 0).map((m) => m.id);
  for (const id of ready) layer.set(id, 0);
  // Kahn's order: a job is placed once its last parent is, at its deepest parent + 1.
  for (let i = 0; i < ready.length; i += 1) {
    const id = ready[i]!;
    for (const child of children.get(id) ?? []) {
      layer.set(child, Math.max(layer.get(child) ?? 0, layer.get(id)! + 1));
      const left = waiting.get(child)! - 1;
      waiting.set(child, left);
      if (left === 0) ready.push(child);
    }
  }
  const deepest = Math.max(-1, ...ready.map((id) => layer.get(id)!));
  for (const m of members) if (waiting.get(m.id)! > 0) layer.set(m.id, deepest + 1);
  return layer;
}

/**
 * Lay the workflow out: layers left to right, each centred on the tallest, its jobs
 * ordered by where their parents sit (fewer crossings), then by creation.
 */
export function layoutWorkflow(
  members: readonly WorkflowMember[],
  edges: readonly WorkflowEdge[],
  { currentId, collapseAbove = COLLAPSE_ABOVE }: { currentId?: string | undefined; collapseAbove?: number } = {},
): WorkflowGraph {
  const layer = layerOf(members, edges);
  const order = new Map(members.map((m, i) => [m.id, i]));
  const byLayer: WorkflowMember[][] = [];
  for (const m of members) (byLayer[layer.get(m.id)!] ??= []).push(m);

  const parentsOf = new Map<string, string[]>();
  for (const { parent, child } of edges) {
    if (order.has(parent) && order.has(child)) parentsOf.set(child, [...(parentsOf.get(child) ?? []), parent]);
  }

  const nodeOf = new Map<string, string>();
  const row = new Map<string, number>();
  const layers: string[][] = [];
  const nodes: GraphNode[] = [];
  const pending: (Omit<JobNode, 'x' | 'y'> | Omit<GroupNode, 'x' | 'y'>)[] = [];

  for (let index = 0; index < byLayer.length; index += 1) {
    const jobs = byLayer[index] ?? [];
    // Barycentre of the parents' rows, in the layers already placed.
    const weight = (m: WorkflowMember) => {
      const rows = (parentsOf.get(m.id) ?? []).map((p) => row.get(nodeOf.get(p) ?? '')).filter((r) => r !== undefined);
      return rows.length === 0 ? Number.POSITIVE_INFINITY : rows.reduce((a, b) => a + b, 0) / rows.length;
    };
    const sorted = [...jobs].sort((a, b) => weight(a) - weight(b) || order.get(a.id)! - order.get(b.id)!);
    const ids: string[] = [];
    if (sorted.length > collapseAbove) {
      const current = sorted.find((m) => m.id === currentId);
      const rest = sorted.filter((m) => m !== current);
      const id = `layer-${index}`;
      const counts = emptyCounts();
      for (const m of rest) {
        counts[m.status] += 1;
        nodeOf.set(m.id, id);
      }
      pending.push({ kind: 'group', id, layer: index, memberIds: rest.map((m) => m.id), counts });
      ids.push(id);
      if (current) {
        nodeOf.set(current.id, current.id);
        pending.push({ kind: 'job', id: current.id, layer: index, member: current, current: true });
        ids.push(current.id);
      }
    } else {
      for (const m of sorted) {
        nodeOf.set(m.id, m.id);
        pending.push({ kind: 'job', id: m.id, layer: index, member: m, current: m.id === currentId });
        ids.push(m.id);
      }
    }
    ids.forEach((id, i) => row.set(id, i));
    layers.push(ids);
  }

  const tallest = Math.max(0, ...layers.map((ids) => ids.length));
  const height = tallest === 0 ? 0 : tallest * NODE_HEIGHT + (tallest - 1) * ROW_GAP;
  const width = layers.length === 0 ? 0 : layers.length * NODE_WIDTH + (layers.length - 1) * LAYER_GAP;
  for (const node of pending) {
    const ids = layers[node.layer]!;
    const span = ids.length * NODE_HEIGHT + (ids.length - 1) * ROW_GAP;
    const y = (height - span) / 2 + row.get(node.id)! * (NODE_HEIGHT + ROW_GAP);
    nodes.push({ ...node, x: node.layer * (NODE_WIDTH + LAYER_GAP), y } as GraphNode);
  }

  // Member edges between the same two nodes (through a group) are drawn once, counted.
  const merged = new Map<string, GraphEdge>();
  for (const { parent, child } of edges) {
    const from = nodeOf.get(parent);
    const to = nodeOf.get(child);
    if (from === undefined || to === undefined || from === to) continue;
    const key = `${from}>${to}`;
    const edge = merged.get(key);
    if (edge) edge.count += 1;
    else merged.set(key, { from, to, count: 1 });
  }
  return { nodes, edges: [...merged.values()], layers, width, height };
}

/** "extract", else the type: what a node is called. */
export function memberLabel(member: WorkflowMember): string {
  return member.ref || member.type;
}

/** The statuses with jobs, most telling first: "9,990 succeeded · 10 failed". */
export const COUNT_ORDER: readonly JobStatus[] = ['succeeded', 'failed', 'cancelled', 'running', 'queued', 'waiting'];

export function describeCounts(counts: StatusCounts): string {
  const parts = COUNT_ORDER.filter((s) => counts[s] > 0).map((s) => `${counts[s].toLocaleString()} ${s}`);
  return parts.length === 0 ? 'no jobs' : parts.join(' · ');
}
