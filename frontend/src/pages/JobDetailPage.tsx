import type { ReactNode } from 'react';
import { Link, useParams } from 'react-router';
import { useJob, useJobEvents, usePageLimits, useRetryJob } from '../api/hooks';
import type { Job } from '../api/types';
import { EventTimeline } from '../components/EventTimeline';
import { JsonView } from '../components/JsonView';
import { LeaseCountdown } from '../components/LeaseCountdown';
import { RelativeTime } from '../components/RelativeTime';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { errorMessage } from '../lib/errors';
import { StatusBadge } from '../components/StatusBadge';
import { ApiError } from '../api/client';

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="dl__row">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

function JobFields({ job }: { job: Job }) {
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
      <Field label="Priority">{job.priority}</Field>
      <Field label="Attempts">
        {job.attempts} of {job.max_attempts}
      </Field>
      <Field label="Idempotency key">
        {job.idempotency_key ? <span className="mono">{job.idempotency_key}</span> : <span className="muted">none</span>}
      </Field>
      <Field label="Available at">
        <RelativeTime value={job.available_at} />
      </Field>
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
    </dl>
  );
}

function RetryButton({ job }: { job: Job }) {
  const retry = useRetryJob(job.id);
  if (job.status !== 'failed' && !retry.isError) return null;
  return (
    <div className="actions">
      {job.status === 'failed' && (
        <button type="button" className="button button--primary" disabled={retry.isPending} onClick={() => retry.mutate()}>
          {retry.isPending ? 'Retrying…' : 'Retry job'}
        </button>
      )}
      {retry.isError && (
        <p className="form-error" role="alert">
          {retry.error instanceof ApiError && retry.error.status === 409
            ? retry.error.message
            : `Retry failed: ${errorMessage(retry.error)}`}
        </p>
      )}
    </div>
  );
}

export function JobDetailPage() {
  const { id = '' } = useParams();
  const job = useJob(id);
  const events = useJobEvents(id, job.data);
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
      <RetryButton job={data} />

      <div className="detail-grid">
        <section className="panel" aria-labelledby="fields-heading">
          <h2 id="fields-heading">Fields</h2>
          <JobFields job={data} />
        </section>

        <section className="panel" aria-labelledby="timeline-heading">
          <h2 id="timeline-heading">
            Timeline{' '}
            {(data.status === 'queued' || data.status === 'running') && <span className="live-pill">live</span>}
          </h2>
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
          {data.last_error ? (
            <pre className="error-text">{data.last_error}</pre>
          ) : (
            <p className="muted">No error recorded.</p>
          )}
        </section>

        <section className="panel" aria-labelledby="payload-heading">
          <h2 id="payload-heading">Payload</h2>
          <JsonView value={data.payload} label="Payload JSON" />
        </section>

        <section className="panel" aria-labelledby="result-heading">
          <h2 id="result-heading">Result</h2>
          {data.result === null ? (
            <p className="muted">
              {data.status === 'succeeded'
                ? 'The handler returned nothing.'
                : data.status === 'failed'
                  ? 'None: the job failed.'
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
