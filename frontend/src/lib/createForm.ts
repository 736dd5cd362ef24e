import type { ApiConfig, JobCreateInput } from '../api/types';
import { splitFieldErrors } from './fieldErrors';
import { checkJsonObject } from './json';
import { queueNameProblem } from './queue';

export type Schedule = 'now' | 'delay' | 'at';

export interface CreateFormValues {
  type: string;
  payload: string;
  priority: string;
  schedule: Schedule;
  delaySeconds: string;
  availableAt: string; // value of <input type="datetime-local">, local time
  maxAttempts: string;
  idempotencyKey: string;
  /** Blank: the API's default queue. */
  queue: string;
  /** Blank: the job type's default timeout, else the worker's. */
  timeoutSeconds: string;
  /** Blank: none. At most one queued or running job has it. */
  uniqueKey: string;
  /** Blank: none. Limits how many jobs with it run at once. */
  concurrencyKey: string;
}

export const CREATE_FIELDS = [
  'type',
  'payload',
  'priority',
  'available_at',
  'max_attempts',
  'idempotency_key',
  'queue',
  'timeout_seconds',
  'unique_key',
  'concurrency_key',
] as const;
export type CreateField = (typeof CREATE_FIELDS)[number];
export type FormErrors = Partial<Record<CreateField, string[]>>;

export type BuildResult = { ok: true; input: JobCreateInput } | { ok: false; errors: FormErrors };

export const DEFAULT_PRIORITY = 50;
/** The longest unique or concurrency key the API stores (its columns' length). */
export const KEY_MAX_LENGTH = 255;

export function initialValues(config: ApiConfig | undefined): CreateFormValues {
  const first = config?.job_types[0];
  return {
    type: first?.type ?? '',
    payload: first ? JSON.stringify(first.example_payload ?? {}, null, 2) : '{}',
    priority: String(DEFAULT_PRIORITY),
    schedule: 'now',
    delaySeconds: '10',
    availableAt: '',
    maxAttempts: String(config?.worker.max_attempts_default ?? 3),
    idempotencyKey: '',
    queue: '',
    timeoutSeconds: '',
    uniqueKey: '',
    concurrencyKey: '',
  };
}

function parseInteger(raw: string): number | null {
  const trimmed = raw.trim();
  if (!/^-?\d+$/.test(trimmed)) return null;
  return Number(trimmed);
}

/**
 * Validate the create form against the limits the API publishes and build the
 * request body. `now` (ms) is used to turn a delay into `available_at`.
 */
