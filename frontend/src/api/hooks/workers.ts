/** Worker threads and what they run (`/workers/`). */
import { keepPreviousData } from '@tanstack/react-query';
import { usePolledQuery } from '../../polling/usePolledQuery';
import { api } from '../client';
import { queryKeys } from './keys';

/** Worker threads seen over the last `minutes`, polled. */
export function useWorkers(minutes: number) {
  return usePolledQuery({
    queryKey: queryKeys.workers(minutes),
    queryFn: ({ signal }) => api.getWorkers(minutes, signal),
    placeholderData: keepPreviousData,
  });
}
