import { Link } from 'react-router';
import { useWorkers } from '../api/hooks';
import type { LiveWorkerProcess } from '../api/types';
import { RelativeTime } from '../components/RelativeTime';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { describeQueues, describeThreads, orderThreads, processTitle, threadLabel } from '../lib/workers';

function ProcessPanel({ process, minutes }: { process: LiveWorkerProcess; minutes: number }) {
  const title = processTitle(process);
  const headingId = `process-${process.worker_id.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  return (
    <section className="panel process" aria-labelledby={headingId} data-process={process.worker_id}>
      <div className="process__head">
        <h2 id={headingId} className="mono">
          {title}
        </h2>
        <p className="muted">
          {describeThreads(process)} · {process.finished} attempts finished in {minutes} min ·{' '}
          {describeQueues(process.queues)} · started{' '}
          <RelativeTime value={process.started_at} /> · last checked in <RelativeTime value={process.last_seen_at} />{' '}
          (every {Number(process.heartbeat_interval_seconds.toFixed(1))} s)
        </p>
      </div>
      <div className="table-wrap">
        <table className="table">
          <caption className="sr-only">Threads of {title}</caption>
          <thead>
            <tr>
              <th scope="col">Thread</th>
              <th scope="col">Current job</th>
              <th scope="col">Running since</th>
            </tr>
          </thead>
          <tbody>
            {orderThreads(process.threads).map((thread) => (
              <tr key={thread.worker_id} data-worker-id={thread.worker_id}>
                <th scope="row" title={thread.worker_id}>
                  {threadLabel(thread)}
                </th>
                <td>
                  {thread.job ? (
                    <>
                      <Link to={`/jobs/${thread.job.id}`} className="mono" title={thread.job.id}>
                        {thread.job.id.slice(0, 8)}
                      </Link>{' '}
                      <span className="mono">{thread.job.type}</span>
                      <span className="cell-detail">
                        queue {thread.job.queue} · attempt {thread.job.attempt}
                      </span>
                      {thread.job.lease_overdue && <span className="cell-note">lease overdue</span>}
                    </>
                  ) : (
                    <span className="muted">idle</span>
                  )}
                </td>
                <td>
                  <RelativeTime value={thread.job?.started_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <AbandonedThreads process={process} title={title} />
    </section>
  );
}

/** Threads given up on when their attempt timed out: still in the handler, each with its job. */
function AbandonedThreads({ process, title }: { process: LiveWorkerProcess; title: string }) {
  const threads = process.threads_abandoned;
  if (threads.length === 0) return null;
  return (
    <div className="abandoned" role="group" aria-label={`Abandoned threads of ${title}`}>
      <p>
        <strong>
          {threads.length} abandoned {threads.length === 1 ? 'thread' : 'threads'}
        </strong>{' '}
        still {threads.length === 1 ? 'runs its handler' : 'run their handlers'} after the attempt timed out. Each was
        replaced by a new thread and holds no lease; it ends when its handler returns, or with the process.
      </p>
      <ul>
        {threads.map((thread) => (
          <li key={thread.worker_id} data-abandoned-thread={thread.worker_id}>
            <span className="mono" title={thread.worker_id}>
              {threadLabel(thread)}
            </span>
            {thread.job ? (
              <>
                {': '}
                <Link to={`/jobs/${thread.job.id}`} className="mono" title={thread.job.id}>
                  {thread.job.id.slice(0, 8)}
                </Link>{' '}
                <span className="mono">{thread.job.type}</span>
                {thread.job.attempt !== null && <> · attempt {thread.job.attempt}</>}
                {thread.job.status && <> · the job is {thread.job.status} now</>}
              </>
            ) : null}
            {thread.abandoned_at && (
              <>
                {' '}
                · abandoned <RelativeTime value={thread.abandoned_at} />
              </>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function WorkersPage() {
  const workers = useWorkers();
  return (
    <div className="page">
      <h1>Workers</h1>
      <p className="muted">
        Every live worker process, busy or idle: each checks in on a heartbeat, and one that stops checking in (killed,
        crashed, cut off) leaves this list within one interval.
      </p>
      {workers.isPending ? (
        <Loading label="Loading workers…" />
      ) : workers.isError && !workers.data ? (
        <ErrorState error={workers.error} onRetry={() => void workers.refetch()} />
      ) : workers.data ? (
        <>
          {workers.isError && <StaleNote error={workers.error} />}
          {workers.data.processes.length === 0 ? (
            <Empty>No worker is running. Start one with manage.py run_job_workers.</Empty>
          ) : (
            workers.data.processes.map((process) => (
              <ProcessPanel key={process.worker_id} process={process} minutes={workers.data.minutes} />
            ))
          )}
        </>
      ) : null}
    </div>
  );
}
