/** The job list, its per-status counts, one job and its timeline (`/jobs/…`). */
import { keepPreviousData, useInfiniteQuery, useQueries, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { usePolledQuery, usePollOptions } from '../../polling/usePolledQuery';
import { api, cursorFromLink } from '../client';
import { isLive, type Job, type JobCountParams, type JobListParams, type JobStatus } from '../types';
import { queryKeys } from './keys';

export function useJobs(params: JobListParams) {
  return usePolledQuery({
    queryKey: queryKeys.jobs(params),
    queryFn: ({ signal }) => api.listJobs(params, signal),
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
        queryFn: ({ signal }: { signal: AbortSignal }) =>
          api.listJobs({ ...params, limit: 1, offset: 0 }, signal).then((page) => page.count),
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
    queryFn: ({ signal }) => api.getJob(id, signal),
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
  const queryClient = useQueryClient();
  const live = job === undefined || isLive(job.status);
  const poll = usePollOptions(live);
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
    ...poll,
  });
}
