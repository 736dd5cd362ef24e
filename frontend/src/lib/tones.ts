import type { JobEventType, JobStatus } from '../api/types';

/** Colour roles; `muted` (outlined grey) marks what someone stopped on purpose. */
export type Tone = 'neutral' | 'info' | 'running' | 'success' | 'warning' | 'danger' | 'accent' | 'muted';

export const STATUS_TONE: Record<JobStatus, Tone> = {
  queued: 'neutral',
  waiting: 'info',
  running: 'running',
  succeeded: 'success',
  failed: 'danger',
  cancelled: 'muted',
};

/** Each status's icon, beside its word wherever a status is shown, so colour is never the only cue. */
export const STATUS_ICON: Record<JobStatus, string> = {
  queued: '○',
  waiting: '⧖',
  running: '◐',
  succeeded: '✓',
  failed: '✕',
  cancelled: '⊘',
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
  run_now: 'accent',
  cancel_requested: 'warning',
  cancelled: 'muted',
  // Given back unstarted at a worker's graceful shutdown: simply queued again, as `queued` is.
  released: 'neutral',
  // Its handler asked to run again later, the attempt not spent: queued, as `released` is.
  snoozed: 'neutral',
};
