import { JOB_EVENT_TYPES, JOB_STATUSES, type JobEventType, type JobStatus } from '../api/types';

export function parseStatus(raw: string | null): JobStatus | undefined {
  return JOB_STATUSES.find((s) => s === raw);
}

export function parseEventType(raw: string | null): JobEventType | undefined {
  return JOB_EVENT_TYPES.find((t) => t === raw);
}

/** Integer in [min, max], or `fallback` when missing or malformed. */
export function parseIntParam(raw: string | null, fallback: number, min: number, max: number): number {
  if (raw === null || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n)) return fallback;
  return Math.min(max, Math.max(min, n));
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_RE.test(value.trim());
}

/**
 * What a job-id filter of the API takes: a full id, or a prefix of at least 8 hex
 * characters (dashes ignored), as the lists show ids. The API says when a prefix is
 * ambiguous.
 */
export function isJobIdOrPrefix(value: string): boolean {
  const hex = value.trim().replace(/-/g, '');
  return /^[0-9a-f]{8,32}$/i.test(hex);
}
