/**
 * The writes on jobs: create, retry, cancel, and the bulk actions. Each puts what the
 * API answered in the cache and reloads the views it changed.
 */
import { useMutation, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { api, type ApiError } from '../client';
import type {
  BulkCreateInput,
  BulkCreateResult,
  CancelOutcome,
  CreateMatch,
  Job,
  JobCreateInput,
  JobSelection,
  RetryOutcome,
} from '../types';
import { queryKeys } from './keys';

/** After a create or a bulk action: every job query (lists, counts, pages, stats), the feed and the workflows. */
function refreshEveryJobView(queryClient: QueryClient) {
  void queryClient.invalidateQueries({ queryKey: queryKeys.allJobs });
  void queryClient.invalidateQueries({ queryKey: queryKeys.allEvents });
  void queryClient.invalidateQueries({ queryKey: queryKeys.allWorkflows });
}

export function useCreateJob() {
  const queryClient = useQueryClient();
  return useMutation<{ job: Job; created: boolean; matched: CreateMatch | null }, ApiError, JobCreateInput>({
    mutationFn: (input) => api.createJob(input),
    onSuccess: ({ job }) => {
      queryClient.setQueryData(queryKeys.job(job.id), job);
      refreshEveryJobView(queryClient);
    },
  });
}

/** Create up to `bulk_create_max` jobs in one request; the lists, stats and feed reload. */
export function useBulkCreate() {
  const queryClient = useQueryClient();
  return useMutation<BulkCreateResult, ApiError, BulkCreateInput>({
    mutationFn: (input) => api.bulkCreate(input),
    onSuccess: () => refreshEveryJobView(queryClient),
  });
}

/** After one job changed: its timeline and attempts, the lists, counts and stats, and the feed. */
function refreshAfterJobChange(queryClient: QueryClient, id: string) {
  void queryClient.invalidateQueries({ queryKey: queryKeys.allJobEvents(id) });
  void queryClient.invalidateQueries({ queryKey: queryKeys.jobAttempts(id) });
  void queryClient.invalidateQueries({ queryKey: queryKeys.jobLists });
  void queryClient.invalidateQueries({ queryKey: queryKeys.jobCounts });
  void queryClient.invalidateQueries({ queryKey: queryKeys.stats });
  void queryClient.invalidateQueries({ queryKey: queryKeys.allEvents });
  // A retry or cancel changes a workflow's counts and state, and its graph's colours.
  void queryClient.invalidateQueries({ queryKey: queryKeys.allWorkflows });
}

/**
 * A write on one job: the job the API answered with is stored and the views it changed
 * reload. On an error the job itself reloads: a 409 means it moved on (someone else
 * retried or cancelled it), and the page then shows where it is now.
 */
function useJobWrite<TResult>(id: string, write: () => Promise<TResult>, jobOf: (result: TResult) => Job) {
  const queryClient = useQueryClient();
  return useMutation<TResult, ApiError, void>({
    mutationFn: write,
    onSuccess: (result) => {
      queryClient.setQueryData(queryKeys.job(id), jobOf(result));
      refreshAfterJobChange(queryClient, id);
    },
    onError: () => void queryClient.invalidateQueries({ queryKey: queryKeys.job(id), exact: true }),
  });
}

export function useRetryJob(id: string) {
  return useJobWrite(id, () => api.retryJob(id), (job) => job);
}

/** Run one job now: a queued job not yet due becomes due at once (a `run_now` event). */
export function useRunJobNow(id: string) {
  return useJobWrite(id, () => api.runJobNow(id), (job) => job);
}

/**
 * Cancel one job. `requested` is true when the job was running: it keeps running (with
 * `cancel_requested_at` set) until its worker sees the request, which polling then shows.
 */
export function useCancelJob(id: string) {
  return useJobWrite(id, () => api.cancelJob(id), ({ job }) => job);
}

export function useBulkCancel() {
  const queryClient = useQueryClient();
  return useMutation<CancelOutcome, ApiError, JobSelection>({
    mutationFn: (selection) => api.bulkCancel(selection),
    onSettled: () => refreshEveryJobView(queryClient),
  });
}

export function useBulkRetry() {
  const queryClient = useQueryClient();
  return useMutation<RetryOutcome, ApiError, JobSelection>({
    mutationFn: (selection) => api.bulkRetry(selection),
    onSettled: () => refreshEveryJobView(queryClient),
  });
}
