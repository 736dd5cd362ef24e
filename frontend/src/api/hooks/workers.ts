/** Worker threads and what they run (`/workers/`). */
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useRefetchInterval } from '../../polling/usePolling';
import { api } from '../client';
import { queryKeys } from './keys';

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
