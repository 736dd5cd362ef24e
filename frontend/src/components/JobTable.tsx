import { Link } from 'react-router';
import type { Job } from '../api/types';
import { RelativeTime } from './RelativeTime';
import { StatusBadge } from './StatusBadge';

/** One page of jobs, each row with a checkbox for the bulk actions. */
export function JobTable({
  jobs,
  caption,
  busy,
  selected,
  onSelect,
  onSelectAll,
}: {
  jobs: readonly Job[];
  caption: string;
  busy: boolean;
  selected: ReadonlySet<string>;
  onSelect: (id: string, checked: boolean) => void;
  onSelectAll: (checked: boolean) => void;
}) {
  const selectedHere = jobs.filter((job) => selected.has(job.id)).length;
  const all = jobs.length > 0 && selectedHere === jobs.length;
  return (
    <div className="table-wrap">
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
            <th scope="col">Type</th>
            <th scope="col">Queue</th>
            <th scope="col">Status</th>
            <th scope="col" className="num">
              Priority
            </th>
            <th scope="col" className="num">
              Attempts
            </th>
            <th scope="col">Created</th>
            <th scope="col">Available</th>
            <th scope="col">Finished</th>
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
              </td>
              <td className="num">{job.priority}</td>
              <td className="num">
                {job.attempts}/{job.max_attempts}
              </td>
              <td>
                <RelativeTime value={job.created_at} />
              </td>
              <td>
                <RelativeTime value={job.available_at} />
              </td>
              <td>
                <RelativeTime value={job.finished_at} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
