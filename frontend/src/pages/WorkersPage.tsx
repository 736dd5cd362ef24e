import { Link } from 'react-router';
import { useWorkers } from '../api/hooks';
import type { WorkerProcess } from '../api/types';
import { RelativeTime } from '../components/RelativeTime';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { orderThreads, processTitle, summarizeProcess, threadLabel } from '../lib/workers';

/** Workers seen over this window; an idle thread writes nothing, so it shows while its last event is this recent. */
const WORKERS_WINDOW_MINUTES = 15;

function ProcessPanel({ process }: { process: WorkerProcess }) {
  const summary = summarizeProcess(process);
  const title = processTitle(process);
  const headingId = `process-${process.process.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  return (
    <section className="panel process" aria-labelledby={headingId} data-process={process.process}>
      <div className="process__head">
        <h2 id={headingId} className="mono">
          {title}
        </h2>
        <p className="muted">
          {summary.busy} of {summary.threads} threads busy · {process.finished} finished · last seen{' '}
          <RelativeTime value={process.last_seen} />
          {summary.overdue > 0 && (
            <>
              {' '}
              · <span className="badge badge--warning">{summary.overdue} lease overdue</span>
            </>
          )}
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
              <th scope="col" className="num">
                Finished
              </th>
              <th scope="col">Last seen</th>
            </tr>
          </thead>
          <tbody>
            {orderThreads(process.workers).map((worker) => (
              <tr key={worker.worker_id} data-worker-id={worker.worker_id}>
                <th scope="row" title={worker.worker_id}>
                  {threadLabel(worker)}
                </th>
                <td>
                  {worker.current_job ? (
                    <>
                      <Link to={`/jobs/${worker.current_job.id}`} className="mono" title={worker.current_job.id}>
                        {worker.current_job.id.slice(0, 8)}
                      </Link>{' '}
                      <span className="mono">{worker.current_job.type}</span>
                      <span className="cell-detail">
                        queue {worker.current_job.queue} · attempt {worker.current_job.attempt}
                      </span>
                      {worker.current_job.lease_overdue && <span className="cell-note">lease overdue</span>}
                    </>
                  ) : (
                    <span className="muted">{worker.role === 'maintenance' ? 'heartbeat and cleanup' : 'idle'}</span>
                  )}
                </td>
                <td>
                  <RelativeTime value={worker.current_job?.since} />
                </td>
                <td className="num">{worker.finished}</td>
                <td>
                  <RelativeTime value={worker.last_seen} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

export function WorkersPage() {
  const workers = useWorkers(WORKERS_WINDOW_MINUTES);
  return (
    <div className="page">
      <h1>Workers</h1>
      <p className="muted">
        Worker threads seen in the last {WORKERS_WINDOW_MINUTES} minutes, by process: what each runs now and how many
        attempts it finished.
      </p>
      {workers.isPending ? (
        <Loading label="Loading workers…" />
      ) : workers.isError && !workers.data ? (
        <ErrorState error={workers.error} onRetry={() => void workers.refetch()} />
      ) : workers.data ? (
        <>
          {workers.isError && <StaleNote error={workers.error} />}
          {workers.data.processes.length === 0 ? (
            <Empty>No worker seen in the last {WORKERS_WINDOW_MINUTES} minutes. Start one with manage.py run_job_workers.</Empty>
          ) : (
            workers.data.processes.map((process) => <ProcessPanel key={process.process} process={process} />)
          )}
        </>
      ) : null}
    </div>
  );
}
