import { Link, useSearchParams } from 'react-router';
import { useWorkflows } from '../api/hooks';
import { ApiError } from '../api/client';
import { WORKFLOW_STATES, type WorkflowState, type WorkflowSummary } from '../api/types';
import { Pagination } from '../components/Pagination';
import { RelativeTime } from '../components/RelativeTime';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { TableWrap } from '../components/TableWrap';
import { StatusCountsBar, WorkflowStateBadge } from '../components/WorkflowBits';
import { parseIntParam } from '../lib/params';
import { WORKFLOW_PAGE_SIZE, parseWorkflowState, workflowTitle } from '../lib/workflows';

const STATE_LABELS: Record<WorkflowState, string> = {
  active: 'active (jobs left to run)',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
};

function WorkflowRow({ workflow }: { workflow: WorkflowSummary }) {
  return (
    <tr data-workflow-id={workflow.id} data-state={workflow.state}>
      <th scope="row">
        <Link to={`/workflows/${workflow.id}`} className={workflow.name ? undefined : 'mono'}>
          {workflowTitle(workflow)}
        </Link>
        {workflow.name && <span className="cell-detail mono">{workflow.id.slice(0, 8)}</span>}
      </th>
      <td>
        <RelativeTime value={workflow.created_at} />
      </td>
      <td>
        <WorkflowStateBadge state={workflow.state} />
      </td>
      <td className="progress-cell">
        <StatusCountsBar counts={workflow.counts} />
      </td>
      <td className="num">{workflow.jobs.toLocaleString()}</td>
    </tr>
  );
}

export function WorkflowsPage() {
  const [params, setParams] = useSearchParams();
  const state = parseWorkflowState(params.get('state'));
  const page = parseIntParam(params.get('page'), 1, 1, Number.MAX_SAFE_INTEGER);
  const workflows = useWorkflows({ page, state });

  function update(changes: Record<string, string | number | undefined>) {
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        for (const [k, v] of Object.entries(changes)) {
          if (v === undefined || v === '' || (k === 'page' && v === 1)) next.delete(k);
          else next.set(k, String(v));
        }
        return next;
      },
      // Pushed, not replaced: Back undoes a filter or a page change.
      { replace: false },
    );
  }

  const rows = workflows.data?.results ?? [];
  // The API answers a page number past the last with 404 (fewer workflows since the link was made).
  const pastTheEnd = page > 1 && workflows.error instanceof ApiError && workflows.error.status === 404;
  const caption = `Workflows${state ? ` that are ${state}` : ''}, newest first: state, progress by job status and size`;

  return (
    <div className="page">
      <h1>Workflows</h1>
      <form className="filters" role="search" aria-label="Filter workflows" onSubmit={(e) => e.preventDefault()}>
        <label className="field field--inline">
          <span>State</span>
          <select value={state ?? ''} onChange={(e) => update({ state: e.target.value, page: 1 })}>
            <option value="">All states</option>
            {WORKFLOW_STATES.map((s) => (
              <option key={s} value={s}>
                {STATE_LABELS[s]}
              </option>
            ))}
          </select>
        </label>
      </form>

      <section className="panel" aria-label="Workflow list">
        {workflows.isPending ? (
          <Loading label="Loading workflows…" />
        ) : workflows.isError && !workflows.data && pastTheEnd ? (
          <Empty>
            Page {page} is past the last page. <Link to={state ? `/workflows?state=${state}` : '/workflows'}>First page</Link>.
          </Empty>
        ) : workflows.isError && !workflows.data ? (
          <ErrorState error={workflows.error} onRetry={() => void workflows.refetch()} />
        ) : workflows.data ? (
          <>
            {workflows.isError && <StaleNote error={workflows.error} />}
            {rows.length === 0 ? (
              <Empty>
                {state ? (
                  <>
                    No {state} workflows. <Link to="/workflows">Show every workflow</Link>.
                  </>
                ) : (
                  <>
                    No workflows yet. A workflow is a set of jobs and the edges between them, created in one request
                    (<span className="mono">POST /api/workflows/</span>).
                  </>
                )}
              </Empty>
            ) : (
              <TableWrap label="the workflows">
                <table className="table table--workflows" aria-busy={workflows.isPlaceholderData}>
                  <caption className="sr-only">{caption}</caption>
                  <thead>
                    <tr>
                      <th scope="col">Workflow</th>
                      <th scope="col">Created</th>
                      <th scope="col">State</th>
                      <th scope="col">Progress</th>
                      <th scope="col" className="num">
                        Jobs
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((workflow) => (
                      <WorkflowRow key={workflow.id} workflow={workflow} />
                    ))}
                  </tbody>
                </table>
              </TableWrap>
            )}
            {(workflows.data.count > WORKFLOW_PAGE_SIZE || page > 1) && (
              <Pagination
                label="Workflow pages"
                count={workflows.data.count}
                limit={WORKFLOW_PAGE_SIZE}
                offset={(page - 1) * WORKFLOW_PAGE_SIZE}
                onOffsetChange={(offset) => update({ page: Math.floor(offset / WORKFLOW_PAGE_SIZE) + 1 })}
              />
            )}
          </>
        ) : null}
      </section>
    </div>
  );
}
