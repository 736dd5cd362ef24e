/**
 * Data hooks, one file per resource of the API: the only place that knows query keys
 * (./keys.ts), polling and cache invalidation. Components receive plain data from these
 * and import them from here.
 *
 * No query function takes TanStack's abort `signal`. A query that reads it is cancelled
 * as soon as its last observer unmounts, and React's StrictMode (on under `make run`)
 * unmounts and remounts every component once on its first mount: each first request was
 * aborted and sent again. Without the signal, the remount joins the request in flight,
 * and a request a page left behind finishes into the cache (the client's own timeout
 * still bounds it). App.test.tsx renders the app under StrictMode and counts.
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
export { useJob, useJobAttempts, useJobCounts, useJobEvents, useJobs } from './jobs';
export {
  useBulkCancel,
  useBulkCreate,
  useBulkRetry,
  useCancelJob,
  useCreateJob,
  useRetryJob,
  useRunJobNow,
} from './jobActions';
export { useJobTypes } from './jobTypes';
export { useWorkers } from './workers';
export { useEventFeed } from './events';
export { useFindJob } from './search';
export { useQueues, useSetQueuePaused, useUpdateQueueLimits } from './queues';
export { useSchedules, useSetSchedulePaused, useTriggerSchedule } from './schedules';
export { useWorkflow, useWorkflows } from './workflows';
