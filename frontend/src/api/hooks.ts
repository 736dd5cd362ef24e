/**
 * Data hooks: the only place that knows query keys, polling and cache
 * invalidation. Components receive plain data from these.
 */
import {
  keepPreviousData,
  useInfiniteQuery,
  useMutation,
  useQueries,
  useQuery,
  useQueryClient,
  type QueryClient,
} from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { useRefetchInterval } from '../polling/usePolling';
import { api, ApiError, cursorFromLink } from './client';
import {
  isLive,
  type ApiConfig,
  type CancelOutcome,
  type EventFeedParams,
  type Health,
  type Job,
  type JobCreateInput,
  type JobListParams,
  type JobSelection,
  type JobStatus,
  type LoginInput,
  type PageLimits,
  type RetryOutcome,
  type Session,
  type ThroughputParams,
} from './types';

export const queryKeys = {
  health: ['health'] as const,
  config: ['config'] as const,
  stats: ['jobs', 'stats'] as const,
  throughput: (p: ThroughputParams) => ['jobs', 'throughput', p] as const,
  jobs: (p: JobListParams) => ['jobs', 'list', p] as const,
  jobCount: (p: JobCountParams) => ['jobs', 'count', p] as const,
  job: (id: string) => ['jobs', 'detail', id] as const,
  jobEvents: (id: string) => ['jobs', 'detail', id, 'events'] as const,
  eventFeed: (p: EventFeedParams) => ['events', p] as const,
  jobTypes: (minutes: number) => ['jobs', 'types', minutes] as const,
  workers: (minutes: number) => ['workers', minutes] as const,
  session: ['session'] as const,
};

/** How often health is re-checked while the API is down, even with polling paused. */
export const OFFLINE_RECHECK_MS = 3000;

export function useHealth() {
  const interval = useRefetchInterval();
  return useQuery({
    queryKey: queryKeys.health,
    queryFn: ({ signal }) => api.getHealth(signal),
    refetchInterval: (query) => {
      const down = query.state.status === 'error' || query.state.data?.ok === false;
      if (down) return interval === false ? OFFLINE_RECHECK_MS : Math.min(interval, OFFLINE_RECHECK_MS);
      return interval;
    },
    refetchIntervalInBackground: false,
    retry: false,
  });
}

export type ConnectionState = 'checking' | 'ok' | 'unreachable' | 'degraded';

/** Reduce the health check to what the banner needs to say. */
export function connectionFromHealth(data: Health | undefined, error: unknown): {
  state: ConnectionState;
  detail?: string | undefined;
} {
  if (error) {
    // A 5xx from /health/ with its own JSON body means the API runs but the database does not.
    if (error instanceof ApiError && error.kind === 'http') {
      const body = error.body as Partial<Health> | null;
      if (body && body.ok === false) return { state: 'degraded', detail: body.detail ?? error.message };
      return { state: 'degraded', detail: error.message };
    }
    return { state: 'unreachable' };
  }
  if (!data) return { state: 'checking' };
  return data.ok ? { state: 'ok' } : { state: 'degraded', detail: data.detail };
}

export function useConnection() {
  const health = useHealth();
  return connectionFromHealth(health.data, health.error);
}

export function useConfig() {
  return useQuery({
    queryKey: queryKeys.config,
    queryFn: ({ signal }) => api.getConfig(signal),
    staleTime: 5 * 60_000,
  });
}

/** A list's default and maximum page size, from /config/; undefined until it has loaded. */
export function usePageLimits(list: keyof ApiConfig['pagination']): PageLimits | undefined {
  return useConfig().data?.pagination[list];
}

export function useStats() {
  const interval = useRefetchInterval();
  return useQuery({
    queryKey: queryKeys.stats,
    queryFn: ({ signal }) => api.getStats(signal),
    refetchInterval: interval,
    refetchIntervalInBackground: false,
  });
}

/**
 * The queues that have queued jobs (from the stats), for a queue picker: they change
 * rarely, so this reads the stats at most once a minute instead of on every poll.
 */
export function useActiveQueues() {
  return useQuery({
    queryKey: queryKeys.stats,
    queryFn: ({ signal }) => api.getStats(signal),
    select: (stats) => stats.queues,
    staleTime: 60_000,
    refetchInterval: 60_000,
    refetchIntervalInBackground: false,
  });
}

export function useThroughput(params: ThroughputParams) {
  const interval = useRefetchInterval();
  return useQuery({
    queryKey: queryKeys.throughput(params),
    queryFn: ({ signal }) => api.getThroughput(params, signal),
    refetchInterval: interval,
    refetchIntervalInBackground: false,
    placeholderData: keepPreviousData,
  });
}

