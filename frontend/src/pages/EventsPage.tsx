import { useEffect, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { cursorFromLink } from '../api/client';
import { useEventFeed, usePageLimits } from '../api/hooks';
import { ApiError } from '../api/client';
import { HEARTBEAT_EVENT_TYPES, JOB_EVENT_TYPES } from '../api/types';
import { JsonView } from '../components/JsonView';
import { useDebounced } from '../hooks/useDebounced';
import { actorOf, describeActor } from '../lib/actor';
import { CursorPager } from '../components/Pagination';
import { RelativeTime } from '../components/RelativeTime';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { EventTypeBadge } from '../components/StatusBadge';
import { pageSizeChoices, parsePageSize } from '../lib/paging';
import { isJobIdOrPrefix, parseEventType } from '../lib/params';

export function EventsPage() {
  const [params, setParams] = useSearchParams();
  const type = parseEventType(params.get('type'));
  const jobId = params.get('job_id') ?? '';
  const cursor = params.get('cursor') ?? undefined;
  const pageLimits = usePageLimits('job_events');
  // Without `limit` in the URL the API applies its default, which /config/ tells the select.
  const limit = parsePageSize(params.get('limit'), pageLimits?.max_limit);

  const [jobInput, setJobInput] = useState(jobId);
  const debouncedJob = useDebounced(jobInput.trim(), 300);
  const jobInputInvalid = jobInput.trim() !== '' && !isJobIdOrPrefix(jobInput);
  // Heartbeats (lease renewals, progress) are hidden unless asked for, or filtered on.
  const showHeartbeats = params.get('heartbeats') === 'include' || (type !== undefined && HEARTBEAT_EVENT_TYPES.includes(type));

  function update(changes: Record<string, string | number | undefined>) {
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        for (const [k, v] of Object.entries(changes)) {
          if (v === undefined || v === '') next.delete(k);
          else next.set(k, String(v));
        }
        return next;
      },
      { replace: false },
    );
  }

  useEffect(() => {
    if ((debouncedJob === '' || isJobIdOrPrefix(debouncedJob)) && debouncedJob !== jobId) {
      update({ job_id: debouncedJob, cursor: undefined });
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only react to the debounced input
  }, [debouncedJob]);

  const feed = useEventFeed({
    cursor,
    limit,
    type,
    jobId: jobId || undefined,
    heartbeats: showHeartbeats ? 'include' : 'exclude',
  });
  // An id prefix several jobs share: the API's 400 names it on `job_id`.
  const jobProblem =
    feed.error instanceof ApiError && feed.error.status === 400 ? (feed.error.fieldErrors.job_id?.[0] ?? null) : null;
  const page = feed.data;
  const olderCursor = cursorFromLink(page?.next ?? null);
  const newerCursor = cursorFromLink(page?.previous ?? null);

  return (
    <div className="page">
      <h1>Events</h1>
      <form className="filters" role="search" aria-label="Filter events" onSubmit={(e) => e.preventDefault()}>
        <label className="field field--inline">
          <span>Event type</span>
          <select value={type ?? ''} onChange={(e) => update({ type: e.target.value, cursor: undefined })}>
            <option value="">All types</option>
            {JOB_EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <div className="field field--inline">
          <label htmlFor="event-job-filter">Job ID</label>
          <input
            id="event-job-filter"
            type="search"
            className="mono"
            value={jobInput}
            placeholder="id or first 8+ characters"
            aria-invalid={jobInputInvalid || jobProblem !== null}
            aria-describedby={jobInputInvalid || jobProblem ? 'event-job-filter-error' : undefined}
            onChange={(e) => setJobInput(e.target.value)}
          />
          {(jobInputInvalid || jobProblem) && (
            <span id="event-job-filter-error" className="field__errors">
              {jobInputInvalid ? 'Enter a job id or its first 8 characters or more.' : jobProblem}
            </span>
          )}
        </div>
        <label className="field field--inline toggle">
          <input
            type="checkbox"
            checked={showHeartbeats}
            disabled={type !== undefined && HEARTBEAT_EVENT_TYPES.includes(type)}
            onChange={(e) => update({ heartbeats: e.target.checked ? 'include' : undefined, cursor: undefined })}
          />
          Show heartbeats (lease renewals, progress)
        </label>
        {pageLimits && (
          <label className="field field--inline">
            <span>Per page</span>
            <select
              value={limit ?? pageLimits.default_limit}
              onChange={(e) => {
                const l = Number(e.target.value);
                update({ limit: l === pageLimits.default_limit ? undefined : l, cursor: undefined });
              }}
            >
              {pageSizeChoices(pageLimits, limit).map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
        )}
      </form>

      <section className="panel" aria-label="Event feed">
        {feed.isPending ? (
          <Loading label="Loading events…" />
        ) : feed.isError && !page ? (
          jobProblem ? (
            <Empty>{jobProblem}</Empty>
          ) : (
            <ErrorState error={feed.error} onRetry={() => void feed.refetch()} />
          )
        ) : page ? (
          <>
            {feed.isError && <StaleNote error={feed.error} />}
            <CursorPager
              atLatest={cursor === undefined}
              hasNewer={newerCursor !== null}
              hasOlder={olderCursor !== null}
              onLatest={() => update({ cursor: undefined })}
              onNewer={() => update({ cursor: newerCursor ?? undefined })}
              onOlder={() => olderCursor && update({ cursor: olderCursor })}
            />
            {page.results.length === 0 ? (
              <Empty>{type || jobId ? 'No events match these filters.' : 'No events yet.'}</Empty>
            ) : (
              <div className="table-wrap">
                <table className="table" aria-busy={feed.isPlaceholderData}>
                  <caption className="sr-only">Job events, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col" className="num">
                        #
                      </th>
                      <th scope="col">Time</th>
                      <th scope="col">Type</th>
                      <th scope="col">Job</th>
                      <th scope="col" className="num">
                        Attempt
                      </th>
                      <th scope="col">Worker or operator</th>
                      <th scope="col">Message</th>
                      <th scope="col">Data</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.results.map((event) => (
                      <tr key={event.id} data-event-id={event.id}>
                        <td className="num mono">{event.id}</td>
                        <td>
                          <RelativeTime value={event.created_at} />
                        </td>
                        <td>
                          <EventTypeBadge type={event.type} />
                        </td>
                        <td>
                          <Link to={`/jobs/${event.job}`} className="mono" title={event.job}>
                            {event.job.slice(0, 8)}
                          </Link>
                        </td>
                        <td className="num">{event.attempt}</td>
                        <td className="mono small">
                          {event.worker_id ?? (actorOf(event) ? null : '—')}
                          {actorOf(event) && (
                            <span className="cell-detail" data-actor={actorOf(event)?.user ?? ''}>
                              {describeActor(actorOf(event)!)}
                            </span>
                          )}
                        </td>
                        <td>{event.message}</td>
                        <td>
                          {event.data && typeof event.data === 'object' && Object.keys(event.data).length > 0 ? (
                            <details>
                              <summary>JSON</summary>
                              <JsonView value={event.data} label={`Data of event ${event.id}`} localTimes />
                            </details>
                          ) : (
                            <span className="muted">—</span>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </>
        ) : null}
      </section>
    </div>
  );
}
