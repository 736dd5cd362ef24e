/**
 * Shapes of the Job Queue REST API, as the dashboard names them. Every response and
 * request type is an alias of ./schema.d.ts, generated from the backend's OpenAPI
 * schema (`make types`; `make test-types` fails when it is out of date), so an API
 * change shows up as a type error instead of a silent drift. Written by hand: JSON
 * values, the enum lists (checked against the schema) and the dashboard's query params.
 */
import type { components, operations } from './schema';

type Schema = components['schemas'];

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/**
 * `T` with some fields narrowed. drf-spectacular can only call a JSON field "any value"
 * (`unknown`); the API only sends JSON, which `JsonValue` names. Each key must be a
 * field of `T` and each new type must fit the generated one, so a renamed or retyped
 * field still fails tsc.
 */
type Narrow<T, N extends { [K in keyof N]: K extends keyof T ? T[K] : never }> = Omit<T, keyof N> & {
  readonly [K in keyof N]: N[K];
};

/**
 * The values of a schema enum, in display order. tsc refuses a value the schema does
 * not have, and (with `{ missing: … }` in the message) a schema value left out, so a
 * status or event type added in the backend breaks the type check until it is listed.
 */
function enumValues<T extends string>() {
  return <const L extends readonly T[]>(
    values: L & NoInfer<[Exclude<T, L[number]>] extends [never] ? unknown : { missing: Exclude<T, L[number]> }>,
  ): L => values;
}

export type JobStatus = Schema['JobStatusEnum'];
export const JOB_STATUSES = enumValues<JobStatus>()(['queued', 'waiting', 'running', 'succeeded', 'failed', 'cancelled']);

/**
 * The API's rules for the two actions, as the dashboard offers them (the API does not
 * publish them; it answers 409, or leaves the job alone in a bulk action, otherwise):
 * cancel takes a waiting, queued or running job, retry a failed or cancelled one. A job in
 * neither list has finished until someone retries it.
 */
export const CANCELLABLE_STATUSES = ['waiting', 'queued', 'running'] as const satisfies readonly JobStatus[];
export const RETRYABLE_STATUSES = ['failed', 'cancelled'] as const satisfies readonly JobStatus[];
export type CancellableStatus = (typeof CANCELLABLE_STATUSES)[number];
export type RetryableStatus = (typeof RETRYABLE_STATUSES)[number];

export function isCancellable(status: JobStatus): status is CancellableStatus {
  return (CANCELLABLE_STATUSES as readonly JobStatus[]).includes(status);
}

export function isRetryable(status: JobStatus): status is RetryableStatus {
  return (RETRYABLE_STATUSES as readonly JobStatus[]).includes(status);
}

/** Whether the job can still change by itself (a worker may claim or finish it, or its
 * parents settle it). */
export function isLive(status: JobStatus): boolean {
  return isCancellable(status);
}

export type JobEventType = Schema['JobEventTypeEnum'];
export const JOB_EVENT_TYPES = enumValues<JobEventType>()([
  'created',
  'claimed',
  'progress',
  'lease_renewed',
  'succeeded',
  'retry_scheduled',
  'failed',
  'timeout_requeued',
  'manual_retry',
  'cancel_requested',
  'cancelled',
  'released',
  'run_now',
  'snoozed',
]);

/** ISO 8601 timestamp with offset, as the API serialises it. */
export type IsoDateTime = string;

export type Job = Narrow<Schema['Job'], { payload: JsonObject; result: JsonValue | null }>;
/** A row of the jobs list: the job and when its current attempt started. */
export type JobListItem = Narrow<Schema['JobListItem'], { payload: JsonObject; result: JsonValue | null }>;
export type JobEvent = Narrow<Schema['JobEvent'], { data: JsonObject }>;

/** Limit-offset page of the jobs list. */
export type JobPage = Narrow<Schema['PaginatedJobListItemList'], { results: JobListItem[] }>;
/** Cursor page of the global event feed. `next` is older, `previous` is newer. */
export type EventPage = Narrow<Schema['PaginatedJobEventList'], { results: JobEvent[] }>;

