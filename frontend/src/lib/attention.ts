/**
 * "Needs attention": the overview's first panel, as rules over the stats and the
 * per-type health. Thresholds are named here (and in the README) so they can be found
 * and argued about.
 */
import type { JobStats, JobTypeHealth, LiveWorkerProcess, Queue, Schedule } from '../api/types';
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

export type AttentionKind =
  | 'no_worker'
  | 'unserved_queue'
  | 'failing_type'
  | 'overdue_leases'
  | 'backlog'
  | 'paused_queue'
  | 'failed_schedule';

/** The queues and schedules the flow-control rules read; undefined while they load (or failed). */
export interface FlowState {
  queues?: readonly Queue[] | undefined;
  schedules?: readonly Schedule[] | undefined;
  /** The live worker processes (`/workers/`); undefined while they load (or failed). */
  workers?: readonly LiveWorkerProcess[] | undefined;
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
  // Jobs scheduled for later wait for their time, not for the queue: no backlog yet.
  return queue.paused && queue.due > 0;
}

/** Whether a live process serves `queue` (`*` serves every queue). */
export function isServed(queue: string, workers: readonly LiveWorkerProcess[]): boolean {
  return workers.some((worker) => worker.queues.includes('*') || worker.queues.includes(queue));
}

/** "for 4m 25s" from a backlog's oldest due time, or nothing without one. */
function waitedFor(oldestDueAt: string | null, now: number): string {
  return oldestDueAt ? ` The oldest has waited ${formatDuration(now - Date.parse(oldestDueAt))}.` : '';
}

/** A schedule whose most recent job failed (for good: a job being retried is still queued). */
export function lastRunFailed(schedule: Schedule): boolean {
  return schedule.last_job?.status === 'failed';
}

/**
 * What needs attention, most specific first: no live worker (or queues with due jobs that
 * no live worker serves), failing types (worst rate first), schedules
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
  const workers = flow.workers;
  if (workers !== undefined && workers.length === 0) {
    // The facts say so at once: no process has checked in within its heartbeat interval.
    const due = stats.due;
    const running = stats.by_status.running;
    items.push({
      kind: 'no_worker',
      key: 'no-worker',
      title: 'No live worker',
      detail:
        'No worker process has checked in within its heartbeat interval: they are stopped, frozen or cut off ' +
        `from the database. ${plural(due, 'due job waits', 'due jobs wait')}` +
        `${running > 0 ? ` and ${plural(running, 'running job', 'running jobs')} will lose ${running === 1 ? 'its' : 'their'} lease` : ''}.` +
        waitedFor(stats.oldest_due_at, now),
      to: due > 0 || running === 0 ? '/jobs?status=queued&due=true' : '/jobs?status=running&lease_expired=true',
      linkLabel: due > 0 || running === 0 ? 'Due jobs' : 'Running jobs with an expired lease',
    });
  } else if (workers !== undefined) {
    const unserved = (flow.queues ?? [])
      .filter((queue) => !queue.paused && queue.due > 0 && !isServed(queue.name, workers))
      .sort((a, b) => b.due - a.due);
    for (const queue of unserved) {
      items.push({
        kind: 'unserved_queue',
        key: `unserved:${queue.name}`,
        title: `Queue ${queue.name} has ${plural(queue.due, 'due job', 'due jobs')} and no worker serving it`,
        detail: `No live worker process lists ${queue.name} among its queues, so nothing claims from it.${waitedFor(queue.oldest_due_at, now)}`,
        to: `/jobs?status=queued&due=true&queue=${encodeURIComponent(queue.name)}`,
        linkLabel: `Due jobs in ${queue.name}`,
      });
    }
  }
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
      detail:
        `${stats.overdue_running === 1 ? 'Its worker is' : 'Their workers are'} gone or frozen; ` +
        'a live worker\'s cleanup requeues each (or fails it on its last attempt).',
      to: '/jobs?status=running&lease_expired=true',
      linkLabel: 'Running jobs with an expired lease',
    });
  }
  const paused = (flow.queues ?? []).filter(hasPausedBacklog).sort((a, b) => b.due - a.due);
  for (const queue of paused) {
    const since = queue.paused_at ? `, paused ${formatDuration(now - Date.parse(queue.paused_at))} ago` : '';
    const scheduled = queue.scheduled > 0 ? ` (and ${queue.scheduled.toLocaleString()} scheduled for later)` : '';
    items.push({
      kind: 'paused_queue',
      key: `queue:${queue.name}`,
      title: `Queue ${queue.name} is paused with ${plural(queue.due, 'due job', 'due jobs')} waiting${scheduled}`,
      detail: `No worker claims from it${since}, so every new job adds to its backlog until it is resumed.${waitedFor(queue.oldest_due_at, now)}`,
      to: `/jobs?status=queued&queue=${encodeURIComponent(queue.name)}`,
      linkLabel: `Queued jobs in ${queue.name}`,
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
        to: '/jobs?status=queued&due=true',
        linkLabel: 'Due jobs',
      });
    }
  }
  return items;
}
