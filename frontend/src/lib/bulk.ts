/**
 * The job list's bulk actions as plain data: which jobs an action would touch, how many,
 * the body to send, and how to say what happened. The page renders these; the rules
 * mirror the API's (retry takes failed/cancelled jobs, cancel takes waiting/queued/running ones,
 * an empty selection is refused).
 */
import {
  CANCELLABLE_STATUSES,
  RETRYABLE_STATUSES,
  type CancelOutcome,
  type Job,
  type JobSelection,
  type JobStatus,
  type RetryOutcome,
} from '../api/types';

export type BulkAction = 'retry' | 'cancel';
export type BulkScope = 'filter' | 'selection';

export const ACTION_STATUSES: Record<BulkAction, readonly JobStatus[]> = {
  retry: RETRYABLE_STATUSES,
  cancel: CANCELLABLE_STATUSES,
};

const VERB: Record<BulkAction, string> = { retry: 'Retry', cancel: 'Cancel' };

/** The job list's filters as the URL holds them (blank ones left out). */
export interface ListFilters {
  status?: JobStatus | undefined;
  type?: string | undefined;
  queue?: string | undefined;
}

export function hasFilter(filters: ListFilters): boolean {
  return filters.status !== undefined || Boolean(filters.type) || Boolean(filters.queue);
}

/** The filters as a bulk request body: the same semantics as the list (API side). */
export function filterSelection(filters: ListFilters): JobSelection {
  return {
    ...(filters.status ? { status: filters.status } : {}),
    ...(filters.type ? { type: filters.type } : {}),
    ...(filters.queue ? { queue: filters.queue } : {}),
  };
}

/** "status failed · type contains “demo” · queue emails" */
export function describeFilters(filters: ListFilters): string {
  return [
    filters.status && `status ${filters.status}`,
    filters.type && `type contains “${filters.type}”`,
    filters.queue && `queue ${filters.queue}`,
  ]
    .filter(Boolean)
    .join(' · ');
}

/**
 * The statuses an action on the filtered list reaches: with a status filter, that status
 * if the action takes it (else none); without one, every status the action takes.
 */
export function actionStatuses(action: BulkAction, status: JobStatus | undefined): readonly JobStatus[] {
  const takes = ACTION_STATUSES[action];
  if (status === undefined) return takes;
  return takes.includes(status) ? [status] : [];
}

/** One bulk button: what it says, whether it can run and what it would send. */
export interface BulkPlan {
  action: BulkAction;
  scope: BulkScope;
  statuses: readonly JobStatus[];
  /** Jobs it would change as last seen; undefined while the counts load. */
  count: number | undefined;
  /** The request body, or null when the button is disabled. */
  selection: JobSelection | null;
  /** Why it is disabled, for the button's description; null when it is enabled. */
  disabledReason: string | null;
  /** For the selection scope: the ids it would send. */
  ids: string[];
}

export const EMPTY_FILTER_REASON =
  'Filter by status, type or queue first: the API refuses an action on every job at once.';

/**
 * An action on every job matching the filters. `counts` has a count per status in
 * `actionStatuses` (the list's count when the status is filtered), or is undefined while
 * loading; the count is what the API would change if nothing moves meanwhile.
 */
export function planForFilters(
  action: BulkAction,
  filters: ListFilters,
  counts: Partial<Record<JobStatus, number>> | undefined,
): BulkPlan {
  const statuses = actionStatuses(action, filters.status);
  const base = { action, scope: 'filter' as const, statuses, ids: [] };
  if (!hasFilter(filters)) return { ...base, count: undefined, selection: null, disabledReason: EMPTY_FILTER_REASON };
  const known = counts && statuses.every((s) => counts[s] !== undefined);
  const count = known ? statuses.reduce((n, s) => n + (counts[s] ?? 0), 0) : undefined;
  if (count === undefined) return { ...base, count, selection: null, disabledReason: 'Counting the matching jobs…' };
  if (count === 0) return { ...base, count, selection: null, disabledReason: `No ${either(statuses)} job matches.` };
  return { ...base, count, selection: filterSelection(filters), disabledReason: null };
}

/** An action on the selected rows that it applies to, by id. */
export function planForSelection(
  action: BulkAction,
  rows: readonly Job[],
  selected: ReadonlySet<string>,
  idsMax: number,
): BulkPlan {
  const statuses = ACTION_STATUSES[action];
  const ids = rows.filter((job) => selected.has(job.id) && statuses.includes(job.status)).map((job) => job.id);
  const base = { action, scope: 'selection' as const, statuses, ids, count: ids.length };
  if (ids.length === 0)
    return { ...base, selection: null, disabledReason: `None of the selected jobs is ${either(statuses)}.` };
  if (ids.length > idsMax)
    return { ...base, selection: null, disabledReason: `One action names at most ${idsMax} ids; select fewer.` };
  return { ...base, selection: { ids }, disabledReason: null };
}

/** "failed or cancelled", "waiting, queued or running". */
export function either(statuses: readonly JobStatus[]): string {
  return statuses.length < 2 ? statuses.join('') : `${statuses.slice(0, -1).join(', ')} or ${statuses.at(-1)}`;
}

/** "Retry 3 failed/cancelled", or "Retry failed/cancelled" while there is no count. */
export function planLabel(plan: BulkPlan): string {
  const what = plan.statuses.join('/');
  return plan.count === undefined ? `${VERB[plan.action]} ${what}` : `${VERB[plan.action]} ${plan.count} ${what}`;
}

/** "1 job", "3 jobs", "1 running job". */
export function jobs(n: number, kind = ''): string {
  const noun = n === 1 ? 'job' : 'jobs';
  return kind ? `${n} ${kind} ${noun}` : `${n} ${noun}`;
}

export type BulkOutcome = { action: 'retry'; outcome: RetryOutcome } | { action: 'cancel'; outcome: CancelOutcome };

/** What a finished bulk action did, in the API's numbers. */
export function describeOutcome(result: BulkOutcome, heartbeatSeconds?: number): string {
  if (result.action === 'retry') {
    const { retried, held } = result.outcome;
    const done =
      retried === 0 && held === 0
        ? 'No job was retried: none matched any more.'
        : retried === 0
          ? 'No job was retried.'
          : `Retried ${jobs(retried)}: queued again.`;
    if (held === 0) return done;
    const holds = held === 1 ? 'another job holds its unique key' : 'other jobs hold their unique keys';
    return `${done} Left ${jobs(held)} alone: ${holds} (retry once those finish).`;
  }
  const { cancelled, cancel_requested: requested } = result.outcome;
  if (cancelled === 0 && requested === 0) return 'No job was cancelled: none matched any more.';
  const parts: string[] = [];
  if (cancelled > 0) parts.push(`Cancelled ${jobs(cancelled, 'waiting or queued')}.`);
  if (requested > 0) {
    const when = heartbeatSeconds === undefined ? 'a heartbeat' : `a heartbeat (${heartbeatSeconds} s)`;
    parts.push(
      `Asked ${jobs(requested, 'running')} to stop: ${requested === 1 ? 'it ends' : 'they end'} as cancelled ` +
        `within ${when}, when the handler next checks in.`,
    );
  }
  return parts.join(' ');
}
