/** Schedules (`/schedules/`): next runs and last jobs, pause, resume and trigger. */
import { useMutation, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { usePolledQuery } from '../../polling/usePolledQuery';
import { api, type ApiError } from '../client';
import type { Schedule, ScheduleTrigger } from '../types';
import { queryKeys } from './keys';

/** Every schedule, polled. */
export function useSchedules() {
  return usePolledQuery({
    queryKey: queryKeys.schedules,
    queryFn: () => api.listSchedules(),
  });
}

function storeSchedule(queryClient: QueryClient, schedule: Schedule) {
  queryClient.setQueryData<Schedule[]>(queryKeys.schedules, (schedules) =>
    schedules?.map((s) => (s.name === schedule.name ? schedule : s)),
  );
  void queryClient.invalidateQueries({ queryKey: queryKeys.schedules });
}

/** Pause or resume one schedule. */
export function useSetSchedulePaused() {
  const queryClient = useQueryClient();
  return useMutation<Schedule, ApiError, { name: string; paused: boolean }>({
    mutationFn: ({ name, paused }) => (paused ? api.pauseSchedule(name) : api.resumeSchedule(name)),
    onSuccess: (schedule) => storeSchedule(queryClient, schedule),
  });
}

/** Enqueue one job of a schedule now: the new job is cached, and every job view and queue reloaded. */
export function useTriggerSchedule() {
  const queryClient = useQueryClient();
  return useMutation<ScheduleTrigger, ApiError, string>({
    mutationFn: (name) => api.triggerSchedule(name),
    onSuccess: ({ schedule, job }) => {
      storeSchedule(queryClient, schedule);
      queryClient.setQueryData(queryKeys.job(job.id), job);
      void queryClient.invalidateQueries({ queryKey: queryKeys.allJobs });
      void queryClient.invalidateQueries({ queryKey: queryKeys.allEvents });
      void queryClient.invalidateQueries({ queryKey: queryKeys.queues });
    },
  });
}
