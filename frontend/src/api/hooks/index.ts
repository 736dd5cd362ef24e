/**
 * Data hooks, one file per resource of the API: the only place that knows query keys
 * (./keys.ts), polling and cache invalidation. Components receive plain data from these
 * and import them from here.
 */
export { queryKeys } from './keys';
export {
  OFFLINE_RECHECK_MS,
  connectionFromHealth,
  offlineRecheckMs,
  useConnection,
  useHealth,
  type ConnectionState,
} from './health';
export { useConfig, usePageLimits } from './config';
export { useCanChange, useLogin, useLogout, useSession } from './session';
export { useActiveQueues, useStats, useThroughput } from './stats';
export { useJob, useJobCounts, useJobEvents, useJobs } from './jobs';
export { useBulkCancel, useBulkRetry, useCancelJob, useCreateJob, useRetryJob } from './jobActions';
export { useJobTypes } from './jobTypes';
export { useWorkers } from './workers';
export { useEventFeed } from './events';
export { useFindJob } from './search';
export { useQueues, useSetQueuePaused, useUpdateQueueLimits } from './queues';
export { useSchedules, useSetSchedulePaused, useTriggerSchedule } from './schedules';
