/**
 * Fixtures shaped exactly like the examples in the backend spec. They are typed
 * with the client's types, generated from the OpenAPI schema, so a drift fails `tsc`.
 */
import type {
  ApiConfig,
  EventPage,
  JobListItem,
  JobAttempt,
  JobEvent,
  JobPage,
  JobStats,
  JobTypeHealth,
  JobTypes,
  Queue,
  Schedule,
  Session,
  LiveWorkerProcess,
  LiveWorkerThread,
  LiveWorkers,
  ErrorGroup,
  Throughput,
  WorkflowDetail,
  WorkflowEdge,
  WorkflowMember,
  WorkflowPage,
  WorkflowSummary,
} from '../api/types';

export const API = 'http://localhost:8000/api';

export const JOB_ID = '8421aca2-7d0c-484c-9c19-e7e324a39e21';

/** A job as the list shows it (the create and action answers are the same without `started_at`). */
export function makeJob(overrides: Partial<JobListItem> = {}): JobListItem {
  return {
    id: JOB_ID,
    type: 'demo.success',
    payload: { sleep_seconds: 1 },
    status: 'queued',
    priority: 50,
    available_at: '2026-06-21T02:33:01.725170+03:30',
    attempts: 0,
    max_attempts: 3,
    idempotency_key: null,
    locked_by: null,
    locked_until: null,
    last_error: '',
    result: null,
    created_at: '2026-06-21T02:32:46.176967+03:30',
    updated_at: '2026-06-21T02:32:46.176967+03:30',
    finished_at: null,
    queue: 'default',
    timeout_seconds: null,
    cancel_requested_at: null,
    metadata: {},
    started_at: null,
    unique_key: null,
    concurrency_key: null,
    claimed_at: null,
    claimed_by: null,
    workflow_id: null,
    last_exception_class: null,
    ...overrides,
  };
}

export function makeEvent(overrides: Partial<JobEvent> = {}): JobEvent {
  return {
    id: 1,
    job: JOB_ID,
    type: 'created',
    attempt: 0,
    worker_id: null,
    message: 'Job created',
    data: { type: 'demo.success' },
    created_at: '2026-06-21T02:32:46.176967+03:30',
    ...overrides,
  };
}

export function jobsPage(results: JobListItem[], count = results.length, next: string | null = null): JobPage {
  return { count, next, previous: null, results };
}

export function eventPage(results: JobEvent[], next: string | null = null, previous: string | null = null): EventPage {
  return { next, previous, results };
}

/** The open local demo: no sign-in needed, everything allowed. */
export const openSession: Session = {
  login_required: false,
  authenticated: false,
  username: null,
  permissions: { view: true, add: true, change: true },
};

export const stats: JobStats = {
  total: 53,
  by_status: { queued: 0, waiting: 0, running: 0, succeeded: 41, failed: 12, cancelled: 0 },
  overdue_running: 0,
  retries_pending: 0,
  oldest_queued_at: null,
  oldest_due_at: null,
  scheduled: 0,
  due: 0,
  estimated: false,
  queues: [],
};

export const config: ApiConfig = {
  job_types: [
    { type: 'demo.success', description: 'Sleeps briefly and succeeds.', example_payload: { sleep_seconds: 1 } },
    { type: 'demo.fail', description: 'Always raises an error.', example_payload: { error: 'Intentional demo failure' } },
    { type: 'demo.flaky', description: 'Fails until an attempt, then succeeds.', example_payload: { fail_until_attempt: 2 } },
  ],
  worker: {
    threads: 4,
    poll_interval_ms: 500,
    lease_seconds: 30,
    cleanup_interval_seconds: 5,
    cleanup_batch_size: 100,
    backoff_base_seconds: 5,
    backoff_max_seconds: 300,
    max_attempts_default: 3,
    heartbeat_seconds: 10,
    timeout_seconds: 0,
    queues: ['*'],
  },
  limits: {
    priority_min: -32768,
    priority_max: 32767,
    max_attempts_max: 100,
    idempotency_key_max_length: 255,
    max_body_bytes: 262144,
    timeout_seconds_max: 604800,
    queue_name_max_length: 64,
    bulk_ids_max: 1000,
    bulk_create_max: 1000,
    metadata_max_entries: 32,
    metadata_key_max_length: 128,
    metadata_value_max_length: 8192,
    metadata_max_chars: 16384,
  },
  pagination: {
    jobs: { default_limit: 25, max_limit: 100 },
    job_events: { default_limit: 50, max_limit: 200 },
    job_timeline: { default_limit: 100, max_limit: 500, next_page_in: 'link_header' },
  },
};

