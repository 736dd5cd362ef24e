import { useEffect, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useActiveQueues, useBulkCancel, useBulkRetry, useConfig, useJobCounts, useJobs, useQueues } from '../api/hooks';
import { CANCELLABLE_STATUSES, JOB_STATUSES, RETRYABLE_STATUSES, type JobStatus } from '../api/types';
import { BulkActions, BulkConfirm } from '../components/BulkActions';
import { JobTable } from '../components/JobTable';
import { Pagination } from '../components/Pagination';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { useDebounced } from '../hooks/useDebounced';
import {
  describeFilters,
  describeOutcome,
  hasFilter,
  jobs as jobCount,
  planForFilters,
  planForSelection,
  type BulkAction,
  type BulkPlan,
  type ListFilters,
} from '../lib/bulk';
import { errorMessage } from '../lib/errors';
import { pageSizeChoices, parsePageSize } from '../lib/paging';
import { formatOrdering, nextOrdering, parseOrdering } from '../lib/ordering';
import { parseIntParam, parseStatus } from '../lib/params';
import { queueChoices, queueNameProblem } from '../lib/queue';

const ACTIONS: readonly BulkAction[] = ['retry', 'cancel'];
// Every status a bulk action takes: counted one by one when no status is filtered.
const ACTIONABLE_STATUSES: readonly JobStatus[] = [...RETRYABLE_STATUSES, ...CANCELLABLE_STATUSES];
const NOTHING_SELECTED: ReadonlySet<string> = new Set();

/** The list's refinements of a status: queued jobs due or scheduled, running jobs with an expired lease. */
type When = 'due' | 'scheduled' | 'lease_expired';
const WHENS: readonly When[] = ['due', 'scheduled', 'lease_expired'];
const WHEN_STATUS: Record<When, JobStatus> = { due: 'queued', scheduled: 'queued', lease_expired: 'running' };
const WHEN_LABELS: Record<When, string> = {
  due: 'queued, due now',
  scheduled: 'queued, scheduled for later',
  lease_expired: 'running, lease expired',
};

function parseWhen(due: string | null, leaseExpired: string | null): When | undefined {
  if (leaseExpired === 'true') return 'lease_expired';
  if (due === 'true') return 'due';
  if (due === 'false') return 'scheduled';
  return undefined;
}

/** A text filter of the list; `code` for exact values (keys, metadata): monospace, not spell-checked. */
function SearchFilter({
  label,
  value,
  placeholder,
  code = false,
  onChange,
}: {
  label: string;
  value: string;
  placeholder: string;
  code?: boolean;
  onChange: (value: string) => void;
}) {
  return (
    <label className="field field--inline">
      <span>{label}</span>
      <input
        type="search"
        className={code ? 'mono' : undefined}
        value={value}
        placeholder={placeholder}
        spellCheck={code ? false : undefined}
        onChange={(e) => onChange(e.target.value)}
      />
    </label>
  );
}

