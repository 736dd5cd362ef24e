import { Link } from 'react-router';
import { isLive, type JobListItem, type JobOrderingField } from '../api/types';
import { useNow } from '../hooks/useNow';
import type { JobSort } from '../lib/ordering';
import { formatMs } from '../lib/attempts';
import { RelativeTime } from './RelativeTime';
import { StatusBadge } from './StatusBadge';
import { TableWrap } from './TableWrap';

/** How long the current attempt ran (finished) or has run so far (running); — before it starts. */
function Duration({ job }: { job: JobListItem }) {
  const now = useNow();
  if (!job.started_at) return <span className="muted">—</span>;
  const start = Date.parse(job.started_at);
  if (job.status === 'running') return <span title="so far">{formatMs(now - start)}</span>;
  if (!job.finished_at) return <span className="muted">—</span>;
  return <>{formatMs(Date.parse(job.finished_at) - start)}</>;
}

/** A running job whose lease has run out: its worker is gone or frozen. */
function leaseExpired(job: JobListItem, now: number): boolean {
  return job.status === 'running' && job.locked_until !== null && Date.parse(job.locked_until) < now;
}

/** The last error's class and first line; a cancelled job's is no error. */
function LastError({ job }: { job: JobListItem }) {
  if (!job.last_error || job.status === 'cancelled' || job.status === 'succeeded')
    return <span className="muted">—</span>;
  const message = job.last_error.split('\n')[0] ?? '';
  const name = job.last_exception_class?.split('.').pop();
  return (
    <span className="last-error-text" title={job.last_exception_class ? `${job.last_exception_class}: ${job.last_error}` : job.last_error}>
      {name && <span className="last-error-text__class mono">{name}</span>}
      {name && ': '}
      {message}
    </span>
  );
}

/** A column header that sorts the list by `field` (the API's `ordering`), or plain text without `onSort`. */
function SortableHeader({
  field,
  label,
  sort,
  onSort,
  numeric = false,
}: {
  field: JobOrderingField;
  label: string;
  sort: JobSort | undefined;
  onSort: ((field: JobOrderingField) => void) | undefined;
  numeric?: boolean;
}) {
  const active = sort?.field === field;
  if (!onSort) {
    return (
      <th scope="col" className={numeric ? 'num' : undefined}>
        {label}
      </th>
    );
  }
  return (
    <th
      scope="col"
      className={numeric ? 'num' : undefined}
      aria-sort={active ? (sort.descending ? 'descending' : 'ascending') : 'none'}
    >
      <button type="button" className="sort-button" onClick={() => onSort(field)}>
        {label}
        <span aria-hidden="true" className="sort-button__arrow">
          {active ? (sort.descending ? '▼' : '▲') : '↕'}
        </span>
      </button>
    </th>
  );
}

/** One page of jobs, each row with a checkbox for the bulk actions; headers sort when `onSort` is given. */
export function JobTable({
  jobs,
  caption,
  busy,
  selected,
  onSelect,
  onSelectAll,
  sort,
  onSort,
  showErrors = false,
}: {
  jobs: readonly JobListItem[];
  caption: string;
  busy: boolean;
  selected: ReadonlySet<string>;
  onSelect: (id: string, checked: boolean) => void;
  onSelectAll: (checked: boolean) => void;
  sort?: JobSort | undefined;
  onSort?: ((field: JobOrderingField) => void) | undefined;
  /** A last-error column: exception class and message. */
  showErrors?: boolean;
}) {
  const now = useNow();
  const selectedHere = jobs.filter((job) => selected.has(job.id)).length;
  const all = jobs.length > 0 && selectedHere === jobs.length;
  return (
    <TableWrap label="the jobs">
      <table className="table" aria-busy={busy}>
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            <th scope="col" className="select-cell">
              <input
                type="checkbox"
                aria-label="Select all jobs on this page"
                checked={all}
                ref={(el) => {
                  if (el) el.indeterminate = selectedHere > 0 && !all;
                }}
                onChange={(e) => onSelectAll(e.target.checked)}
              />
            </th>
            <th scope="col">Job</th>
            <SortableHeader field="type" label="Type" sort={sort} onSort={onSort} />
            <th scope="col">Queue</th>
            <th scope="col">Status</th>
            <SortableHeader field="priority" label="Priority" sort={sort} onSort={onSort} numeric />
            <th scope="col" className="num">
              Attempts
            </th>
            <SortableHeader field="created_at" label="Created" sort={sort} onSort={onSort} />
            <th scope="col">Available</th>
            <SortableHeader field="started_at" label="Started" sort={sort} onSort={onSort} />
            <th scope="col" className="num">
              Duration
            </th>
            <SortableHeader field="finished_at" label="Finished" sort={sort} onSort={onSort} />
            {showErrors && <th scope="col">Last error</th>}
          </tr>
        </thead>
        <tbody>
          {jobs.map((job) => (
            <tr key={job.id} data-job-id={job.id} className={selected.has(job.id) ? 'is-selected' : undefined}>
              <td className="select-cell">
                <input
                  type="checkbox"
                  aria-label={`Select job ${job.id.slice(0, 8)}`}
                  checked={selected.has(job.id)}
                  onChange={(e) => onSelect(job.id, e.target.checked)}
                />
              </td>
              <td>
                <Link to={`/jobs/${job.id}`} className="mono" title={job.id}>
                  {job.id.slice(0, 8)}
                </Link>
              </td>
              <td className="mono">{job.type}</td>
              <td className="mono">{job.queue}</td>
              <td>
                <StatusBadge status={job.status} />
                {job.status === 'running' && job.cancel_requested_at && (
                  <span className="cell-note" title="Cancel requested; waiting for the worker">
                    cancelling
                  </span>
                )}
                {leaseExpired(job, now) && (
                  <span
                    className="cell-note cell-note--warning"
                    data-lease-expired=""
                    title="Its lease ran out: its worker is gone or frozen; cleanup requeues it"
                  >
                    lease expired
                  </span>
                )}
              </td>
              <td className="num">{job.priority}</td>
              <td className="num">
                {job.attempts}/{job.max_attempts}
              </td>
              <td>
                <RelativeTime value={job.created_at} />
              </td>
              <td>
                {/* Nothing is "available" about a finished job. */}
                {isLive(job.status) ? <RelativeTime value={job.available_at} /> : <span className="muted">—</span>}
              </td>
              <td>
                <RelativeTime value={job.started_at} />
              </td>
              <td className="num">
                <Duration job={job} />
              </td>
              <td>
                <RelativeTime value={job.finished_at} />
              </td>
              {showErrors && (
                <td className="last-error-cell">
                  <LastError job={job} />
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}
