/**
 * Every query key of the dashboard, in one place because they nest: stats, throughput,
 * job types, lists, counts and single jobs all start with `'jobs'`, so invalidating
 * `queryKeys.allJobs` after a write reloads each of them. The hooks and the cache
 * invalidations read keys from here, never spell them out.
 */
import type {
  EventFeedParams,
  HeartbeatFilter,
  JobCountParams,
  JobListParams,
  ThroughputParams,
  WorkflowListParams,
} from '../types';

export const queryKeys = {
  health: ['health'] as const,
  config: ['config'] as const,
  session: ['session'] as const,

  /** Everything read from `/jobs/…`. */
  allJobs: ['jobs'] as const,
  stats: ['jobs', 'stats'] as const,
  throughput: (p: ThroughputParams) => ['jobs', 'throughput', p] as const,
  jobTypes: (minutes: number) => ['jobs', 'types', minutes] as const,
  /** Every page of the job list, whatever its filters. */
  jobLists: ['jobs', 'list'] as const,
  jobs: (p: JobListParams) => ['jobs', 'list', p] as const,
  /** Every per-status count of the job list. */
  jobCounts: ['jobs', 'count'] as const,
  jobCount: (p: JobCountParams) => ['jobs', 'count', p] as const,
  job: (id: string) => ['jobs', 'detail', id] as const,
  /** Every loaded view of a job's timeline (with and without heartbeats). */
  allJobEvents: (id: string) => ['jobs', 'detail', id, 'events'] as const,
  jobEvents: (id: string, heartbeats: HeartbeatFilter) => ['jobs', 'detail', id, 'events', heartbeats] as const,
  jobAttempts: (id: string) => ['jobs', 'detail', id, 'attempts'] as const,

  /** Every page of the event feed, whatever its filters. */
  allEvents: ['events'] as const,
  eventFeed: (p: EventFeedParams) => ['events', p] as const,

  workers: ['workers'] as const,

  /** Every queue with its counts and limits (`/queues/`). */
  queues: ['queues'] as const,
  /** Every schedule with its next run and last job (`/schedules/`). */
  schedules: ['schedules'] as const,

  /** Everything read from `/workflows/…`: their members' statuses change with any job write. */
  allWorkflows: ['workflows'] as const,
  workflows: (p: WorkflowListParams) => ['workflows', 'list', p] as const,
  workflow: (id: string) => ['workflows', 'detail', id] as const,
};