/** Buckets of [succeeded, failed] or [succeeded, failed, cancelled] counts, oldest first. */
export function makeThroughput(
  counts: ([number, number] | [number, number, number])[],
  bucketSeconds = 60,
  start = Date.UTC(2026, 5, 21, 10, 0),
): Throughput {
  return {
    bucket_seconds: bucketSeconds,
    start: new Date(start).toISOString(),
    end: new Date(start + counts.length * bucketSeconds * 1000).toISOString(),
    buckets: counts.map(([succeeded, failed, cancelled = 0], i) => ({
      start: new Date(start + i * bucketSeconds * 1000).toISOString(),
      succeeded,
      failed,
      cancelled,
    })),
  };
}

/** One type's health: `counts` and the rest default to an idle type. */
export function makeTypeHealth(type: string, overrides: Partial<Omit<JobTypeHealth, 'counts'>> & { counts?: Partial<JobTypeHealth['counts']> } = {}): JobTypeHealth {
  const counts = {
    claimed: 0,
    succeeded: 0,
    retry_scheduled: 0,
    failed: 0,
    timed_out: 0,
    timeout_requeued: 0,
    cancelled: 0,
    cancelled_queued: 0,
    released: 0,
    ...overrides.counts,
  };
  const failures = counts.retry_scheduled + counts.failed + counts.timed_out + counts.timeout_requeued;
  const attempts = failures + counts.succeeded + counts.cancelled;
  return {
    type,
    registered: true,
    attempts,
    failure_rate: attempts ? failures / attempts : null,
    sample_size: attempts,
    run_ms: { p50: null, p95: null },
    wait_ms: { p50: null, p95: null },
    last_error: null,
    failures: Array<number>(15).fill(0),
    ...overrides,
    counts,
  };
}

export function makeJobTypes(types: JobTypeHealth[], minutes = 60, errorGroups: ErrorGroup[] = []): JobTypes {
  return {
    minutes,
    start: '2026-06-21T10:00:00Z',
    end: '2026-06-21T11:00:00Z',
    bucket_seconds: 60,
    sample_size_max: 1000,
    types,
    error_groups: errorGroups,
  };
}

export function makeThread(
  n: number,
  job: Partial<NonNullable<LiveWorkerThread['job']>> | null = null,
  process = 'box:4242',
): LiveWorkerThread {
  return {
    worker_id: `${process}:thread-${n}:00c0ffee`,
    job: job && {
      id: JOB_ID,
      type: 'demo.slow',
      queue: 'default',
      attempt: 1,
      started_at: '2026-06-21T10:59:00Z',
      locked_until: '2026-06-21T11:00:30Z',
      lease_overdue: false,
      ...job,
    },
  };
}

export function makeProcess(threads: LiveWorkerThread[], overrides: Partial<LiveWorkerProcess> = {}): LiveWorkerProcess {
  return {
    worker_id: 'box:4242',
    hostname: 'box',
    pid: 4242,
    queues: ['*'],
    threads_configured: threads.length,
    threads_live: threads.length,
    threads_busy: threads.filter((t) => t.job !== null).length,
    started_at: '2026-06-21T10:00:00Z',
    last_seen_at: '2026-06-21T10:59:58Z',
    heartbeat_interval_seconds: 10,
    finished: 0,
    threads,
    threads_abandoned: [],
    ...overrides,
  };
}

export function makeWorkers(processes: LiveWorkerProcess[]): LiveWorkers {
  return { minutes: 15, start: '2026-06-21T10:45:00Z', end: '2026-06-21T11:00:00Z', processes };
}