export type JobStats = Schema['JobStats'];
export type ThroughputBucket = Schema['ThroughputBucket'];
export type Throughput = Schema['Throughput'];

/** Per-type health over a window (`GET /api/jobs/types/`). */
export type JobTypes = Schema['JobTypes'];
export type JobTypeHealth = Schema['JobTypeHealth'];
export type ErrorGroup = Schema['ErrorGroup'];

export type JobTypeInfo = Narrow<Schema['JobType'], { example_payload: JsonObject }>;
export type WorkerSettings = Schema['WorkerConfig'];
export type ApiLimits = Schema['Limits'];
/** `default_limit` and `max_limit` of one paginated list. */
export type PageLimits = Schema['PageLimits'];
export type ApiConfig = Narrow<Schema['Config'], { job_types: JobTypeInfo[] }>;

export type Health = Schema['Health'];

/** Who is signed in and what the API lets them do (`GET /api/auth/session/`). */
export type Session = Schema['Session'];
export type LoginInput = Schema['LoginRequest'];

export type JobCreateInput = Schema['JobCreateRequest'];
/** `POST /api/jobs/bulk/`: up to `bulk_create_max` jobs at once, and what it wrote. */
export type BulkCreateInput = Schema['JobBulkCreateRequest'];
export type BulkCreateResult = Schema['JobBulkCreateResult'];

/** The body of the bulk actions: the list's filters and/or ids (never all empty). */
export type JobSelection = Schema['JobSelectionRequest'];
export type CancelOutcome = Schema['CancelOutcome'];
export type RetryOutcome = Schema['RetryOutcome'];

// --- Flow control: queues (pause, limits) and schedules ----------------------------

/** A job's count in each status. */
export type StatusCounts = Schema['QueueCounts'];

/**
 * One queue (`GET /api/queues/`): counts, pause state, limits (null: none) and how full
 * they are (`saturation`: running / concurrency_limit, null without a limit).
 */
export type Queue = Schema['Queue'];

/** The body of `PATCH /api/queues/{name}/`: any of the limits, null to remove one. */
export type QueueLimitsInput = Schema['PatchedQueueLimitsRequest'];

export type ScheduleLastJob = Schema['ScheduleLastJob'];

/** One schedule declared in the settings (`GET /api/schedules/`) and its run-time state. */
export type Schedule = Schema['Schedule'];

/** `POST /api/schedules/{name}/trigger/`: the schedule and the job it just enqueued. */
export type ScheduleTrigger = Narrow<Schema['ScheduleTrigger'], { job: Job }>;

/** A create's answer (`POST /api/jobs/`): the job, and which rule returned it if it existed. */
export type JobCreateResult = Narrow<Schema['JobCreateResult'], { payload: JsonObject; result: JsonValue | null }>;

/** Which rule returned an existing job instead of creating one (`matched` on a create's answer). */
export type CreateMatch = Schema['MatchedEnum'];

/** Query parameters of an operation, by its operationId. */
export type QueryParams<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;

/** The dashboard's view of a jobs-list query; the client maps it onto `QueryParams<'jobs_list'>`. */
export interface JobListParams {
  status?: JobStatus | undefined;
  type?: string | undefined;
  queue?: string | undefined;
  /** Exact; a key names at most one job. */
  idempotencyKey?: string | undefined;
  /** Omitted: the API's default page size. */
  limit?: number | undefined;
  offset: number;
  /** Omitted: the API's default order (newest first). */
  ordering?: JobOrdering | undefined;
  /** Any of the idempotency, unique or concurrency key, exact. */
  key?: string | undefined;
  /** `name=value` (exact) or `name` (has it). */
  metadata?: string | undefined;
  /** Substring of the last error, any case. */
  error?: string | undefined;
  /** Queued jobs due now (true) or scheduled for later (false). */
  due?: boolean | undefined;
  /** Running jobs whose lease expired (true). */
  leaseExpired?: boolean | undefined;
}

/** The filters of a job count: one status, with the list's type and queue filters. */
export interface JobCountParams {
  status: JobStatus;
  type?: string | undefined;
  queue?: string | undefined;
}

