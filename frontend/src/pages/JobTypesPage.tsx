import { Link, useSearchParams } from 'react-router';
import { useJobTypes } from '../api/hooks';
import type { ErrorGroup, JobTypeHealth } from '../api/types';
import { RelativeTime } from '../components/RelativeTime';
import { Sparkline } from '../components/Sparkline';
import { TableWrap } from '../components/TableWrap';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { isFailing } from '../lib/attention';
import {
  failuresOf,
  formatMs,
  formatRate,
  formatTypeSort,
  nextSort,
  parseTypeSort,
  sortTypes,
  type TypeColumn,
  type TypeSort,
} from '../lib/jobTypes';
import { parseIntParam } from '../lib/params';

/** Windows offered; the API takes any whole number of minutes up to a day. */
const TYPE_WINDOWS = [
  { minutes: 15, label: '15 minutes' },
  { minutes: 60, label: '1 hour' },
  { minutes: 360, label: '6 hours' },
  { minutes: 1440, label: '24 hours' },
] as const;
const DEFAULT_MINUTES = 60;

function SortHeader({
  column,
  label,
  sort,
  onSort,
  numeric = false,
}: {
  column: TypeColumn;
  label: string;
  sort: TypeSort;
  onSort: (column: TypeColumn) => void;
  numeric?: boolean;
}) {
  const active = sort.column === column;
  const ariaSort = active ? (sort.direction === 'asc' ? 'ascending' : 'descending') : 'none';
  return (
    <th scope="col" aria-sort={ariaSort} className={numeric ? 'num' : undefined}>
      <button type="button" className="sort-button" onClick={() => onSort(column)}>
        {label}
        <span aria-hidden="true" className="sort-button__arrow">
          {active ? (sort.direction === 'asc' ? '▲' : '▼') : '↕'}
        </span>
      </button>
    </th>
  );
}

function TypeRow({ type, bucketSeconds }: { type: JobTypeHealth; bucketSeconds: number }) {
  const failures = failuresOf(type);
  const failing = isFailing(type);
  return (
    <tr data-type={type.type} className={failing ? 'is-failing' : undefined}>
      <th scope="row">
        <Link to={`/jobs?type=${encodeURIComponent(type.type)}`} className="mono">
          {type.type}
        </Link>
        {!type.registered && <span className="cell-note">no handler here</span>}
      </th>
      <td className="num" data-released={type.counts.released}>
        {type.attempts}
        {type.counts.released > 0 && (
          <span className="cell-detail" title="Claims given back before they started (a worker shutting down): not attempts">
            +{type.counts.released} released
          </span>
        )}
      </td>
      <td className="num">{type.counts.succeeded}</td>
      <td className="num" title="retried · failed · timed out · lease expired">
        {failures}
        {failures > 0 && (
          <span className="cell-detail">
            {type.counts.retry_scheduled} retried · {type.counts.failed} failed · {type.counts.timed_out} timed out
            {type.counts.timeout_requeued > 0 && ` · ${type.counts.timeout_requeued} lease expired`}
          </span>
        )}
      </td>
      <td className="num" data-cancelled={type.counts.cancelled} data-cancelled-queued={type.counts.cancelled_queued}>
        {type.counts.cancelled}
        {type.counts.cancelled_queued > 0 && (
          <span className="cell-detail" title="Jobs cancelled before they ran: not attempts">
            +{type.counts.cancelled_queued} before running
          </span>
        )}
      </td>
      <td className="num" data-failure-rate={type.failure_rate ?? ''}>
        {failing ? <span className="badge badge--danger">{formatRate(type.failure_rate)}</span> : formatRate(type.failure_rate)}
      </td>
      <td className="num">
        {formatMs(type.run_ms.p50)} / {formatMs(type.run_ms.p95)}
      </td>
      <td className="num">
        {formatMs(type.wait_ms.p50)} / {formatMs(type.wait_ms.p95)}
      </td>
      <td>
        <Sparkline
          values={type.failures}
          label={`${type.type}: ${failures} failures, per ${bucketSeconds / 60}-minute bucket`}
        />
      </td>
      <td className="last-error">
        {type.last_error ? (
          <>
            <Link to={`/jobs/${type.last_error.job_id}`} className="error-snippet" title={type.last_error.message}>
              {type.last_error.message}
            </Link>
            <RelativeTime value={type.last_error.at} />
          </>
        ) : (
          <span className="muted">—</span>
        )}
      </td>
    </tr>
  );
}

/** Where the jobs of one error group are listed: its type, and its message in their last error. */
function groupJobsLink(group: ErrorGroup): string {
  const params = new URLSearchParams({ type: group.type, error: group.message.split('\n')[0] ?? '' });
  return `/jobs?${params.toString()}`;
}

