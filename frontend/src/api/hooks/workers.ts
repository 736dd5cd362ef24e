/** Live worker processes and what their threads run (`/workers/`). */
import { keepPreviousData } from '@tanstack/react-query';
import { usePolledQuery } from '../../polling/usePolledQuery';
import { api } from '../client';
import { queryKeys } from './keys';

/** Every live worker process, idle ones too, polled. */
export function useWorkers() {
  return usePolledQuery({
    queryKey: queryKeys.workers,
    queryFn: () => api.getWorkers(),
    placeholderData: keepPreviousData,
  });
}
