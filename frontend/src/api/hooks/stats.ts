/** Queue counts (`/jobs/stats/`) and finished jobs over time (`/jobs/throughput/`). */
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { usePolledQuery } from '../../polling/usePolledQuery';
import { api } from '../client';
import type { ThroughputParams } from '../types';
import { queryKeys } from './keys';

export function useStats() {
  return usePolledQuery({
    queryKey: queryKeys.stats,
    queryFn: () => api.getStats(),
  });
}

/**
 * The queues that have queued jobs (from the stats), for a queue picker: they change
 * rarely, so this reads the stats at most once a minute instead of on every poll. Its
 * timer is its own, not the header's: it keeps running while polling is paused.
 */
export function useActiveQueues() {
  return useQuery({
    queryKey: queryKeys.stats,
    queryFn: () => api.getStats(),
    select: (stats) => stats.queues,
    staleTime: 60_000,
    refetchInterval: 60_000,
    refetchIntervalInBackground: false,
  });
}

export function useThroughput(params: ThroughputParams) {
  return usePolledQuery({
    queryKey: queryKeys.throughput(params),
    queryFn: () => api.getThroughput(params),
    placeholderData: keepPreviousData,
  });
}
