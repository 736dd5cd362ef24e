import { useQuery } from '@tanstack/react-query';
import { useEffect, useState, type ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import {
  useCancelJob,
  useConfig,
  useJob,
  useJobAttempts,
  useJobEvents,
  usePageLimits,
  useRetryJob,
  useRunJobNow,
  useWorkflow,
} from '../api/hooks';
import { isCancellable, isLive, isRetryable, type Job, type JobDetail, type WorkerSettings } from '../api/types';
import { AttemptsTable } from '../components/AttemptsTable';
import { ClockTime } from '../components/ClockTime';
import { Traceback } from '../components/Traceback';
import { useNow } from '../hooks/useNow';
import { describeTimeout } from '../lib/attempts';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { EventTimeline } from '../components/EventTimeline';
import { JsonView } from '../components/JsonView';
import { LeaseCountdown } from '../components/LeaseCountdown';
import { RelativeTime } from '../components/RelativeTime';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { errorMessage } from '../lib/errors';
import { formatExact, isIsoTime } from '../lib/time';
import { findJob } from '../lib/search';
import { traceIdOf } from '../lib/trace';
import { StatusBadge } from '../components/StatusBadge';
import { StatusCountsBar, WorkflowStateBadge } from '../components/WorkflowBits';
import { WorkflowGraph } from '../components/WorkflowGraph';
import { workflowTitle } from '../lib/workflows';
import { ApiError, api } from '../api/client';

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="dl__row">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/**
 * Parents linked one by one in the fields; a workflow's callback may wait for 10,000, which
 * its graph shows as one counted node instead.
 */
const PARENTS_SHOWN = 20;

/** The jobs it waits for; an API older than job dependencies sends none. */
function parentsOf(job: JobDetail): string[] {
  return (job.depends_on as string[] | undefined) ?? [];
}

/** The job's workflow: its state and counts, and its graph with this job outlined. */
function JobWorkflow({ workflowId, jobId }: { workflowId: string; jobId: string }) {
  const workflow = useWorkflow(workflowId);
  return (
    <section className="panel panel--wide" aria-labelledby="workflow-heading">
      <h2 id="workflow-heading">Workflow</h2>
      {workflow.isPending ? (
        <Loading label="Loading workflow…" />
      ) : workflow.isError && !workflow.data ? (
        <ErrorState title="Could not load its workflow" error={workflow.error} onRetry={() => void workflow.refetch()} />
      ) : workflow.data ? (
        <>
          {workflow.isError && <StaleNote error={workflow.error} />}
          <p className="workflow-line">
            <Link to={`/workflows/${workflow.data.id}`} className={workflow.data.name ? undefined : 'mono'}>
              {workflowTitle(workflow.data)}
            </Link>
            <WorkflowStateBadge state={workflow.data.state} />
            <StatusCountsBar counts={workflow.data.counts} />
          </p>
          <WorkflowGraph workflow={workflow.data} currentId={jobId} />
        </>
      ) : null}
    </section>
  );
}

/** The timeout in force and where it comes from (job, type or worker), as the API says. */
function Timeout({ job, worker }: { job: JobDetail; worker: WorkerSettings | undefined }) {
  const effective = describeTimeout(job.effective_timeout_seconds, job.timeout_source);
  if (effective !== null) return <>{effective}</>;
  if (job.timeout_seconds !== null) return <>{job.timeout_seconds} s</>;
  const fallback = worker === undefined ? '' : worker.timeout_seconds > 0 ? `${worker.timeout_seconds} s` : 'no limit';
  return (
    <span className="muted">
      not set: the job type’s default, else the worker’s{fallback && ` (${fallback})`}
    </span>
  );
}

/** "2 of 3 · 5 in all (round 2)": this round's count, and every attempt since the job was created. */
function Attempts({ job }: { job: JobDetail }) {
  const total = job.total_attempts;
  return (
    <>
      {job.attempts} of {job.max_attempts}
      {total !== undefined && total !== job.attempts && (
        <span className="muted">
          {' '}
          · {total} in all{job.round !== undefined && job.round > 1 ? ` (round ${job.round})` : ''}
        </span>
      )}
    </>
  );
}

function JobFields({ job, worker }: { job: JobDetail; worker: WorkerSettings | undefined }) {
  return (
    <dl className="dl">
      <Field label="ID">
        <span className="mono">{job.id}</span>
      </Field>
      <Field label="Type">
        <span className="mono">{job.type}</span>
      </Field>
      <Field label="Status">
        <StatusBadge status={job.status} />
      </Field>
      <Field label="Queue">
        <span className="mono">{job.queue}</span>
      </Field>
      <Field label="Priority">{job.priority}</Field>
      <Field label="Attempts">
        <Attempts job={job} />
      </Field>
      <Field label="Timeout">
        <Timeout job={job} worker={worker} />
      </Field>
      <Field label="Idempotency key">
        {job.idempotency_key ? <span className="mono">{job.idempotency_key}</span> : <span className="muted">none</span>}
      </Field>
      {job.unique_key && (
        <Field label="Unique key">
          <span className="mono">{job.unique_key}</span>
          <span className="muted small"> (no second job with it while this one is queued or running)</span>
        </Field>
      )}
      {job.concurrency_key && (
        <Field label="Concurrency key">
          <span className="mono">{job.concurrency_key}</span>
          <span className="muted small"> (counts against its key’s concurrency limit)</span>
        </Field>
      )}
      {parentsOf(job).length > 0 && (
        <Field label="Depends on">
          {parentsOf(job)
            .slice(0, PARENTS_SHOWN)
            .map((parent, index) => (
              <span key={parent}>
                {index > 0 && ', '}
                <Link className="mono" to={`/jobs/${parent}`}>
                  {parent.slice(0, 8)}
                </Link>
              </span>
            ))}
          {parentsOf(job).length > PARENTS_SHOWN && (
            <span data-more-parents={parentsOf(job).length - PARENTS_SHOWN}>
              {' '}
              and {(parentsOf(job).length - PARENTS_SHOWN).toLocaleString()} more
              {job.workflow_id ? ' (the workflow’s graph counts them)' : ''}
            </span>
          )}
          <span className="muted small">
            {job.on_parent_failure === 'run'
              ? ' (runs once every one finished, whatever their outcome)'
              : ' (cancelled if one fails for good or is cancelled)'}
          </span>
        </Field>
      )}
      {(job.dependents as number | undefined ?? 0) > 0 && (
        <Field label="Dependents">
          {job.dependents} {job.dependents === 1 ? 'job waits' : 'jobs wait'} for this one
        </Field>
      )}
      {/* A finished job will not be claimed again (until a retry): nothing is "available" about it. */}
      {isLive(job.status) && (
        <Field label={job.status === 'queued' ? 'Available' : 'Became available'}>
          <RelativeTime value={job.available_at} />
        </Field>
      )}
      <Field label="Locked by">
        {job.locked_by ? <span className="mono">{job.locked_by}</span> : <span className="muted">—</span>}
      </Field>
      <Field label="Lease">
        {job.status === 'running' && job.locked_until ? (
          <LeaseCountdown lockedUntil={job.locked_until} />
        ) : (
          <RelativeTime value={job.locked_until} />
        )}
      </Field>
      <Field label="Created">
        <RelativeTime value={job.created_at} />
      </Field>
      <Field label="Updated">
        <RelativeTime value={job.updated_at} />
      </Field>
      <Field label="Finished">
        <RelativeTime value={job.finished_at} />
      </Field>
      {job.cancel_requested_at && (
        <Field label="Cancel requested">
          <RelativeTime value={job.cancel_requested_at} />
        </Field>
      )}
    </dl>
  );
}

/** Metadata: what the client attached, and the trace context the tracing added. */
function JobMetadata({ metadata }: { metadata: Job['metadata'] }) {
  const entries = Object.entries(metadata).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return <p className="muted">No metadata.</p>;
  const traceId = traceIdOf(metadata.traceparent);
  return (
    <>
      {traceId && (
        <p>
          Trace <span className="mono">{traceId}</span>{' '}
          <span className="muted">(look it up in your tracing backend)</span>
        </p>
      )}
      <dl className="dl" aria-label="Metadata entries">
        {entries.map(([key, value]) => (
          <Field key={key} label={key}>
            {/* A time the system wrote (a schedule's tick) in the browser's zone, as every time here. */}
            <span className="mono" title={isIsoTime(value) ? value : undefined}>
              {isIsoTime(value) ? formatExact(value) : value}
            </span>
          </Field>
        ))}
      </dl>
    </>
  );
}

function conflictOrError(error: ApiError, action: string): string {
  // A 409 names the job's current status; anything else is the request failing.
  return error.status === 409 ? error.message : `${action} failed: ${errorMessage(error)}`;
}

/** Cancel (waiting, queued or running, after a confirmation) and Retry (failed or cancelled). */
function JobActions({ job, worker }: { job: Job; worker: WorkerSettings | undefined }) {
  const retry = useRetryJob(job.id);
  const cancel = useCancelJob(job.id);
  const runNow = useRunJobNow(job.id);
  const now = useNow();
  const [confirming, setConfirming] = useState(false);
  // Scheduled for later, or waiting out a retry's backoff: it can be made due at once.
  const canRunNow = job.status === 'queued' && Date.parse(job.available_at) > now;
  // Asking again while the worker has not answered changes nothing, so the button goes.
  const canCancel = isCancellable(job.status) && job.cancel_requested_at === null;
  const waiting = job.status === 'running' && job.cancel_requested_at !== null;
  const heartbeat = worker ? ` (every ${Number(worker.heartbeat_seconds.toFixed(1))} s)` : '';

  if (!canCancel && !waiting && !canRunNow && !isRetryable(job.status) && !retry.isError && !cancel.isError && !runNow.isError)
    return null;
  return (
    <div className="actions">
      {canRunNow && (
        <button
          type="button"
          className="button button--primary"
          disabled={runNow.isPending}
          onClick={() => runNow.mutate()}
        >
          {runNow.isPending ? 'Making it due…' : 'Run now'}
        </button>
      )}
      {canCancel && (
        <button
          type="button"
          className="button button--danger"
          onClick={() => {
            cancel.reset();
            setConfirming(true);
          }}
        >
          Cancel job
        </button>
      )}
      {isRetryable(job.status) && (
        <button type="button" className="button button--primary" disabled={retry.isPending} onClick={() => retry.mutate()}>
          {retry.isPending ? 'Retrying…' : 'Retry job'}
        </button>
      )}
      {waiting && job.cancel_requested_at && (
        <p className="notice notice--info" role="status">
          Cancel requested at{' '}
          <ClockTime value={job.cancel_requested_at} />
          , waiting for the worker: it sees the request within one heartbeat{heartbeat} and the attempt ends as
          cancelled when the handler next checks in.
        </p>
      )}
      {retry.isError && (
        <p className="form-error" role="alert">
          {conflictOrError(retry.error, 'Retry')}
        </p>
      )}
      {runNow.isError && (
        <p className="form-error" role="alert">
          {conflictOrError(runNow.error, 'Run now')}
        </p>
      )}
      {cancel.isError && !confirming && (
        <p className="form-error" role="alert">
          {conflictOrError(cancel.error, 'Cancel')}
        </p>
      )}
      <ConfirmDialog
        open={confirming}
        title={`Cancel job ${job.id.slice(0, 8)}?`}
        confirmLabel="Cancel job"
        pendingLabel="Cancelling…"
        dismissLabel="Keep job"
        danger
        pending={cancel.isPending}
        error={cancel.isError ? conflictOrError(cancel.error, 'Cancel') : null}
        onDismiss={() => setConfirming(false)}
        onConfirm={() => cancel.mutate(undefined, { onSuccess: () => setConfirming(false) })}
      >
        {job.status === 'queued' ? (
          <p>It is queued: it will not run. You can retry it later.</p>
        ) : (
          <p>
            It is running on <span className="mono">{job.locked_by ?? 'a worker'}</span>. The worker sees the request
            within one heartbeat{heartbeat} and ends the attempt as cancelled the next time the handler checks in; a
            handler that never checks in runs to its end or its timeout.
          </p>
        )}
      </ConfirmDialog>
    </div>
  );
}

/** The latest failure: its exception class, message and traceback, readable as code. */
function LastError({ job }: { job: JobDetail }) {
  if (job.status === 'cancelled') {
    // Stopping as asked is not an error: no red text, no traceback of the cancellation.
    return (
      <>
        <p className="muted" data-cancelled="">
          Cancelled as requested; nothing failed.
        </p>
        {job.last_traceback && (
          <details>
            <summary>An earlier attempt failed: {job.last_exception_class}</summary>
            <Traceback text={job.last_traceback} label="Traceback of the last error" />
          </details>
        )}
      </>
    );
  }
  if (!job.last_error && !job.last_traceback) return <p className="muted">No error recorded.</p>;
  return (
    <>
      {job.last_exception_class && <p className="last-error__class">{job.last_exception_class}</p>}
      {job.last_error && <pre className="error-text">{job.last_error}</pre>}
      {job.last_traceback && <Traceback text={job.last_traceback} label="Traceback of the last error" />}
    </>
  );
}

const FULL_ID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/**
 * `/jobs/<id>`: a whole id shows the job; anything else (the 8-character short id every
 * list shows, an idempotency key) is looked up and replaced by the job's whole id.
 */
export function JobDetailPage() {
  const { id = '' } = useParams();
  if (FULL_ID.test(id)) return <JobDetail id={id} />;
  return <ShortIdRedirect query={id} />;
}

function ShortIdRedirect({ query }: { query: string }) {
  const navigate = useNavigate();
  const found = useQuery({
    queryKey: ['job-lookup', query],
    queryFn: () => findJob(query, (q) => api.lookupJob(q)),
    retry: false,
  });
  const target = found.data?.kind === 'job' ? found.data.id : null;
  useEffect(() => {
    if (target) void navigate(`/jobs/${target}`, { replace: true });
  }, [navigate, target]);
  if (found.isPending || target) return <Loading label={`Looking up job ${query}…`} />;
  return (
    <div className="page">
      <p>
        <Link to="/jobs">← All jobs</Link>
      </p>
      {found.isError ? (
        <ErrorState title="Could not look up this job" error={found.error} onRetry={() => void found.refetch()} />
      ) : (
        <div className="notice notice--warning" role="alert">
          <h1>Job not found</h1>
          <p>{found.data?.kind === 'job' ? '' : found.data?.message}</p>
        </div>
      )}
    </div>
  );
}

function JobDetail({ id }: { id: string }) {
  const job = useJob(id);
  const [showHeartbeats, setShowHeartbeats] = useState(false);
  const events = useJobEvents(id, job.data, showHeartbeats ? 'include' : 'exclude');
  const attempts = useJobAttempts(id, job.data);
  const worker = useConfig().data?.worker;
  const timelinePage = usePageLimits('job_timeline');

  if (job.isPending) return <Loading label="Loading job…" />;
  if (job.isError && !job.data) {
    const notFound = job.error instanceof ApiError && job.error.status === 404;
    return (
      <div className="page">
        <p>
          <Link to="/jobs">← All jobs</Link>
        </p>
        <ErrorState
          title={notFound ? 'Job not found' : 'Could not load this job'}
          error={job.error}
          onRetry={notFound ? undefined : () => void job.refetch()}
        />
      </div>
    );
  }
  const data = job.data;
  if (!data) return null;

  return (
    <div className="page">
      <p className="breadcrumb">
        <Link to="/jobs">← All jobs</Link>
      </p>
      <div className="page__title-row">
        <h1>
          Job <span className="mono">{data.id.slice(0, 8)}</span>
        </h1>
        <StatusBadge status={data.status} />
      </div>
      {job.isError && <StaleNote error={job.error} />}
      <JobActions job={data} worker={worker} />

      <div className="detail-grid">
        {/* A job created alone belongs to no workflow. */}
        {data.workflow_id && <JobWorkflow workflowId={data.workflow_id} jobId={data.id} />}

        <section className="panel" aria-labelledby="fields-heading">
          <h2 id="fields-heading">Fields</h2>
          <JobFields job={data} worker={worker} />
        </section>

        <section className="panel" aria-labelledby="timeline-heading">
          <div className="panel__head">
            <h2 id="timeline-heading">
              Timeline{' '}
              {isLive(data.status) && <span className="live-pill">live</span>}
            </h2>
            <label className="toggle">
              <input type="checkbox" checked={showHeartbeats} onChange={(e) => setShowHeartbeats(e.target.checked)} />
              Show heartbeats (lease renewals, progress)
            </label>
          </div>
          {events.isPending ? (
            <Loading label="Loading events…" />
          ) : events.isError && !events.data ? (
            <ErrorState error={events.error} onRetry={() => void events.refetch()} />
          ) : events.data && events.data.length > 0 ? (
            <>
              <EventTimeline events={events.data} />
              {events.hasNextPage && (
                <button
                  type="button"
                  className="button button--small"
                  disabled={events.isFetchingNextPage}
                  onClick={() => void events.fetchNextPage()}
                >
                  {events.isFetchingNextPage
                    ? 'Loading events…'
                    : `Load ${timelinePage ? `up to ${timelinePage.default_limit} ` : ''}more events`}
                </button>
              )}
            </>
          ) : (
            <Empty>No events recorded.</Empty>
          )}
        </section>

        <section className="panel" aria-labelledby="error-heading">
          <h2 id="error-heading">Last error</h2>
          <LastError job={data} />
        </section>

        <section className="panel panel--wide" aria-labelledby="attempts-heading">
          <h2 id="attempts-heading">Attempts</h2>
          {attempts.isPending ? (
            <Loading label="Loading attempts…" />
          ) : attempts.isError && !attempts.data ? (
            <ErrorState error={attempts.error} onRetry={() => void attempts.refetch()} />
          ) : attempts.data && attempts.data.length > 0 ? (
            <AttemptsTable attempts={attempts.data} />
          ) : (
            <Empty>{data.status === 'cancelled' ? 'Cancelled before it ran.' : 'Not claimed yet.'}</Empty>
          )}
        </section>

        <section className="panel" aria-labelledby="payload-heading">
          <h2 id="payload-heading">Payload</h2>
          <JsonView value={data.payload} label="Payload JSON" />
        </section>

        <section className="panel" aria-labelledby="metadata-heading">
          <h2 id="metadata-heading">Metadata</h2>
          <JobMetadata metadata={data.metadata} />
        </section>

        <section className="panel" aria-labelledby="result-heading">
          <h2 id="result-heading">Result</h2>
          {data.result === null ? (
            <p className="muted">
              {data.status === 'succeeded'
                ? 'The handler returned nothing.'
                : data.status === 'failed'
                  ? 'None: the job failed.'
                  : data.status === 'cancelled'
                    ? 'None: the job was cancelled.'
                    : 'No result yet.'}
            </p>
          ) : (
            <JsonView value={data.result} label="Result JSON" />
          )}
        </section>
      </div>
    </div>
  );
}
