/**
 * "Needs attention": the overview's first panel, as rules over the stats and the
 * per-type health. Thresholds are named here (and in the README) so they can be found
 * and argued about.
 */
import type { JobStats, JobTypeHealth } from '../api/types';
import { failuresOf, formatRate } from './jobTypes';
import { formatDuration } from './time';

/** The window the overview's per-type health covers. */
export const ATTENTION_WINDOW_MINUTES = 15;
/** A type is failing when at least this share of its ended attempts failed… */
export const FAILING_TYPE_RATE = 0.2;
/** …over at least this many attempts (one unlucky attempt is not a trend). */
export const FAILING_TYPE_MIN_ATTEMPTS = 3;
/** The backlog is growing when the oldest due job has waited longer than this. */
export const BACKLOG_AGE_THRESHOLD_MS = 5 * 60_000;

export type AttentionKind = 'failing_type' | 'overdue_leases' | 'backlog';

export interface AttentionItem {
  kind: AttentionKind;
  /** Stable React key. */
  key: string;
  title: string;
  detail: string;
  /** Where to look next. */
  to: string;
  linkLabel: string;
}

export function isFailing(type: JobTypeHealth): boolean {
  return (
    type.failure_rate !== null &&
    type.attempts >= FAILING_TYPE_MIN_ATTEMPTS &&
    type.failure_rate >= FAILING_TYPE_RATE
  );
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * What needs attention, most specific first: failing types (worst rate first), running
 * jobs whose lease expired, then a backlog older than the threshold. Empty when all is
 * fine. `types` is undefined while it loads (its rules then say nothing).
 */
export function attentionItems(stats: JobStats, types: readonly JobTypeHealth[] | undefined, now: number): AttentionItem[] {
  const items: AttentionItem[] = [];
  const failing = (types ?? []).filter(isFailing).sort((a, b) => (b.failure_rate ?? 0) - (a.failure_rate ?? 0));
  for (const type of failing) {
    const error = type.last_error ? ` Last error: ${type.last_error.message}` : '';
    items.push({
      kind: 'failing_type',
      key: `type:${type.type}`,
      title: `${type.type} is failing: ${formatRate(type.failure_rate)} of attempts`,
      detail:
        `${failuresOf(type)} of ${plural(type.attempts, 'attempt', 'attempts')} failed in the last ` +
        `${ATTENTION_WINDOW_MINUTES} minutes.${error}`,
      to: `/jobs?type=${encodeURIComponent(type.type)}`,
      linkLabel: `${type.type} jobs`,
    });
  }
  if (stats.overdue_running > 0) {
    items.push({
      kind: 'overdue_leases',
      key: 'overdue',
      title: `${plural(stats.overdue_running, 'running job has', 'running jobs have')} an expired lease`,
      detail: 'Its worker is gone or stuck; cleanup requeues the job (or fails it on its last attempt).',
      to: '/workers',
      linkLabel: 'Workers',
    });
  }
  if (stats.oldest_due_at) {
    const age = now - Date.parse(stats.oldest_due_at);
    if (age > BACKLOG_AGE_THRESHOLD_MS) {
      items.push({
        kind: 'backlog',
        key: 'backlog',
        title: `The backlog is growing: the oldest due job has waited ${formatDuration(age)}`,
        detail:
          `Over the ${formatDuration(BACKLOG_AGE_THRESHOLD_MS)} threshold: the workers are not keeping up, ` +
          `or none serves its queue${stats.queues.length > 0 ? ` (queues with jobs: ${stats.queues.join(', ')})` : ''}.`,
        to: '/jobs?status=queued',
        linkLabel: 'Queued jobs',
      });
    }
  }
  return items;
}
