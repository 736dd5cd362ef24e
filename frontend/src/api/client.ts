/**
 * The one typed client for the Job Queue API. Pages never call fetch directly:
 * they go through the hooks in ./hooks/, which call these functions.
 */
import { settings } from '../config';
import { noteServerDate } from './serverClock';
import type {
  ApiConfig,
  CancelOutcome,
  EventFeedParams,
  EventPage,
  FieldErrors,
  Health,
  BulkCreateInput,
  BulkCreateResult,
  Job,
  JobAttempt,
  JobCreateInput,
  JobDetail,
  JobLookup,
  JobListParams,
  JobPage,
  JobSelection,
  JobStats,
  JobTypes,
  LoginInput,
  QueryParams,
  RetryOutcome,
  Session,
  JobEvent,
  Queue,
  QueueLimitsInput,
  Schedule,
  ScheduleTrigger,
  CreateMatch,
  JobCreateResult,
  Throughput,
  ThroughputParams,
  TimelinePage,
  TimelineParams,
  LiveWorkers,
  WorkflowDetail,
  WorkflowListParams,
  WorkflowPage,
} from './types';

export type ApiErrorKind = 'network' | 'timeout' | 'http';

/** Anything that went wrong talking to the API, with the body DRF sent if any. */
export class ApiError extends Error {
  readonly kind: ApiErrorKind;
  readonly status: number;
  readonly body: unknown;

  constructor(kind: ApiErrorKind, status: number, message: string, body: unknown = null) {
    super(message);
    this.name = 'ApiError';
    this.kind = kind;
    this.status = status;
    this.body = body;
  }

  /** True when the API could not be reached at all (as opposed to answering with an error). */
  get unreachable(): boolean {
    return this.kind !== 'http';
  }

  /** Per-field messages from a DRF 400 body; empty for other errors. */
  get fieldErrors(): FieldErrors {
    return extractFieldErrors(this.body);
  }
}

/**
 * Normalise a DRF error body into field -> messages. `detail` and
 * `non_field_errors` are kept under their own keys so forms can show them at
 * the top; nested objects (e.g. payload errors) are flattened to strings.
 */
export function extractFieldErrors(body: unknown): FieldErrors {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return {};
  const out: FieldErrors = {};
  for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
    const messages = toMessages(value);
    if (messages.length > 0) out[key] = messages;
  }
  return out;
}

function toMessages(value: unknown): string[] {
  if (value === null || value === undefined) return [];
  if (typeof value === 'string') return [value];
  if (typeof value === 'number' || typeof value === 'boolean') return [String(value)];
  if (Array.isArray(value)) return value.flatMap(toMessages);
  if (typeof value === 'object') {
    return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) =>
      toMessages(v).map((m) => `${k}: ${m}`),
    );
  }
  return [];
}

/** Human message for an error body: `detail` first, then the first field message. */
export function describeErrorBody(body: unknown, fallback: string): string {
  const errors = extractFieldErrors(body);
  const detail = errors.detail?.[0] ?? errors.non_field_errors?.[0];
  if (detail) return detail;
  const first = Object.entries(errors)[0];
  return first ? `${first[0]}: ${first[1][0] ?? ''}` : fallback;
}

export interface ClientOptions {
  /** Absolute, or a path such as `/api` on the dashboard's own origin (behind nginx). */
  baseUrl: string;
  timeoutMs?: number;
  /** Django's CSRF token, sent as `X-CSRFToken` on writes; default: the `csrftoken` cookie. */
  csrfToken?: () => string | null;
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PATCH';
  query?: Record<string, string | number | boolean | undefined | null>;
  body?: unknown;
  signal?: AbortSignal | undefined;
}

export interface RawResponse<T> {
  status: number;
  data: T;
  headers: Headers;
}

export function buildUrl(baseUrl: string, path: string, query: RequestOptions['query'] = {}): string {
  // A relative base (`/api`) is resolved against the page's origin.
  const url = new URL(`${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`, window.location.origin);
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(key, String(value));
  }
  return url.toString();
}