/** The window's failed attempts grouped by type, exception class and message: what fails, how often. */
function ErrorGroups({ groups, windowLabel }: { groups: readonly ErrorGroup[]; windowLabel: string }) {
  return (
    <section aria-labelledby="error-groups-heading" className="error-groups">
      <h2 id="error-groups-heading">Failures by error</h2>
      {groups.length === 0 ? (
        <p className="muted">No attempt failed in the last {windowLabel}.</p>
      ) : (
        <div className="table-wrap">
          <table className="table" aria-labelledby="error-groups-heading">
            <thead>
              <tr>
                <th scope="col">Type</th>
                <th scope="col">Error</th>
                <th scope="col" className="num">
                  Attempts
                </th>
                <th scope="col" className="num">
                  Jobs
                </th>
                <th scope="col">Latest</th>
              </tr>
            </thead>
            <tbody>
              {groups.map((group) => (
                <tr
                  key={`${group.type}|${group.exception_class ?? ''}|${group.message}`}
                  data-error-group={group.type}
                >
                  <td className="mono">{group.type}</td>
                  <td className="last-error-cell">
                    <Link to={groupJobsLink(group)} className="last-error-text" title={group.message}>
                      {group.exception_class && (
                        <span className="last-error-text__class mono">{group.exception_class}</span>
                      )}
                      {group.exception_class && ': '}
                      {group.message}
                    </Link>
                  </td>
                  <td className="num" data-attempts={group.attempts}>
                    {group.attempts.toLocaleString()}
                  </td>
                  <td className="num" data-jobs={group.jobs}>
                    {group.jobs.toLocaleString()}
                    {group.jobs_capped && <span title="More jobs than were counted">+</span>}
                  </td>
                  <td>
                    <RelativeTime value={group.last_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export function JobTypesPage() {
  const [params, setParams] = useSearchParams();
  const minutes = parseIntParam(params.get('minutes'), DEFAULT_MINUTES, 1, 1440);
  const sort = parseTypeSort(params.get('sort'));
  const types = useJobTypes(minutes);

  function update(key: string, value: string | undefined) {
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        if (value === undefined) next.delete(key);
        else next.set(key, value);
        return next;
      },
      // Pushed: Back undoes a sort or a window change.
      { replace: false },
    );
  }

  const rows = types.data ? sortTypes(types.data.types, sort) : [];
  const windowLabel = TYPE_WINDOWS.find((w) => w.minutes === minutes)?.label ?? `${minutes} minutes`;

  return (
    <div className="page">
      <h1>Job types</h1>
      <div className="filters">
        <label className="field field--inline">
          <span>Window</span>
          <select
            value={minutes}
            onChange={(e) => update('minutes', Number(e.target.value) === DEFAULT_MINUTES ? undefined : e.target.value)}
          >
            {!TYPE_WINDOWS.some((w) => w.minutes === minutes) && <option value={minutes}>{windowLabel}</option>}
            {TYPE_WINDOWS.map((w) => (
              <option key={w.minutes} value={w.minutes}>
                last {w.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <section className="panel" aria-label="Job type health">
        {types.isPending ? (
          <Loading label="Loading job types…" />
        ) : types.isError && !types.data ? (
          <ErrorState error={types.error} onRetry={() => void types.refetch()} />
        ) : types.data ? (
          <>
            {types.isError && <StaleNote error={types.error} />}
            {rows.length === 0 ? (
              <Empty>No job types registered or seen in the last {windowLabel}.</Empty>
            ) : (
              <TableWrap label="the job types">
                <table className="table table--types" aria-busy={types.isPlaceholderData}>
                  <caption className="sr-only">
                    Job types over the last {windowLabel}: attempts, failures, run time and queue wait
                  </caption>
                  <thead>
                    <tr>
                      {(
                        [
                          ['type', 'Type', false],
                          ['attempts', 'Attempts', true],
                          ['succeeded', 'Succeeded', true],
                          ['failures', 'Failed', true],
                        ] as const
                      ).map(([column, label, numeric]) => (
                        <SortHeader
                          key={column}
                          column={column}
                          label={label}
                          numeric={numeric}
                          sort={sort}
                          onSort={(c) => update('sort', formatTypeSort(nextSort(sort, c)))}
                        />
                      ))}
                      <th scope="col" className="num">
                        Cancelled
                      </th>
                      {(
                        [
                          ['failure_rate', 'Failure rate'],
                          ['run_ms', 'Run time p50 / p95'],
                          ['wait_ms', 'Queue wait p50 / p95'],
                        ] as const
                      ).map(([column, label]) => (
                        <SortHeader
                          key={column}
                          column={column}
                          label={label}
                          numeric
                          sort={sort}
                          onSort={(c) => update('sort', formatTypeSort(nextSort(sort, c)))}
                        />
                      ))}
                      <th scope="col">Failures over time</th>
                      <SortHeader
                        column="last_error"
                        label="Last error"
                        sort={sort}
                        onSort={(c) => update('sort', formatTypeSort(nextSort(sort, c)))}
                      />
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((type) => (
                      <TypeRow key={type.type} type={type} bucketSeconds={types.data.bucket_seconds} />
                    ))}
                  </tbody>
                </table>
              </TableWrap>
            )}
            <ErrorGroups groups={types.data.error_groups} windowLabel={windowLabel} />
            <p className="muted small">
              Attempts are the attempts that ended in the window; percentiles are over each type&apos;s newest{' '}
              {types.data.sample_size_max.toLocaleString()} of them. Each type links to its jobs.
            </p>
          </>
        ) : null}
      </section>
    </div>
  );
}
