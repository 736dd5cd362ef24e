/** Per-type health (`/jobs/types/`). */
import { keepPreviousData } from '@tanstack/react-query';
import { usePolledQuery } from '../../polling/usePolledQuery';
import { api } from '../client';
import { queryKeys } from './keys';

/** Per-type health over the last `minutes`, polled. */
export function useJobTypes(minutes: number) {
  return usePolledQuery({
    queryKey: queryKeys.jobTypes(minutes),
    queryFn: () => api.getJobTypes(minutes),
    placeholderData: keepPreviousData,
  });
}
