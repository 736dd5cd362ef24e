/** Schedules (`/schedules/`): next runs and last jobs, pause, resume and trigger. */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { usePolledQuery } from '../../polling/usePolledQuery';
import { api, type ApiError } from '../client';
import type { Schedule, ScheduleTrigger } from '../types';
import { storeByName } from './cache';
import { queryKeys } from './keys';

/** Every schedule, polled. */
export function useSchedules() {
  return usePolledQuery({
    queryKey: queryKeys.schedules,
    queryFn: () => api.listSchedules(),
  });
}

/** Pause or resume one schedule. */
export function useSetSchedulePaused() {
  const queryClient = useQueryClient();
  return useMutation<Schedule, ApiError, { name: string; paused: boolean }>({
    mutationFn: ({ name, paused }) => (paused ? api.pauseSchedule(name) : api.resumeSchedule(name)),
    onSuccess: (schedule) => storeByName(queryClient, queryKeys.schedules, schedule),
  });
}

/** Enqueue one job of a schedule now: the new job is cached, and every job view and queue reloaded. */
export function useTriggerSchedule() {
  const queryClient = useQueryClient();
  return useMutation<ScheduleTrigger, ApiError, string>({
    mutationFn: (name) => api.triggerSchedule(name),
    onSuccess: ({ schedule, job }) => {
      storeByName(queryClient, queryKeys.schedules, schedule);
      queryClient.setQueryData(queryKeys.job(job.id), job);
      void queryClient.invalidateQueries({ queryKey: queryKeys.allJobs });
      void queryClient.invalidateQueries({ queryKey: queryKeys.allEvents });
      void queryClient.invalidateQueries({ queryKey: queryKeys.queues });
    },
  });
}
