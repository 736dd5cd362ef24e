/** Queues (`/queues/`): counts, pause state and limits, and the writes on them. */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { usePolledQuery } from '../../polling/usePolledQuery';
import { api, type ApiError } from '../client';
import type { Queue, QueueLimitsInput } from '../types';
import { storeByName } from './cache';
import { queryKeys } from './keys';

/** Every known queue, polled. */
export function useQueues() {
  return usePolledQuery({
    queryKey: queryKeys.queues,
    queryFn: () => api.listQueues(),
  });
}

/** Pause or resume one queue. */
export function useSetQueuePaused() {
  const queryClient = useQueryClient();
  return useMutation<Queue, ApiError, { name: string; paused: boolean }>({
    mutationFn: ({ name, paused }) => (paused ? api.pauseQueue(name) : api.resumeQueue(name)),
    onSuccess: (queue) => storeByName(queryClient, queryKeys.queues, queue),
  });
}

/** Change one queue's limits; a 400's field errors are on the mutation's error. */
export function useUpdateQueueLimits() {
  const queryClient = useQueryClient();
  return useMutation<Queue, ApiError, { name: string; limits: QueueLimitsInput }>({
    mutationFn: ({ name, limits }) => api.updateQueueLimits(name, limits),
    onSuccess: (queue) => storeByName(queryClient, queryKeys.queues, queue),
  });
}