export interface EventFeedParams {
  cursor?: string | undefined;
  /** Omitted: the API's default page size. */
  limit?: number | undefined;
  type?: JobEventType | undefined;
  jobId?: string | undefined;
  /** `exclude` drops `lease_renewed` and `progress`; the API's default includes them. */
  heartbeats?: HeartbeatFilter | undefined;
}

export type HeartbeatFilter = 'include' | 'exclude';

/** The events a worker writes while an attempt runs: collapsed or hidden by default. */
export const HEARTBEAT_EVENT_TYPES: readonly JobEventType[] = ['lease_renewed', 'progress'];

/**
 * One response of a job's timeline (`GET /api/jobs/{id}/events/`): the events, oldest
 * first, and the URL of the next page that the `Link` header announced (`rel="next"`),
 * null when the timeline ends here.
 */
export interface TimelinePage {
  events: JobEvent[];
  next: string | null;
}

/** A page of one job's timeline: oldest first, `next` leads to later events. */
export interface TimelineParams {
  cursor?: string | undefined;
  heartbeats?: HeartbeatFilter | undefined;
  /** Omitted: the API's default page size. */
  limit?: number | undefined;
}

export interface ThroughputParams {
  minutes: number;
  bucketSeconds: number;
}

/** DRF validation error body: field name to messages, plus `detail`/`non_field_errors`. */
export type FieldErrors = Record<string, string[]>;

/** How one attempt ended, or `running` while it runs. */
export type AttemptOutcome = Schema['Attempt']['outcome'];
/** One attempt of a job (`GET /api/jobs/{id}/attempts/`, oldest first, every manual-retry round). */
export type JobAttempt = Schema['Attempt'];

/** Where a job's effective timeout comes from. */
export type TimeoutSource = Schema['TimeoutSourceEnum'];

/** The job detail: the list's job, plus attempts across rounds, the last traceback and the timeout in force. */
export type JobDetail = Narrow<Schema['JobDetail'], { payload: JsonObject; result: JsonValue | null }>;

/** `GET /api/jobs/lookup/?q=`: the job an id, a unique id prefix or an idempotency key names. */
export type JobLookup = Narrow<Schema['JobLookup'], { job: Job }>;

/** Live worker processes, idle ones too (`GET /api/workers/`, from presence rows). */
export type LiveWorkers = Schema['Workers'];
export type LiveWorkerProcess = Schema['WorkerProcess'];
export type LiveWorkerThread = Schema['WorkerThread'];

/** The Jobs list's sortable columns (the API's `ordering`, `-` for newest/largest first). */
export const JOB_ORDERINGS = ['created_at', 'started_at', 'finished_at', 'priority', 'type'] as const;
export type JobOrderingField = (typeof JOB_ORDERINGS)[number];
export type JobOrdering = JobOrderingField | `-${JobOrderingField}`;

// --- Workflows: jobs and their dependency edges created together --------------------

/**
 * A workflow's state, from its members' statuses: `active` while any is waiting, queued
 * or running; then `failed` if any failed, else `cancelled` if any was cancelled, else
 * `succeeded`.
 */
export type WorkflowState = Schema['StateEnum'];
export const WORKFLOW_STATES = enumValues<WorkflowState>()(['active', 'succeeded', 'failed', 'cancelled']);

/** A row of `GET /api/workflows/`: its members counted by status (every status, zeros included). */
export type WorkflowSummary = Schema['WorkflowSummary'];

/** One member job of a workflow, as `GET /api/workflows/{id}/` lists it (creation order). */
export type WorkflowMember = Schema['WorkflowMember'];

/** A dependency among the members shown: `child` waits for `parent`. */
export type WorkflowEdge = Schema['WorkflowEdge'];

/**
 * `GET /api/workflows/{id}/`: the summary, the first 1,000 members and the edges among
 * them; `members_truncated` when there are more.
 */
export type WorkflowDetail = Schema['WorkflowDetail'];

/** A page of the workflow list (50, by `page`), newest first. */
export type WorkflowPage = Schema['PaginatedWorkflowSummaryList'];

export interface WorkflowListParams {
  /** 1-based. */
  page: number;
  state?: WorkflowState | undefined;
}
