/**
 * "Needs attention": the overview's first panel, as rules over the stats and the
 * per-type health. Thresholds are named here (and in the README) so they can be found
 * and argued about.
 */
import type { JobStats, JobTypeHealth, Queue, Schedule } from '../api/types';
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

export type AttentionKind = 'failing_type' | 'overdue_leases' | 'backlog' | 'paused_queue' | 'failed_schedule';

/** The queues and schedules the flow-control rules read; undefined while they load (or failed). */
export interface FlowState {
  queues?: readonly Queue[] | undefined;
  schedules?: readonly Schedule[] | undefined;
}

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
 * A paused queue holding queued jobs: no worker claims from it, so its backlog only grows
 * (each new job adds to it) until someone resumes it. A paused queue with nothing queued
 * is somebody's deliberate choice, not a problem yet.
 */
export function hasPausedBacklog(queue: Queue): boolean {
  return queue.paused && queue.counts.queued > 0;
}

/** A schedule whose most recent job failed (for good: a job being retried is still queued). */
export function lastRunFailed(schedule: Schedule): boolean {
  return schedule.last_job?.status === 'failed';
}

/**
 * What needs attention, most specific first: failing types (worst rate first), schedules
 * whose last job failed, running jobs whose lease expired, paused queues with a backlog
 * (largest first), then a backlog older than the threshold. Empty when all is fine.
 * `types`, `flow.queues` and `flow.schedules` are undefined while they load (their rules
 * then say nothing).
 */
export function attentionItems(
  stats: JobStats,
  types: readonly JobTypeHealth[] | undefined,
  now: number,
  flow: FlowState = {},
): AttentionItem[] {
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
  for (const schedule of (flow.schedules ?? []).filter(lastRunFailed)) {
    const job = schedule.last_job;
    if (!job) continue;
    items.push({
      kind: 'failed_schedule',
      key: `schedule:${schedule.name}`,
      title: `Schedule ${schedule.name}: its last job failed`,
      detail:
        `Job ${job.id.slice(0, 8)} (${schedule.target}), created ${formatDuration(now - Date.parse(job.created_at))} ago, ` +
        `failed after its last attempt.${schedule.paused ? ' The schedule is paused.' : ''}`,
      to: `/jobs/${job.id}`,
      linkLabel: `Job ${job.id.slice(0, 8)}`,
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
  const paused = (flow.queues ?? []).filter(hasPausedBacklog).sort((a, b) => b.counts.queued - a.counts.queued);
  for (const queue of paused) {
    const since = queue.paused_at ? `, paused ${formatDuration(now - Date.parse(queue.paused_at))} ago` : '';
    const oldest = queue.oldest_queued_at
      ? ` The oldest has waited ${formatDuration(now - Date.parse(queue.oldest_queued_at))}.`
      : '';
    items.push({
      kind: 'paused_queue',
      key: `queue:${queue.name}`,
      title: `Queue ${queue.name} is paused with ${queue.counts.queued.toLocaleString()} ${queue.counts.queued === 1 ? 'job' : 'jobs'} waiting`,
      detail: `No worker claims from it${since}, so every new job adds to its backlog until it is resumed.${oldest}`,
      to: '/queues',
      linkLabel: 'Queues',
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
