import type { JobEventType, JobStatus } from '../api/types';

export type Tone = 'neutral' | 'info' | 'running' | 'success' | 'warning' | 'danger' | 'accent';

export const STATUS_TONE: Record<JobStatus, Tone> = {
  queued: 'neutral',
  running: 'running',
  succeeded: 'success',
  failed: 'danger',
};

export const EVENT_TONE: Record<JobEventType, Tone> = {
  created: 'neutral',
  claimed: 'running',
  progress: 'info',
  lease_renewed: 'info',
  succeeded: 'success',
  retry_scheduled: 'warning',
  failed: 'danger',
  timeout_requeued: 'warning',
  manual_retry: 'accent',
};