export function useJobs(params: JobListParams) {
  const interval = useRefetchInterval();
  return useQuery({
    queryKey: queryKeys.jobs(params),
    queryFn: ({ signal }) => api.listJobs(params, signal),
    refetchInterval: interval,
    refetchIntervalInBackground: false,
    placeholderData: keepPreviousData,
  });
}

/** Per-type health over the last `minutes`, polled. */
export function useJobTypes(minutes: number) {
  const interval = useRefetchInterval();
  return useQuery({
    queryKey: queryKeys.jobTypes(minutes),
    queryFn: ({ signal }) => api.getJobTypes(minutes, signal),
    refetchInterval: interval,
    refetchIntervalInBackground: false,
    placeholderData: keepPreviousData,
  });
}

/** Worker threads seen over the last `minutes`, polled. */
export function useWorkers(minutes: number) {
  const interval = useRefetchInterval();
  return useQuery({
    queryKey: queryKeys.workers(minutes),
    queryFn: ({ signal }) => api.getWorkers(minutes, signal),
    refetchInterval: interval,
    refetchIntervalInBackground: false,
    placeholderData: keepPreviousData,
  });
}

/** The filters of a job count: one status, with the list's type and queue filters. */
export interface JobCountParams {
  status: JobStatus;
  type?: string | undefined;
  queue?: string | undefined;
}

/**
 * How many jobs match the list's filters in each of `statuses`, read from the list's
 * `count` (one row per request), polled like the list. `counts` is undefined until every
 * one has loaded, and nothing is fetched while `enabled` is false.
 */
export function useJobCounts(
  filters: { type?: string | undefined; queue?: string | undefined },
  statuses: readonly JobStatus[],
  enabled = true,
) {
  const interval = useRefetchInterval();
  return useQueries({
    queries: statuses.map((status) => {
      const params: JobCountParams = { status, type: filters.type, queue: filters.queue };
      return {
        queryKey: queryKeys.jobCount(params),
        queryFn: ({ signal }: { signal: AbortSignal }) =>
          api.listJobs({ ...params, limit: 1, offset: 0 }, signal).then((page) => page.count),
        refetchInterval: interval,
        refetchIntervalInBackground: false,
        enabled,
      };
    }),
    combine: (results) => ({
      counts: results.every((r) => r.data !== undefined)
        ? Object.fromEntries(statuses.map((s, i) => [s, results[i]!.data!]))
        : undefined,
      error: results.find((r) => r.error)?.error ?? null,
    }),
  });
}

export function useJob(id: string) {
  const interval = useRefetchInterval();
  return useQuery({
    queryKey: queryKeys.job(id),
    queryFn: ({ signal }) => api.getJob(id, signal),
    refetchInterval: interval,
    refetchIntervalInBackground: false,
  });
}

/**
 * A job's timeline, oldest first, one API response at a time (`fetchNextPage` when
 * `hasNextPage`: the last response's `Link` header announced a next page); `data` is
 * the events of every page loaded so far. It polls while
 * the job can still change (queued or running), and is refetched whenever the job
 * row itself changes, so the final event shows up even though polling stops once
 * the job is finished. A refetch reloads every loaded page, so events that arrive
 * fill the last page and then offer the next one.
 */
export function useJobEvents(id: string, job: Job | undefined) {
  const interval = useRefetchInterval();
  const queryClient = useQueryClient();
  const live = job === undefined || isLive(job.status);
  const version = job ? `${job.status}|${job.attempts}|${job.updated_at}` : null;
  const lastVersion = useRef<string | null>(null);

  useEffect(() => {
    if (version === null) return;
    if (lastVersion.current !== null && lastVersion.current !== version) {
      void queryClient.invalidateQueries({ queryKey: queryKeys.jobEvents(id) });
    }
    lastVersion.current = version;
  }, [id, version, queryClient]);

  return useInfiniteQuery({
    queryKey: queryKeys.jobEvents(id),
    queryFn: ({ signal, pageParam }) => api.getJobEvents(id, { cursor: pageParam ?? undefined }, signal),
    initialPageParam: null as string | null,
    // The next page is the one the response's Link header announced (rel="next").
    getNextPageParam: (last) => cursorFromLink(last.next),
    select: (data) => data.pages.flatMap((page) => page.events),
    refetchInterval: live ? interval : false,
    refetchIntervalInBackground: false,
  });
}