export function buildCreateRequest(values: CreateFormValues, limits: ApiConfig['limits'], now: number): BuildResult {
  const errors: FormErrors = {};
  const add = (field: CreateField, message: string) => {
    (errors[field] ??= []).push(message);
  };

  const type = values.type.trim();
  if (type === '') add('type', 'Choose a job type.');

  const payload = checkJsonObject(values.payload, limits.max_body_bytes);
  if (!payload.ok) add('payload', payload.error);

  const priority = parseInteger(values.priority);
  if (priority === null) add('priority', 'Priority must be a whole number.');
  else if (priority < limits.priority_min || priority > limits.priority_max)
    add('priority', `Priority must be between ${limits.priority_min} and ${limits.priority_max}.`);

  const maxAttempts = parseInteger(values.maxAttempts);
  if (maxAttempts === null) add('max_attempts', 'Max attempts must be a whole number.');
  else if (maxAttempts < 1 || maxAttempts > limits.max_attempts_max)
    add('max_attempts', `Max attempts must be between 1 and ${limits.max_attempts_max}.`);

  let availableAt: string | null = null;
  if (values.schedule === 'delay') {
    const delay = Number(values.delaySeconds.trim());
    if (values.delaySeconds.trim() === '' || !Number.isFinite(delay) || delay < 0)
      add('available_at', 'Delay must be zero or more seconds.');
    else availableAt = new Date(now + delay * 1000).toISOString();
  } else if (values.schedule === 'at') {
    const at = new Date(values.availableAt);
    if (values.availableAt.trim() === '' || Number.isNaN(at.getTime())) add('available_at', 'Pick a date and time.');
    else availableAt = at.toISOString();
  }

  const key = values.idempotencyKey.trim();
  if (key.length > limits.idempotency_key_max_length)
    add('idempotency_key', `At most ${limits.idempotency_key_max_length} characters.`);

  // The API's columns hold 255 characters, like the idempotency key's.
  const uniqueKey = values.uniqueKey.trim();
  if (uniqueKey.length > KEY_MAX_LENGTH) add('unique_key', `At most ${KEY_MAX_LENGTH} characters.`);
  const concurrencyKey = values.concurrencyKey.trim();
  if (concurrencyKey.length > KEY_MAX_LENGTH) add('concurrency_key', `At most ${KEY_MAX_LENGTH} characters.`);

  const queue = values.queue.trim();
  const queueProblem = queue === '' ? null : queueNameProblem(queue, limits.queue_name_max_length);
  if (queueProblem) add('queue', queueProblem);

  let timeoutSeconds: number | null = null;
  if (values.timeoutSeconds.trim() !== '') {
    timeoutSeconds = parseInteger(values.timeoutSeconds);
    if (timeoutSeconds === null) add('timeout_seconds', 'Timeout must be a whole number of seconds.');
    else if (timeoutSeconds < 1 || timeoutSeconds > limits.timeout_seconds_max)
      add('timeout_seconds', `Timeout must be between 1 and ${limits.timeout_seconds_max} seconds.`);
  }

  if (Object.keys(errors).length > 0 || !payload.ok || priority === null || maxAttempts === null) {
    return { ok: false, errors };
  }
  return {
    ok: true,
    input: {
      type,
      payload: payload.value,
      priority,
      available_at: availableAt,
      max_attempts: maxAttempts,
      idempotency_key: key === '' ? null : key,
      // The API defaults the queue when it is omitted (null is not a queue name).
      ...(queue === '' ? {} : { queue }),
      timeout_seconds: timeoutSeconds,
      // Sent only when set, so a create without them reads as before.
      ...(uniqueKey === '' ? {} : { unique_key: uniqueKey }),
      ...(concurrencyKey === '' ? {} : { concurrency_key: concurrencyKey }),
    },
  };
}

/** An API error body split for the create form: its fields under their inputs, the rest at the top. */
export function splitServerErrors(fieldErrors: Record<string, string[]>): { fields: FormErrors; general: string[] } {
  return splitFieldErrors(fieldErrors, CREATE_FIELDS);
}

/** How many jobs the form creates: a whole number from 1 to `max`, or the message that says why not. */
export function parseCount(text: string, max: number): { ok: true; count: number } | { ok: false; error: string } {
  const trimmed = text.trim();
  const count = Number(trimmed);
  if (trimmed === '' || !Number.isInteger(count) || count < 1 || count > max) {
    return { ok: false, error: `A whole number from 1 to ${max}.` };
  }
  return { ok: true, count };
}

/**
 * `count` copies of one job for `POST /api/jobs/bulk/`. An idempotency key names one job,
 * so each copy gets the key with its number (`key-1`, `key-2`, …): sending the same batch
 * again creates nothing new.
 */
export function bulkFromTemplate(input: JobCreateInput, count: number): JobCreateInput[] {
  return Array.from({ length: count }, (_, i) =>
    input.idempotency_key ? { ...input, idempotency_key: `${input.idempotency_key}-${i + 1}` } : { ...input },
  );
}

/**
 * A bulk create's errors (`jobs[<index>].<field>`) as the form's: every copy comes from
 * one template, so the first item's message for a field is the field's message.
 */
export function bulkFieldErrors(fieldErrors: Record<string, string[]>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [key, messages] of Object.entries(fieldErrors)) {
    const match = /^jobs\[\d+\]\.(.+)$/.exec(key);
    const field = match ? match[1]! : key;
    out[field] ??= messages;
  }
  return out;
}
