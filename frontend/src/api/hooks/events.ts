/** The event feed of every job (`/job-events/`); one job's timeline is in ./jobs.ts. */
import { keepPreviousData } from '@tanstack/react-query';
import { usePolledQuery } from '../../polling/usePolledQuery';
import { api } from '../client';
import type { EventFeedParams } from '../types';
import { queryKeys } from './keys';

export function useEventFeed(params: EventFeedParams) {
  return usePolledQuery({
    queryKey: queryKeys.eventFeed(params),
    queryFn: () => api.listEvents(params),
    placeholderData: keepPreviousData,
  });
}