export function makeAttempt(overrides: Partial<JobAttempt> = {}): JobAttempt {
  return {
    round: 1,
    attempt: 1,
    number: 1,
    worker_id: 'box:4242:1',
    queued_at: '2026-06-21T02:32:46.176967+03:30',
    claimed_at: '2026-06-21T02:32:47.000000+03:30',
    started_at: '2026-06-21T02:32:47.000000+03:30',
    finished_at: '2026-06-21T02:32:48.000000+03:30',
    wait_ms: 823,
    run_ms: 1000,
    outcome: 'succeeded',
    error: null,
    exception_class: null,
    traceback: null,
    ...overrides,
  };
}
/** A queue as `GET /api/queues/` lists it: active, empty and without limits unless overridden. */
export function makeQueue(overrides: Partial<Queue> = {}): Queue {
  return {
    name: 'default',
    paused: false,
    paused_at: null,
    counts: { queued: 0, waiting: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 },
    concurrency_limit: null,
    rate_limit: null,
    rate_period_seconds: null,
    running: 0,
    saturation: null,
    due: 0,
    scheduled: 0,
    oldest_due_at: null,
    oldest_queued_at: null,
    ...overrides,
  };
}

/** A schedule as `GET /api/schedules/` lists it: a 60 s interval on demo.success, never run yet. */
export function makeSchedule(overrides: Partial<Schedule> = {}): Schedule {
  return {
    name: 'heartbeat',
    target: 'demo.success',
    kind: 'type',
    cron: null,
    interval_seconds: 60,
    timezone: 'UTC',
    queue: 'default',
    priority: 0,
    missed: 'latest',
    paused: false,
    paused_at: null,
    next_run_at: '2026-06-21T11:01:00Z',
    last_run_at: null,
    last_job: null,
    runnable: true,
    error: null,
    error_at: null,
    ...overrides,
  };
}

/** Signed in with view permission only. */
export const viewOnlySession: Session = {
  login_required: true,
  authenticated: true,
  username: 'viewer',
  permissions: { view: true, add: false, change: false },
};

export const WORKFLOW_ID = '5c0ffee1-2d3e-4f50-8a6b-7c8d9e0f1a2b';

/** A stable job id for a step's ref (FNV-1a of the ref): the same ref, the same id. */
function idFor(ref: string): string {
  let hash = 0x811c9dc5;
  for (const c of ref) hash = Math.imul(hash ^ c.charCodeAt(0), 0x01000193) >>> 0;
  const hex = hash.toString(16).padStart(8, '0');
  return `${hex}-0000-4000-8000-${hex}0000`;
}

/** A member job of a workflow: `ref` names it, its id is made from the ref unless given. */
export function makeMember(ref: string, overrides: Partial<WorkflowMember> = {}): WorkflowMember {
  return {
    id: idFor(ref),
    ref,
    type: 'demo.success',
    status: 'succeeded',
    queue: 'default',
    attempts: 1,
    max_attempts: 3,
    created_at: '2026-06-21T10:00:00Z',
    finished_at: '2026-06-21T10:00:02Z',
    on_parent_failure: 'cancel',
    ...overrides,
  };
}

/** `child` waits for `parent`. */
export function edge(parent: WorkflowMember, child: WorkflowMember): WorkflowEdge {
  return { parent: parent.id, child: child.id };
}

/** A workflow as the list shows it: three succeeded jobs unless overridden. */
export function makeWorkflowSummary(overrides: Partial<WorkflowSummary> = {}): WorkflowSummary {
  return {
    id: WORKFLOW_ID,
    name: 'nightly-etl',
    created_at: '2026-06-21T10:00:00Z',
    jobs: 3,
    counts: { queued: 0, waiting: 0, running: 0, succeeded: 3, failed: 0, cancelled: 0 },
    state: 'succeeded',
    ...overrides,
  };
}

/** A workflow's detail: the summary's counts and size follow `members` unless overridden. */
export function makeWorkflow(
  members: WorkflowMember[],
  edges: WorkflowEdge[],
  overrides: Partial<WorkflowDetail> = {},
): WorkflowDetail {
  const counts = { queued: 0, waiting: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
  for (const m of members) counts[m.status] += 1;
  return {
    ...makeWorkflowSummary({ jobs: members.length, counts }),
    members,
    members_truncated: false,
    edges,
    ...overrides,
  };
}

export function workflowsPage(results: WorkflowSummary[], count = results.length, next: string | null = null): WorkflowPage {
  return { count, next, previous: null, results };
}
