/** The job list, its per-status counts, one job and its timeline (`/jobs/…`). */
import { keepPreviousData, useInfiniteQuery, useQueries, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { usePolledQuery, usePollOptions } from '../../polling/usePolledQuery';
import { api, cursorFromLink } from '../client';
import { isLive, type HeartbeatFilter, type Job, type JobCountParams, type JobListParams, type JobStatus } from '../types';
import { queryKeys } from './keys';

export function useJobs(params: JobListParams) {
  return usePolledQuery({
    queryKey: queryKeys.jobs(params),
    queryFn: () => api.listJobs(params),
    placeholderData: keepPreviousData,
  });
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
  const poll = usePollOptions();
  return useQueries({
    queries: statuses.map((status) => {
      const params: JobCountParams = { status, type: filters.type, queue: filters.queue };
      return {
        queryKey: queryKeys.jobCount(params),
        queryFn: () => api.listJobs({ ...params, limit: 1, offset: 0 }).then((page) => page.count),
        ...poll,
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
  return usePolledQuery({
    queryKey: queryKeys.job(id),
    queryFn: () => api.getJob(id),
  });
}

/**
 * Invalidate `key` whenever the job row changes (status, attempts, updated_at): what hangs
 * off a job (its timeline, its attempts) then shows its last change even though polling
 * stops once the job is finished.
 */
function useRefetchOnJobChange(key: readonly unknown[], job: Job | undefined) {
  const queryClient = useQueryClient();
  const version = job ? `${job.status}|${job.attempts}|${job.updated_at}` : null;
  const lastVersion = useRef<string | null>(null);
  const keyHash = JSON.stringify(key);

  useEffect(() => {
    if (version === null) return;
    if (lastVersion.current !== null && lastVersion.current !== version) {
      void queryClient.invalidateQueries({ queryKey: JSON.parse(keyHash) as unknown[] });
    }
    lastVersion.current = version;
  }, [keyHash, version, queryClient]);
}

/**
 * A job's attempts across every manual-retry round, oldest first; polled while the job
 * can still change, and reloaded whenever the job row changes.
 */
export function useJobAttempts(id: string, job: Job | undefined) {
  const poll = usePollOptions(job === undefined || isLive(job.status));
  useRefetchOnJobChange(queryKeys.jobAttempts(id), job);
  return useQuery({
    queryKey: queryKeys.jobAttempts(id),
    queryFn: () => api.getJobAttempts(id),
    ...poll,
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
export function useJobEvents(id: string, job: Job | undefined, heartbeats: HeartbeatFilter = 'include') {
  const live = job === undefined || isLive(job.status);
  const poll = usePollOptions(live);
  useRefetchOnJobChange(queryKeys.allJobEvents(id), job);

  return useInfiniteQuery({
    queryKey: queryKeys.jobEvents(id, heartbeats),
    queryFn: ({ pageParam }) => api.getJobEvents(id, { cursor: pageParam ?? undefined, heartbeats }),
    initialPageParam: null as string | null,
    // The next page is the one the response's Link header announced (rel="next").
    getNextPageParam: (last) => cursorFromLink(last.next),
    select: (data) => data.pages.flatMap((page) => page.events),
    ...poll,
  });
}