/** The value of cookie `name` in `cookies` (document.cookie's format), or null. */
export function readCookie(name: string, cookies: string): string | null {
  for (const part of cookies.split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return decodeURIComponent(value.join('='));
  }
  return null;
}

/** Django's CSRF cookie: the session API sets it; writes echo it in `X-CSRFToken`. */
export function csrfCookie(): string | null {
  return typeof document === 'undefined' ? null : readCookie('csrftoken', document.cookie);
}

/**
 * The target of the link with relation `rel` in an RFC 8288 `Link` header (`<url>;
 * rel="next", <url>; rel="prev"`), or null. A link may name several relations
 * (`rel="next last"`); parameters other than `rel` are ignored.
 */
export function linkTarget(header: string | null, rel: string): string | null {
  if (!header) return null;
  // Each link: `<target>` and its parameters up to the next comma outside quotes.
  for (const match of header.matchAll(/<([^>]*)>((?:[^,<"]|"[^"]*")*)/g)) {
    const relations = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(match[2] ?? '');
    const names = (relations?.[1] ?? relations?.[2] ?? '').toLowerCase().split(/\s+/);
    if (names.includes(rel.toLowerCase())) return match[1] ?? null;
  }
  return null;
}

/** The `cursor` query parameter of a DRF cursor-pagination link, or null. */
export function cursorFromLink(link: string | null): string | null {
  if (!link) return null;
  try {
    return new URL(link).searchParams.get('cursor');
  } catch {
    return null;
  }
}

export function createApiClient(options: ClientOptions) {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const csrfToken = options.csrfToken ?? csrfCookie;

  async function request<T>(path: string, opts: RequestOptions = {}): Promise<RawResponse<T>> {
    const url = buildUrl(options.baseUrl, path, opts.query);
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
    // Signed in with a session, every write must carry the CSRF token (GETs need none).
    const method = opts.method ?? 'GET';
    const csrf = method === 'GET' ? null : csrfToken();
    if (csrf) headers['X-CSRFToken'] = csrf;

    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort();
    opts.signal?.addEventListener('abort', onAbort);

    let response: Response;
    const sentAt = Date.now();
    try {
      response = await fetch(url, {
        method,
        headers,
        // The session cookie goes with requests to the dashboard's own origin only.
        credentials: 'same-origin',
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: controller.signal,
      });
    } catch (err) {
      if (opts.signal?.aborted) throw err; // cancelled by the caller (TanStack Query): not an API fault
      if (timedOut) throw new ApiError('timeout', 0, `The API did not answer within ${timeoutMs / 1000} s.`);
      throw new ApiError('network', 0, `Cannot reach the API at ${options.baseUrl}.`);
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }

    noteServerDate(response.headers.get('Date'), sentAt, Date.now());
    const text = await response.text();
    let data: unknown = null;
    if (text !== '') {
      try {
        data = JSON.parse(text);
      } catch {
        data = text;
      }
    }
    if (!response.ok) {
      const fallback = `${response.status} ${response.statusText || 'error'}`.trim();
      throw new ApiError('http', response.status, describeErrorBody(data, fallback), data);
    }
    return { status: response.status, data: data as T, headers: response.headers };
  }

  async function get<T>(path: string, query?: RequestOptions['query'], signal?: AbortSignal): Promise<T> {
    return (await request<T>(path, { query, signal })).data;
  }

  return {
    baseUrl: options.baseUrl,
    request,

    getHealth: (signal?: AbortSignal) => get<Health>('health/', undefined, signal),

    getConfig: (signal?: AbortSignal) => get<ApiConfig>('config/', undefined, signal),

    getStats: (signal?: AbortSignal) => get<JobStats>('jobs/stats/', undefined, signal),

    getThroughput: (params: ThroughputParams, signal?: AbortSignal) =>
      get<Throughput>(
        'jobs/throughput/',
        { minutes: params.minutes, bucket_seconds: params.bucketSeconds } satisfies QueryParams<'jobs_throughput'>,
        signal,
      ),

    listJobs: (params: JobListParams, signal?: AbortSignal) =>
      get<JobPage>(
        'jobs/',
        {
          status: params.status,
          type: params.type?.trim(),
          queue: params.queue?.trim(),
          idempotency_key: params.idempotencyKey,
          limit: params.limit,
          offset: params.offset,
          ordering: params.ordering,
          key: params.key?.trim() || undefined,
          metadata: params.metadata?.trim() || undefined,
          error: params.error?.trim() || undefined,
          due: params.due,
          lease_expired: params.leaseExpired,
        } satisfies QueryParams<'jobs_list'>,
        signal,
      ),

    /** Per-type outcomes, percentiles, last error and failure sparkline over `minutes`. */
    getJobTypes: (minutes: number, signal?: AbortSignal) =>
      get<JobTypes>('jobs/types/', { minutes } satisfies QueryParams<'jobs_types'>, signal),

    /** Every live worker process (idle ones too) and what each of its threads runs. */
    getWorkers: (signal?: AbortSignal) => get<LiveWorkers>('workers/', undefined, signal),

    getJob: (id: string, signal?: AbortSignal) =>
      get<JobDetail>(`jobs/${encodeURIComponent(id)}/`, undefined, signal),

    /** A job's attempts across every manual-retry round, oldest first. */
    getJobAttempts: (id: string, signal?: AbortSignal) =>
      get<JobAttempt[]>(`jobs/${encodeURIComponent(id)}/attempts/`, undefined, signal),

    /** The job an id, a unique id prefix (8+ hex characters) or an idempotency key names. */
    lookupJob: (q: string, signal?: AbortSignal) =>
      get<JobLookup>('jobs/lookup/', { q: q.trim() } satisfies QueryParams<'jobs_lookup'>, signal),

    /**
     * One response of a job's timeline: the spec's array of events, oldest first, and the
     * next page the `Link` header announces (`rel="next"`) when the timeline continues.
     */
    async getJobEvents(id: string, params: TimelineParams = {}, signal?: AbortSignal): Promise<TimelinePage> {
      const res = await request<JobEvent[]>(`jobs/${encodeURIComponent(id)}/events/`, {
        query: {
          cursor: params.cursor,
          limit: params.limit,
          heartbeats: params.heartbeats,
        } satisfies QueryParams<'jobs_events_list'>,
        signal,
      });
      return { events: res.data, next: linkTarget(res.headers.get('Link'), 'next') };
    },

    /** Who is signed in; also makes Django set the CSRF cookie. */
    getSession: (signal?: AbortSignal) => get<Session>('auth/session/', undefined, signal),

    async login(credentials: LoginInput): Promise<Session> {
      return (await request<Session>('auth/login/', { method: 'POST', body: credentials })).data;
    },

    async logout(): Promise<void> {
      await request<null>('auth/logout/', { method: 'POST' });
    },

    listEvents: (params: EventFeedParams, signal?: AbortSignal) =>
      get<EventPage>(
        'job-events/',
        {
          cursor: params.cursor,
          limit: params.limit,
          type: params.type,
          job_id: params.jobId?.trim(),
          heartbeats: params.heartbeats,
        } satisfies QueryParams<'job_events_list'>,
        signal,
      ),

    /**
     * POST a new job. `created` is false when an existing job was returned (200): `matched`
     * names the rule, its idempotency key (for good) or its unique key (while it is queued
     * or running).
     */
    async createJob(input: JobCreateInput): Promise<{ job: Job; created: boolean; matched: CreateMatch | null }> {
      const res = await request<JobCreateResult>('jobs/', { method: 'POST', body: input });
      const { matched, ...job } = res.data;
      return { job, created: res.status === 201, matched };
    },

    /** POST up to `bulk_create_max` jobs at once; any bad item refuses the whole request. */
    async bulkCreate(input: BulkCreateInput): Promise<BulkCreateResult> {
      return (await request<BulkCreateResult>('jobs/bulk/', { method: 'POST', body: input })).data;
    },

    /** Make a job scheduled for later (or waiting out a retry's backoff) due now. */
    async runJobNow(id: string): Promise<Job> {
      return (await request<Job>(`jobs/${encodeURIComponent(id)}/run-now/`, { method: 'POST' })).data;
    },

    async retryJob(id: string): Promise<Job> {
      return (await request<Job>(`jobs/${encodeURIComponent(id)}/retry/`, { method: 'POST' })).data;
    },

    /**
     * Cancel one job. A queued job is cancelled at once (200); for a running one the API
     * records a cancel request (202, `requested`) that its worker acts on within a heartbeat.
     */
    async cancelJob(id: string): Promise<{ job: Job; requested: boolean }> {
      const res = await request<Job>(`jobs/${encodeURIComponent(id)}/cancel/`, { method: 'POST' });
      return { job: res.data, requested: res.status === 202 };
    },

    /** Every known queue, by name: counts, pause state, limits and saturation. */
    listQueues: (signal?: AbortSignal) => get<Queue[]>('queues/', undefined, signal),

    /** Stop every worker claiming from the queue; running jobs finish. */
    async pauseQueue(name: string): Promise<Queue> {
      return (await request<Queue>(`queues/${encodeURIComponent(name)}/pause/`, { method: 'POST' })).data;
    },

    async resumeQueue(name: string): Promise<Queue> {
      return (await request<Queue>(`queues/${encodeURIComponent(name)}/resume/`, { method: 'POST' })).data;
    },

    /** Change the queue's limits; a 400 names the offending fields. */
    async updateQueueLimits(name: string, limits: QueueLimitsInput): Promise<Queue> {
      return (await request<Queue>(`queues/${encodeURIComponent(name)}/`, { method: 'PATCH', body: limits })).data;
    },

    /** Every schedule of the settings, by name, with its next run and last job. */
    listSchedules: (signal?: AbortSignal) => get<Schedule[]>('schedules/', undefined, signal),

    async pauseSchedule(name: string): Promise<Schedule> {
      return (await request<Schedule>(`schedules/${encodeURIComponent(name)}/pause/`, { method: 'POST' })).data;
    },

    async resumeSchedule(name: string): Promise<Schedule> {
      return (await request<Schedule>(`schedules/${encodeURIComponent(name)}/resume/`, { method: 'POST' })).data;
    },

    /** Enqueue one job of the schedule now, outside its ticks. */
    async triggerSchedule(name: string): Promise<ScheduleTrigger> {
      return (await request<ScheduleTrigger>(`schedules/${encodeURIComponent(name)}/trigger/`, { method: 'POST' })).data;
    },

    /** Workflows, newest first, a page at a time; `state` keeps those in that state. */
    listWorkflows: (params: WorkflowListParams, signal?: AbortSignal) =>
      get<WorkflowPage>(
        'workflows/',
        { page: params.page > 1 ? params.page : undefined, state: params.state } satisfies QueryParams<'workflows_list'>,
        signal,
      ),

    /** A workflow, its first 1,000 members and the edges among them. */
    getWorkflow: (id: string, signal?: AbortSignal) =>
      get<WorkflowDetail>(`workflows/${encodeURIComponent(id)}/`, undefined, signal),

    async bulkCancel(selection: JobSelection): Promise<CancelOutcome> {
      return (await request<CancelOutcome>('jobs/cancel/', { method: 'POST', body: selection })).data;
    },

    async bulkRetry(selection: JobSelection): Promise<RetryOutcome> {
      return (await request<RetryOutcome>('jobs/retry/', { method: 'POST', body: selection })).data;
    },
  };
}

export type ApiClient = ReturnType<typeof createApiClient>;

export const api: ApiClient = createApiClient({ baseUrl: settings.apiBaseUrl });
