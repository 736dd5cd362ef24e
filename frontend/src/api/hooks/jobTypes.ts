/** Per-type health (`/jobs/types/`). */
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useRefetchInterval } from '../../polling/usePolling';
import { api } from '../client';
import { queryKeys } from './keys';

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
