import { useId, useMemo } from 'react';
import { Link } from 'react-router';
import { useHiddenRight } from '../hooks/useHiddenRight';
import type { WorkflowDetail } from '../api/types';
import { STATUS_ICON, STATUS_TONE } from '../lib/tones';
import {
  COUNT_ORDER,
  LAYER_GAP,
  NODE_HEIGHT,
  NODE_WIDTH,
  describeCounts,
  layoutWorkflow,
  memberLabel,
  type GraphNode,
  type GroupNode,
  type JobNode,
  type WorkflowGraph as Graph,
} from '../lib/workflowGraph';
import { StatusCountsBar } from './WorkflowBits';

/** Room around the drawing, so the current job's outline is not cut off at the edge. */
const PAD = 6;

/** Each node's ", waits for extract, transform" ("…for 10,000 jobs" after a group): the edges, for a screen reader. */
function waitsFor(graph: Graph, nodes: Map<string, GraphNode>): Map<string, string> {
  const names = new Map<string, string[]>();
  for (const { from, to } of graph.edges) {
    const parent = nodes.get(from)!;
    const name = parent.kind === 'job' ? memberLabel(parent.member) : `${parent.memberIds.length.toLocaleString()} jobs`;
    names.set(to, [...(names.get(to) ?? []), name]);
  }
  return new Map([...names].map(([id, list]) => [id, `, waits for ${list.join(', ')}`]));
}

function JobBox({ node, after }: { node: JobNode; after: string }) {
  const { member } = node;
  const label = memberLabel(member);
  return (
    <Link
      to={`/jobs/${member.id}`}
      className={`dag-node dag-node--${STATUS_TONE[member.status] ?? 'neutral'}${node.current ? ' dag-node--current' : ''}`}
      style={{ left: node.x + PAD, top: node.y + PAD, width: NODE_WIDTH, height: NODE_HEIGHT }}
      data-node-id={member.id}
      data-status={member.status}
      data-current={node.current ? '' : undefined}
      aria-current={node.current ? 'page' : undefined}
      title={`${label} · ${member.type} · ${member.status} · ${member.id.slice(0, 8)}`}
    >
      <span className="dag-node__name">
        <span aria-hidden="true" className="dag-node__icon">
          {STATUS_ICON[member.status] ?? '?'}
        </span>
        {label}
      </span>
      <span className="dag-node__meta">
        {/* The current job's type is on its own page: the box says which one is this. */}
        {member.ref && !node.current && <span className="mono">{member.type} · </span>}
        {member.status}
        {node.current && <span className="dag-node__here"> · this job</span>}
      </span>
      {after && <span className="sr-only">{after}</span>}
    </Link>
  );
}

function GroupBox({ node, after }: { node: GroupNode; after: string }) {
  const total = node.memberIds.length;
  const counts = describeCounts(node.counts);
  return (
    <div
      className="dag-node dag-node--group"
      style={{ left: node.x + PAD, top: node.y + PAD, width: NODE_WIDTH, height: NODE_HEIGHT }}
      data-node-id={node.id}
      data-group-size={total}
      title={`${total.toLocaleString()} jobs: ${counts}`}
    >
      <span className="dag-node__name">
        {total.toLocaleString()} {total === 1 ? 'job' : 'jobs'}
        <span className="sr-only">: {counts}</span>
      </span>
      {/* The words do not fit the box: its icons and numbers do, the words are in its name and tooltip. */}
      <span className="dag-node__meta dag-node__tally" aria-hidden="true">
        {COUNT_ORDER.filter((s) => node.counts[s] > 0).map((s) => (
          <span key={s} className={`dag-node__count dag-node__count--${s}`}>
            {STATUS_ICON[s]} {node.counts[s].toLocaleString()}
          </span>
        ))}
      </span>
      <StatusCountsBar counts={node.counts} compact />
      {after && <span className="sr-only">{after}</span>}
    </div>
  );
}