export function JobsPage() {
  const [params, setParams] = useSearchParams();
  const status = parseStatus(params.get('status'));
  const type = params.get('type') ?? '';
  const queue = params.get('queue') ?? '';
  const error = params.get('error') ?? '';
  const key = params.get('key') ?? '';
  const metadata = params.get('metadata') ?? '';
  const when = parseWhen(params.get('due'), params.get('lease_expired'));
  const sort = parseOrdering(params.get('ordering'));
  const ordering = sort && formatOrdering(sort);
  const config = useConfig().data;
  const pageLimits = config?.pagination.jobs;
  // Without `limit` in the URL the API applies its default, which /config/ tells the pager.
  const limit = parsePageSize(params.get('limit'), pageLimits?.max_limit);
  const pageSize = limit ?? pageLimits?.default_limit;
  const offset = parseIntParam(params.get('offset'), 0, 0, Number.MAX_SAFE_INTEGER);
  const queueMax = config?.limits.queue_name_max_length ?? Number.POSITIVE_INFINITY;

  const [typeInput, setTypeInput] = useState(type);
  const debouncedType = useDebounced(typeInput, 300);
  const [queueInput, setQueueInput] = useState(queue);
  const debouncedQueue = useDebounced(queueInput.trim(), 300);
  const queueProblem = queueInput.trim() === '' ? null : queueNameProblem(queueInput.trim(), queueMax);
  const [errorInput, setErrorInput] = useState(error);
  const debouncedError = useDebounced(errorInput.trim(), 300);
  const [keyInput, setKeyInput] = useState(key);
  const debouncedKey = useDebounced(keyInput.trim(), 300);
  const [metadataInput, setMetadataInput] = useState(metadata);
  const debouncedMetadata = useDebounced(metadataInput.trim(), 300);

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
      // Pushed, not replaced: Back undoes a filter, a sort or a page change.
      { replace: false },
    );
  }

  useEffect(() => {
    if (debouncedType.trim() !== type) update({ type: debouncedType.trim(), offset: 0 });
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only react to the debounced input
  }, [debouncedType]);

  useEffect(() => {
    // A name the API would refuse (400) stays in the input with its error, not in the URL.
    const valid = debouncedQueue === '' || queueNameProblem(debouncedQueue, queueMax) === null;
    if (valid && debouncedQueue !== queue) update({ queue: debouncedQueue, offset: 0 });
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only react to the debounced input
  }, [debouncedQueue]);

  useEffect(() => {
    if (debouncedError !== error) update({ error: debouncedError, offset: 0 });
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only react to the debounced input
  }, [debouncedError]);

  useEffect(() => {
    if (debouncedKey !== key) update({ key: debouncedKey, offset: 0 });
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only react to the debounced input
  }, [debouncedKey]);

  useEffect(() => {
    if (debouncedMetadata !== metadata) update({ metadata: debouncedMetadata, offset: 0 });
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only react to the debounced input
  }, [debouncedMetadata]);

  // Back undoes a filter: the URL holds the filters, so the history does; the inputs
  // follow the URL when it changes under them.
  const urlFilters = JSON.stringify([type, queue, error, key, metadata]);
  const [shownFilters, setShownFilters] = useState(urlFilters);
  if (shownFilters !== urlFilters) {
    setShownFilters(urlFilters);
    const follow = (value: string) => (input: string) => (input.trim() === value ? input : value);
    setTypeInput(follow(type));
    setQueueInput(follow(queue));
    setErrorInput(follow(error));
    setKeyInput(follow(key));
    setMetadataInput(follow(metadata));
  }

  const filters: ListFilters = { status, type: type || undefined, queue: queue || undefined };
  // Filters the bulk actions cannot take: with any of them the actions act on selected rows only.
  const listOnly = Boolean(error || key || metadata || when);
  const filtered = hasFilter(filters) || listOnly;
  const jobs = useJobs({
    status: when ? WHEN_STATUS[when] : status,
    type: type || undefined,
    queue: queue || undefined,
    error: error || undefined,
    key: key || undefined,
    metadata: metadata || undefined,
    due: when === 'due' ? true : when === 'scheduled' ? false : undefined,
    leaseExpired: when === 'lease_expired' ? true : undefined,
    limit,
    offset,
    ordering,
  });
  const rows = jobs.data?.results ?? [];

  // Selected rows belong to one view: another filter or page starts with none.
  const view = JSON.stringify([status, type, queue, error, key, metadata, when, limit, offset, ordering]);
  const [selection, setSelection] = useState<{ view: string; ids: ReadonlySet<string> }>({
    view,
    ids: NOTHING_SELECTED,
  });
  const selected = selection.view === view ? selection.ids : NOTHING_SELECTED;
  const selectedCount = rows.filter((job) => selected.has(job.id)).length;
  function select(ids: readonly string[], checked: boolean) {
    const next = new Set(selected);
    for (const id of ids) {
      if (checked) next.add(id);
      else next.delete(id);
    }
    setSelection({ view, ids: next });
  }

  // How many jobs an action on the filters would change: the list's own count when a
  // status is filtered, else one count per status the actions take.
  const perStatus = useJobCounts(filters, status === undefined ? ACTIONABLE_STATUSES : [], filtered && !status);
  const listCount = jobs.data && !jobs.isPlaceholderData ? jobs.data.count : undefined;
  const counts = status === undefined ? perStatus.counts : listCount === undefined ? undefined : { [status]: listCount };

  const plans = ACTIONS.map((action) =>
    selectedCount > 0
      ? planForSelection(action, rows, selected, config?.limits.bulk_ids_max ?? Number.POSITIVE_INFINITY)
      : planForFilters(action, filters, counts),
  ).filter((plan) => plan.statuses.length > 0 && (selectedCount > 0 || !listOnly));

  const retry = useBulkRetry();
  const cancel = useBulkCancel();
  const [confirming, setConfirming] = useState<BulkPlan | null>(null);
  const [result, setResult] = useState<string | null>(null);
  const running = confirming?.action === 'cancel' ? cancel : retry;
  const heartbeat = config ? Number(config.worker.heartbeat_seconds.toFixed(1)) : undefined;

  function start(plan: BulkPlan) {
    retry.reset();
    cancel.reset();
    setResult(null);
    setConfirming(plan);
  }

  function confirm() {
    const plan = confirming;
    if (!plan?.selection) return;
    const done = (text: string) => {
      setResult(text);
      setConfirming(null);
      if (plan.scope === 'selection') setSelection({ view, ids: NOTHING_SELECTED });
    };
    if (plan.action === 'retry')
      retry.mutate(plan.selection, { onSuccess: (outcome) => done(describeOutcome({ action: 'retry', outcome })) });
    else
      cancel.mutate(plan.selection, {
        onSuccess: (outcome) => done(describeOutcome({ action: 'cancel', outcome }, heartbeat)),
      });
  }

  const activeQueues = useActiveQueues().data;
  // Every known queue (with jobs of any status, limits or a pause), not only those with
  // queued jobs: a queue whose jobs all failed is the one an operator looks for.
  const knownQueues = useQueues().data?.map((q) => q.name);
  const choices = queueChoices(config?.worker.queues ?? [], [...(activeQueues ?? []), ...(knownQueues ?? [])], queue);
  const caption =
    `Jobs${when ? ` ${WHEN_LABELS[when]}` : status ? ` with status ${status}` : ''}` +
    `${type ? ` whose type contains “${type}”` : ''}${queue ? ` in queue ${queue}` : ''}` +
    `${error ? ` whose error contains “${error}”` : ''}${key ? ` with key ${key}` : ''}` +
    `${metadata ? ` with metadata ${metadata}` : ''}`;

  return (
    <div className="page">
      <h1>Jobs</h1>
      <form className="filters" role="search" aria-label="Filter jobs" onSubmit={(e) => e.preventDefault()}>
        <label className="field field--inline">
          <span>Status</span>
          <select
            value={status ?? ''}
            // A state belongs to one status: another status drops it.
            onChange={(e) => update({ status: e.target.value, due: undefined, lease_expired: undefined, offset: 0 })}
          >
            <option value="">All statuses</option>
            {JOB_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label className="field field--inline">
          <span>State</span>
          <select
            value={when ?? ''}
            onChange={(e) => {
              const next = e.target.value as When | '';
              update({
                due: next === 'due' ? 'true' : next === 'scheduled' ? 'false' : undefined,
                lease_expired: next === 'lease_expired' ? 'true' : undefined,
                status: next ? WHEN_STATUS[next] : status,
                offset: 0,
              });
            }}
          >
            <option value="">Any</option>
            {WHENS.map((w) => (
              <option key={w} value={w}>
                {WHEN_LABELS[w]}
              </option>
            ))}
          </select>
        </label>
        <SearchFilter label="Type contains" value={typeInput} placeholder="e.g. demo" onChange={setTypeInput} />
        <div className="field field--inline">
          <label htmlFor="job-queue-filter">Queue</label>
          <input
            id="job-queue-filter"
            type="search"
            className="mono"
            autoComplete="off"
            spellCheck={false}
            value={queueInput}
            placeholder="all queues"
            list="job-queue-filter-names"
            aria-invalid={queueProblem !== null}
            aria-describedby={queueProblem ? 'job-queue-filter-error' : undefined}
            onChange={(e) => setQueueInput(e.target.value)}
          />
          {/* One field: type any queue's exact name, or pick one the dashboard knows of. */}
          <datalist id="job-queue-filter-names">
            {choices.map((q) => (
              <option key={q} value={q} />
            ))}
          </datalist>
          {queueProblem && (
            <span id="job-queue-filter-error" className="field__errors">
              {queueProblem}
            </span>
          )}
        </div>
        <SearchFilter label="Error contains" value={errorInput} placeholder="e.g. timeout" onChange={setErrorInput} />
        <SearchFilter
          label="Key"
          code
          value={keyInput}
          placeholder="idempotency, unique or concurrency"
          onChange={setKeyInput}
        />
        <SearchFilter
          label="Metadata"
          code
          value={metadataInput}
          placeholder="name=value"
          onChange={setMetadataInput}
        />
        {filtered && (
          <button
            type="button"
            className="button button--link"
            onClick={() => {
              setTypeInput('');
              setQueueInput('');
              setErrorInput('');
              setKeyInput('');
              setMetadataInput('');
              update({
                status: undefined,
                type: undefined,
                queue: undefined,
                error: undefined,
                key: undefined,
                metadata: undefined,
                due: undefined,
                lease_expired: undefined,
                offset: 0,
              });
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
            <BulkActions
              plans={plans}
              selectedCount={selectedCount}
              matching={
                filtered
                  ? `All ${jobCount(jobs.data.count)} matching the filters:`
                  : `All ${jobCount(jobs.data.count)}:`
              }
              onStart={start}
              onClearSelection={() => setSelection({ view, ids: NOTHING_SELECTED })}
              result={result}
              onDismissResult={() => setResult(null)}
            />
            {rows.length === 0 ? (
              <Empty>
                {filtered ? 'No jobs match these filters.' : 'No jobs yet.'} <Link to="/create">Create one</Link>.
              </Empty>
            ) : (
              <JobTable
                jobs={rows}
                showErrors
                caption={caption}
                busy={jobs.isPlaceholderData}
                sort={sort}
                onSort={(field) => update({ ordering: formatOrdering(nextOrdering(sort, field)), offset: 0 })}
                selected={selected}
                onSelect={(id, checked) => select([id], checked)}
                onSelectAll={(checked) =>
                  select(
                    rows.map((job) => job.id),
                    checked,
                  )
                }
              />
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

      <BulkConfirm
        plan={confirming}
        filters={describeFilters(filters)}
        heartbeatSeconds={heartbeat}
        pending={running.isPending}
        error={running.isError ? errorMessage(running.error) : null}
        onConfirm={confirm}
        onDismiss={() => setConfirming(null)}
      />
    </div>
  );
}
