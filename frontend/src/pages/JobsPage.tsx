import { useEffect, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useJobs, usePageLimits } from '../api/hooks';
import { JOB_STATUSES } from '../api/types';
import { Pagination } from '../components/Pagination';
import { RelativeTime } from '../components/RelativeTime';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { StatusBadge } from '../components/StatusBadge';
import { pageSizeChoices, parsePageSize } from '../lib/paging';
import { parseIntParam, parseStatus } from '../lib/params';
import { useDebounced } from '../lib/useDebounced';

export function JobsPage() {
  const [params, setParams] = useSearchParams();
  const status = parseStatus(params.get('status'));
  const type = params.get('type') ?? '';
  const pageLimits = usePageLimits('jobs');
  // Without `limit` in the URL the API applies its default, which /config/ tells the pager.
  const limit = parsePageSize(params.get('limit'), pageLimits?.max_limit);
  const pageSize = limit ?? pageLimits?.default_limit;
  const offset = parseIntParam(params.get('offset'), 0, 0, Number.MAX_SAFE_INTEGER);

  const [typeInput, setTypeInput] = useState(type);
  const debouncedType = useDebounced(typeInput, 300);

  function update(changes: Record<string, string | number | undefined>) {
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        for (const [k, v] of Object.entries(changes)) {
          if (v === undefined || v === '' || (k === 'offset' && v === 0)) next.delete(k);
          else next.set(k, String(v));
        }
        return next;
      },
      { replace: true },
    );
  }

  useEffect(() => {
    if (debouncedType.trim() !== type) update({ type: debouncedType.trim(), offset: 0 });
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only react to the debounced input
  }, [debouncedType]);

  const jobs = useJobs({ status, type: type || undefined, limit, offset });
  const filtered = status !== undefined || type !== '';

  return (
    <div className="page">
      <h1>Jobs</h1>
      <form className="filters" role="search" aria-label="Filter jobs" onSubmit={(e) => e.preventDefault()}>
        <label className="field field--inline">
          <span>Status</span>
          <select value={status ?? ''} onChange={(e) => update({ status: e.target.value, offset: 0 })}>
            <option value="">All statuses</option>
            {JOB_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label className="field field--inline">
          <span>Type contains</span>
          <input
            type="search"
            value={typeInput}
            placeholder="e.g. demo"
            onChange={(e) => setTypeInput(e.target.value)}
          />
        </label>
        {filtered && (
          <button
            type="button"
            className="button button--link"
            onClick={() => {
              setTypeInput('');
              update({ status: undefined, type: undefined, offset: 0 });
            }}
          >
            Clear filters
          </button>
        )}
      </form>

      <section className="panel" aria-label="Job list">
        {jobs.isPending ? (
          <Loading label="Loading jobs…" />
        ) : jobs.isError && !jobs.data ? (
          <ErrorState error={jobs.error} onRetry={() => void jobs.refetch()} />
        ) : jobs.data ? (
          <>
            {jobs.isError && <StaleNote error={jobs.error} />}
            {jobs.data.results.length === 0 ? (
              <Empty>
                {filtered ? 'No jobs match these filters.' : 'No jobs yet.'}{' '}
                <Link to="/create">Create one</Link>.
              </Empty>
            ) : (
              <div className="table-wrap">
                <table className="table" aria-busy={jobs.isPlaceholderData}>
                  <caption id="jobs-table-caption" className="sr-only">
                    Jobs{status ? ` with status ${status}` : ''}
                    {type ? ` whose type contains “${type}”` : ''}
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">Job</th>
                      <th scope="col">Type</th>
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
                    {jobs.data.results.map((job) => (
                      <tr key={job.id} data-job-id={job.id}>
                        <td>
                          <Link to={`/jobs/${job.id}`} className="mono" title={job.id}>
                            {job.id.slice(0, 8)}
                          </Link>
                        </td>
                        <td className="mono">{job.type}</td>
                        <td>
                          <StatusBadge status={job.status} />
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
            )}
            {pageSize !== undefined && (
              <Pagination
                label="Job pages"
                count={jobs.data.count}
                limit={pageSize}
                offset={offset}
                onOffsetChange={(o) => update({ offset: o })}
                pageSizes={pageLimits && pageSizeChoices(pageLimits, pageSize)}
                onLimitChange={(l) => update({ limit: l === pageLimits?.default_limit ? undefined : l, offset: 0 })}
              />
            )}
          </>
        ) : null}
      </section>
    </div>
  );
}
