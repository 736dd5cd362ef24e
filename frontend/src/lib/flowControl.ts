/**
 * Pure helpers of the Queues and Schedules pages: limits in words, the limits form and
 * its request body, and a schedule's cadence. The API stays the authority on what it
 * accepts (its 400 names the field); the form checks what it can before sending.
 */
import type { Queue, QueueLimitsInput, Schedule } from '../api/types';
import { splitFieldErrors } from './fieldErrors';
import { formatDuration } from './time';

/** Saturation at or above this share of the concurrency limit is shown as a warning. */
export const SATURATION_WARNING = 0.8;

/** "3 of 5 running (60 %)", or "3 running, no limit". */
export function describeConcurrency(queue: Queue): string {
  if (queue.concurrency_limit === null) return `${queue.running} running, no limit`;
  const share = queue.saturation ?? queue.running / queue.concurrency_limit;
  return `${queue.running} of ${queue.concurrency_limit} running (${Math.round(share * 100)} %)`;
}

/** The tone of the saturation meter: full is danger, near full is a warning. */
export function saturationTone(saturation: number | null): 'neutral' | 'warning' | 'danger' {
  if (saturation === null) return 'neutral';
  if (saturation >= 1) return 'danger';
  return saturation >= SATURATION_WARNING ? 'warning' : 'neutral';
}

/** "1 s", "30 s", "5 min", "2 h", "1 d"; a count of seconds that is not a whole unit stays in seconds. */
export function formatSeconds(seconds: number): string {
  if (seconds >= 86_400 && seconds % 86_400 === 0) return `${seconds / 86_400} d`;
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** "10 per 1 s", or "no limit". */
export function describeRateLimit(queue: Pick<Queue, 'rate_limit' | 'rate_period_seconds'>): string {
  if (queue.rate_limit === null) return 'no limit';
  return `${queue.rate_limit} per ${formatSeconds(queue.rate_period_seconds ?? 1)}`;
}

/** The limits form: text as typed; blank means "no limit". */
export interface LimitsFormValues {
  concurrencyLimit: string;
  rateLimit: string;
  ratePeriodSeconds: string;
}

export const LIMIT_FIELDS = ['concurrency_limit', 'rate_limit', 'rate_period_seconds'] as const;
export type LimitField = (typeof LIMIT_FIELDS)[number];
export type LimitErrors = Partial<Record<LimitField, string[]>>;

export function limitsFormValues(queue: Queue): LimitsFormValues {
  return {
    concurrencyLimit: queue.concurrency_limit === null ? '' : String(queue.concurrency_limit),
    rateLimit: queue.rate_limit === null ? '' : String(queue.rate_limit),
    ratePeriodSeconds: String(queue.rate_period_seconds ?? 1),
  };
}

/** A whole number ≥ 1, null for blank, or an error message. */
function positiveInteger(raw: string, what: string): { value: number | null } | { error: string } {
  const trimmed = raw.trim();
  if (trimmed === '') return { value: null };
  if (!/^\d+$/.test(trimmed) || Number(trimmed) < 1) return { error: `${what} must be a whole number of 1 or more.` };
  return { value: Number(trimmed) };
}

/**
 * The PATCH body for the form, or per-field errors. Blank removes a limit (null); the
 * period goes with a rate limit (required then) and is left out without one.
 */
export function buildLimitsRequest(
  values: LimitsFormValues,
): { ok: true; input: QueueLimitsInput } | { ok: false; errors: LimitErrors } {
  const errors: LimitErrors = {};
  const concurrency = positiveInteger(values.concurrencyLimit, 'The concurrency limit');
  if ('error' in concurrency) errors.concurrency_limit = [concurrency.error];
  const rate = positiveInteger(values.rateLimit, 'The rate limit');
  if ('error' in rate) errors.rate_limit = [rate.error];
  const period = positiveInteger(values.ratePeriodSeconds, 'The period');
  if ('error' in period) errors.rate_period_seconds = [period.error];
  else if ('value' in rate && rate.value !== null && period.value === null)
    errors.rate_period_seconds = ['A rate limit needs a period.'];
  if (Object.keys(errors).length > 0 || 'error' in concurrency || 'error' in rate || 'error' in period)
    return { ok: false, errors };
  const input: QueueLimitsInput = { concurrency_limit: concurrency.value, rate_limit: rate.value };
  if (rate.value !== null) input.rate_period_seconds = period.value;
  return { ok: true, input };
}

/** A 400's field errors split for the limits form: its fields under their inputs, the rest at the top. */
export function splitLimitErrors(fieldErrors: Record<string, string[]>): { fields: LimitErrors; general: string[] } {
  return splitFieldErrors(fieldErrors, LIMIT_FIELDS);
}

/** "every 30 s", "every 5 min", or the cron expression as written. */
export function describeCadence(schedule: Pick<Schedule, 'cron' | 'interval_seconds'>): string {
  if (schedule.cron !== null) return schedule.cron;
  if (schedule.interval_seconds !== null) return `every ${formatSeconds(schedule.interval_seconds)}`;
  return '—';
}

/**
 * The queue's backlog age: how long its oldest due job has waited since its available_at
 * (the overview's definition), or null when nothing is due. Jobs scheduled for later are
 * no backlog, however long ago they were created.
 */
export function oldestWait(queue: Pick<Queue, 'oldest_due_at'>, now: number): string | null {
  if (!queue.oldest_due_at) return null;
  return formatDuration(now - Date.parse(queue.oldest_due_at));
}