export function useEventFeed(params: EventFeedParams) {
  const interval = useRefetchInterval();
  return useQuery({
    queryKey: queryKeys.eventFeed(params),
    queryFn: ({ signal }) => api.listEvents(params, signal),
    refetchInterval: interval,
    refetchIntervalInBackground: false,
    placeholderData: keepPreviousData,
  });
}

/** Who is signed in (and whether the API needs anyone to be). */
export function useSession() {
  return useQuery({
    queryKey: queryKeys.session,
    queryFn: ({ signal }) => api.getSession(signal),
    staleTime: 60_000,
    retry: false,
  });
}

const notSession = (query: { queryKey: readonly unknown[] }) => query.queryKey[0] !== 'session';

/** Sign in with a session; every query is reloaded as the new user. */
export function useLogin() {
  const queryClient = useQueryClient();
  return useMutation<Session, ApiError, LoginInput>({
    mutationFn: (credentials) => api.login(credentials),
    onSuccess: (session) => {
      queryClient.setQueryData(queryKeys.session, session);
      void queryClient.invalidateQueries({ predicate: notSession });
    },
  });
}

/** End the session; the previous user's data leaves the cache. */
export function useLogout() {
  const queryClient = useQueryClient();
  return useMutation<void, ApiError, void>({
    mutationFn: () => api.logout(),
    onSuccess: () => {
      queryClient.removeQueries({ predicate: notSession });
      void queryClient.invalidateQueries({ queryKey: queryKeys.session });
    },
  });
}

export function useCreateJob() {
  const queryClient = useQueryClient();
  return useMutation<{ job: Job; created: boolean }, ApiError, JobCreateInput>({
    mutationFn: (input) => api.createJob(input),
    onSuccess: ({ job }) => {
      queryClient.setQueryData(queryKeys.job(job.id), job);
      void queryClient.invalidateQueries({ queryKey: ['jobs'] });
      void queryClient.invalidateQueries({ queryKey: ['events'] });
    },
  });
}

/** After one job changed: its timeline, the lists, counts and stats, and the feed. */
function refreshAfterJobChange(queryClient: QueryClient, id: string) {
  void queryClient.invalidateQueries({ queryKey: queryKeys.jobEvents(id) });
  void queryClient.invalidateQueries({ queryKey: ['jobs', 'list'] });
  void queryClient.invalidateQueries({ queryKey: ['jobs', 'count'] });
  void queryClient.invalidateQueries({ queryKey: queryKeys.stats });
  void queryClient.invalidateQueries({ queryKey: ['events'] });
}

export function useRetryJob(id: string) {
  const queryClient = useQueryClient();
  return useMutation<Job, ApiError, void>({
    mutationFn: () => api.retryJob(id),
    onSuccess: (job) => {
      queryClient.setQueryData(queryKeys.job(id), job);
      refreshAfterJobChange(queryClient, id);
    },
    // A 409 means the job moved on (someone else retried it): show where it is now.
    onError: () => void queryClient.invalidateQueries({ queryKey: queryKeys.job(id), exact: true }),
  });
}

/**
 * Cancel one job. `requested` is true when the job was running: it keeps running (with
 * `cancel_requested_at` set) until its worker sees the request, which polling then shows.
 */
export function useCancelJob(id: string) {
  const queryClient = useQueryClient();
  return useMutation<{ job: Job; requested: boolean }, ApiError, void>({
    mutationFn: () => api.cancelJob(id),
    onSuccess: ({ job }) => {
      queryClient.setQueryData(queryKeys.job(id), job);
      refreshAfterJobChange(queryClient, id);
    },
    onError: () => void queryClient.invalidateQueries({ queryKey: queryKeys.job(id), exact: true }),
  });
}

/** After a bulk action: every job query (lists, counts, pages, stats) and the feed. */
function refreshAfterBulkChange(queryClient: QueryClient) {
  void queryClient.invalidateQueries({ queryKey: ['jobs'] });
  void queryClient.invalidateQueries({ queryKey: ['events'] });
}

export function useBulkCancel() {
  const queryClient = useQueryClient();
  return useMutation<CancelOutcome, ApiError, JobSelection>({
    mutationFn: (selection) => api.bulkCancel(selection),
    onSettled: () => refreshAfterBulkChange(queryClient),
  });
}

export function useBulkRetry() {
  const queryClient = useQueryClient();
  return useMutation<RetryOutcome, ApiError, JobSelection>({
    mutationFn: (selection) => api.bulkRetry(selection),
    onSettled: () => refreshAfterBulkChange(queryClient),
  });
}
