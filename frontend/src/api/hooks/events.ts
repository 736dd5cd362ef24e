/** The event feed of every job (`/job-events/`); one job's timeline is in ./jobs.ts. */
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useRefetchInterval } from '../../polling/usePolling';
import { api } from '../client';
import type { EventFeedParams } from '../types';
import { queryKeys } from './keys';

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
