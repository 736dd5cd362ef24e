/**
 * Shapes of the Job Queue REST API (see the backend spec). Every response the
 * dashboard reads is typed here; the client in ./client.ts returns these.
 */

export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const JOB_EVENT_TYPES = [
  'created',
  'claimed',
  'progress',
  'lease_renewed',
  'succeeded',
  'retry_scheduled',
  'failed',
  'timeout_requeued',
  'manual_retry',
] as const;
export type JobEventType = (typeof JOB_EVENT_TYPES)[number];

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** ISO 8601 timestamp with offset, as the API serialises it. */
export type IsoDateTime = string;

export interface Job {
  id: string;
  type: string;
  payload: JsonValue;
  status: JobStatus;
  priority: number;
  available_at: IsoDateTime;
  attempts: number;
  max_attempts: number;
  idempotency_key: string | null;
  locked_by: string | null;
  locked_until: IsoDateTime | null;
  last_error: string;
  result: JsonValue | null;
  created_at: IsoDateTime;
  updated_at: IsoDateTime;
  finished_at: IsoDateTime | null;
}

export interface JobEvent {
  id: number;
  job: string;
  type: JobEventType;
  attempt: number;
  worker_id: string | null;
  message: string;
  data: JsonValue;
  created_at: IsoDateTime;
}

/** Limit-offset page (jobs list). */
export interface OffsetPage<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/** Cursor page (global event feed). `next` is older, `previous` is newer. */
export interface CursorPage<T> {
  next: string | null;
  previous: string | null;
  results: T[];
}

export interface JobStats {
  total: number;
  by_status: Record<JobStatus, number>;
  overdue_running: number;
  retries_pending: number;
  oldest_queued_at: IsoDateTime | null;
}

export interface ThroughputBucket {
  start: IsoDateTime;
  succeeded: number;
  failed: number;
}

export interface Throughput {
  bucket_seconds: number;
  start: IsoDateTime;
  end: IsoDateTime;
  buckets: ThroughputBucket[];
}

export interface JobTypeInfo {
  type: string;
  description: string;
  example_payload: JsonValue;
}

export interface WorkerSettings {
  threads: number;
  poll_interval_ms: number;
  lease_seconds: number;
  cleanup_interval_seconds: number;
  cleanup_batch_size: number;
  backoff_base_seconds: number;
  backoff_max_seconds: number;
  max_attempts_default: number;
}

export interface ApiLimits {
  priority_min: number;
  priority_max: number;
  max_attempts_max: number;
  idempotency_key_max_length: number;
  max_body_bytes: number;
}

export interface ApiConfig {
  job_types: JobTypeInfo[];
  worker: WorkerSettings;
  limits: ApiLimits;
}

export interface Health {
  ok: boolean;
  database: 'ok' | 'error';
  detail?: string;
}

export interface JobCreateInput {
  type: string;
  payload?: JsonValue;
  priority?: number;
  available_at?: IsoDateTime | null;
  max_attempts?: number;
  idempotency_key?: string | null;
}

export interface JobListParams {
  status?: JobStatus | undefined;
  type?: string | undefined;
  limit: number;
  offset: number;
}

export interface EventFeedParams {
  cursor?: string | undefined;
  limit: number;
  type?: JobEventType | undefined;
  jobId?: string | undefined;
}

export interface ThroughputParams {
  minutes: number;
  bucketSeconds: number;
}

/** DRF validation error body: field name to messages, plus `detail`/`non_field_errors`. */
export type FieldErrors = Record<string, string[]>;