/**
 * A workflow's jobs as a layered graph, left to right (lib/workflowGraph lays it out):
 * each job a link to its page in its status's colour, `currentId` outlined, the edges
 * drawn beneath. Read aloud it is a list of steps, each job saying what it waits for.
 */
export function WorkflowGraph({ workflow, currentId }: { workflow: WorkflowDetail; currentId?: string }) {
  const graph = useMemo(
    () => layoutWorkflow(workflow.members, workflow.edges, { currentId }),
    [workflow.members, workflow.edges, currentId],
  );
  const nodes = useMemo(() => new Map(graph.nodes.map((n) => [n.id, n])), [graph]);
  const after = useMemo(() => waitsFor(graph, nodes), [graph, nodes]);
  const arrow = `dag-arrow-${useId().replace(/:/g, '')}`;
  const [scrollRef, hidden] = useHiddenRight<HTMLDivElement>();
  // A job past the first 1,000 members has no node to outline.
  const missing = currentId !== undefined && !workflow.members.some((m) => m.id === currentId);
  const width = graph.width + 2 * PAD;
  const height = graph.height + 2 * PAD;

  return (
    <div className="dag">
      {workflow.members_truncated && (
        <p className="notice notice--info" data-truncated="">
          First {workflow.members.length.toLocaleString()} members shown, of {workflow.jobs.toLocaleString()}: the
          graph leaves out the rest and their edges.
          {missing && ' This job is one of those left out.'}
        </p>
      )}
      {graph.nodes.length === 0 ? (
        <p className="muted">This workflow has no jobs.</p>
      ) : (
        <>
          {hidden && (
            <p className="table-cue" data-graph-cue="">
              More of the graph to the right: scroll it sideways →
            </p>
          )}
          {/* Keyboard users can scroll a graph wider than the page: the box takes focus. */}
          <div
            ref={scrollRef}
            className={`dag__scroll${hidden ? ' dag__scroll--more' : ''}`}
            role="group"
            aria-label="Workflow graph"
            tabIndex={0}
          >
            <div className="dag__canvas" style={{ width, height }}>
              <svg className="dag__edges" aria-hidden="true" width={width} height={height} viewBox={`0 0 ${width} ${height}`}>
                <defs>
                  <marker id={arrow} viewBox="0 0 8 8" refX="8" refY="4" markerWidth="8" markerHeight="8" orient="auto">
                    <path d="M0,0 L8,4 L0,8 z" className="dag__arrow" />
                  </marker>
                </defs>
                {graph.edges.map((edge) => {
                  const from = nodes.get(edge.from)!;
                  const to = nodes.get(edge.to)!;
                  const x1 = from.x + NODE_WIDTH + PAD;
                  const y1 = from.y + NODE_HEIGHT / 2 + PAD;
                  const x2 = to.x + PAD;
                  const y2 = to.y + NODE_HEIGHT / 2 + PAD;
                  const bend = Math.max(LAYER_GAP / 2, (x2 - x1) / 2);
                  return (
                    <path
                      key={`${edge.from}>${edge.to}`}
                      className="dag__edge"
                      d={`M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`}
                      markerEnd={`url(#${arrow})`}
                      data-edge-from={edge.from}
                      data-edge-to={edge.to}
                      data-edge-count={edge.count}
                    />
                  );
                })}
              </svg>
              <ol className="dag__layers">
                {graph.layers.map((ids, index) => (
                  <li key={index}>
                    <span className="sr-only">Step {index + 1}</span>
                    <ul>
                      {ids.map((id) => {
                        const node = nodes.get(id)!;
                        const waits = after.get(id) ?? '';
                        return (
                          <li key={id}>
                            {node.kind === 'job' ? <JobBox node={node} after={waits} /> : <GroupBox node={node} after={waits} />}
                          </li>
                        );
                      })}
                    </ul>
                  </li>
                ))}
              </ol>
            </div>
          </div>
        </>
      )}
    </div>
  );
}
