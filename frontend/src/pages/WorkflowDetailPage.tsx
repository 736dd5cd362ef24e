import type { ReactNode } from 'react';
import { Link, useParams } from 'react-router';
import { ApiError } from '../api/client';
import { useWorkflow } from '../api/hooks';
import type { WorkflowDetail } from '../api/types';
import { RelativeTime } from '../components/RelativeTime';
import { ErrorState, Loading, StaleNote } from '../components/States';
import { StatusCountsBar, WorkflowStateBadge } from '../components/WorkflowBits';
import { WorkflowGraph } from '../components/WorkflowGraph';
import { workflowTitle } from '../lib/workflows';

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="dl__row">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

function WorkflowFields({ workflow }: { workflow: WorkflowDetail }) {
  return (
    <dl className="dl">
      <Field label="ID">
        <span className="mono">{workflow.id}</span>
      </Field>
      <Field label="Name">{workflow.name || <span className="muted">none</span>}</Field>
      <Field label="Created">
        <RelativeTime value={workflow.created_at} />
      </Field>
      <Field label="Jobs">{workflow.jobs.toLocaleString()}</Field>
      <Field label="Progress">
        <StatusCountsBar counts={workflow.counts} />
      </Field>
    </dl>
  );
}

/** `/workflows/<id>`: a workflow's state, counts and graph, each job linking to its page. */
export function WorkflowDetailPage() {
  const { id = '' } = useParams();
  const workflow = useWorkflow(id);

  if (workflow.isPending) return <Loading label="Loading workflow…" />;
  if (workflow.isError && !workflow.data) {
    const notFound = workflow.error instanceof ApiError && workflow.error.status === 404;
    return (
      <div className="page">
        <p className="breadcrumb">
          <Link to="/workflows">← All workflows</Link>
        </p>
        <h1>{notFound ? 'Workflow not found' : 'Workflow'}</h1>
        <ErrorState
          title={notFound ? 'No workflow has this id' : 'Could not load this workflow'}
          error={workflow.error}
          onRetry={notFound ? undefined : () => void workflow.refetch()}
        />
      </div>
    );
  }
  const data = workflow.data;
  if (!data) return null;

  return (
    <div className="page">
      <p className="breadcrumb">
        <Link to="/workflows">← All workflows</Link>
      </p>
      <div className="page__title-row">
        <h1>
          Workflow <span className={data.name ? undefined : 'mono'}>{workflowTitle(data)}</span>
        </h1>
        <WorkflowStateBadge state={data.state} />
      </div>
      {workflow.isError && <StaleNote error={workflow.error} />}
      <section className="panel" aria-labelledby="workflow-fields-heading">
        <h2 id="workflow-fields-heading">Fields</h2>
        <WorkflowFields workflow={data} />
      </section>
      <section className="panel" aria-labelledby="workflow-graph-heading">
        <h2 id="workflow-graph-heading">Graph</h2>
        <WorkflowGraph workflow={data} />
      </section>
    </div>
  );
}
