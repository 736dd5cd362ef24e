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

export function useCreateJob() {
  const queryClient = useQueryClient();
  return useMutation<{ job: Job; created: boolean; matched: CreateMatch | null }, ApiError, JobCreateInput>({
    mutationFn: (input) => api.createJob(input),
    onSuccess: ({ job }) => {
      queryClient.setQueryData(queryKeys.job(job.id), job);
      void queryClient.invalidateQueries({ queryKey: queryKeys.allJobs });
      void queryClient.invalidateQueries({ queryKey: queryKeys.allEvents });
    },
  });
}

/** Create up to `bulk_create_max` jobs in one request; the lists, stats and feed reload. */
export function useBulkCreate() {
  const queryClient = useQueryClient();
  return useMutation<BulkCreateResult, ApiError, BulkCreateInput>({
    mutationFn: (input) => api.bulkCreate(input),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.allJobs });
      void queryClient.invalidateQueries({ queryKey: queryKeys.allEvents });
    },
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
}

export function useRetryJob(id: string) {
  const queryClient = useQueryClient();
  return useMutation<Job, ApiError, void>({
    mutationFn: () => api.retryJob(id),
    onSuccess: (job) => {
      queryClient.setQueryData(queryKeys.job(id), job);
      refreshAfterJobChange(queryClient, id);
    },
    // A 409 means the job moved on (someone else retried it): show where it is now.
    onError: () => void queryClient.invalidateQueries({ queryKey: queryKeys.job(id), exact: true }),
  });
}

/** Run one job now: a queued job not yet due becomes due at once (a `run_now` event). */
export function useRunJobNow(id: string) {
  const queryClient = useQueryClient();
  return useMutation<Job, ApiError, void>({
    mutationFn: () => api.runJobNow(id),
    onSuccess: (job) => {
      queryClient.setQueryData(queryKeys.job(id), job);
      refreshAfterJobChange(queryClient, id);
    },
    onError: () => void queryClient.invalidateQueries({ queryKey: queryKeys.job(id), exact: true }),
  });
}

/**
 * Cancel one job. `requested` is true when the job was running: it keeps running (with
 * `cancel_requested_at` set) until its worker sees the request, which polling then shows.
 */
export function useCancelJob(id: string) {
  const queryClient = useQueryClient();
  return useMutation<{ job: Job; requested: boolean }, ApiError, void>({
    mutationFn: () => api.cancelJob(id),
    onSuccess: ({ job }) => {
      queryClient.setQueryData(queryKeys.job(id), job);
      refreshAfterJobChange(queryClient, id);
    },
    onError: () => void queryClient.invalidateQueries({ queryKey: queryKeys.job(id), exact: true }),
  });
}

/** After a bulk action: every job query (lists, counts, pages, stats) and the feed. */
function refreshAfterBulkChange(queryClient: QueryClient) {
  void queryClient.invalidateQueries({ queryKey: queryKeys.allJobs });
  void queryClient.invalidateQueries({ queryKey: queryKeys.allEvents });
}

export function useBulkCancel() {
  const queryClient = useQueryClient();
  return useMutation<CancelOutcome, ApiError, JobSelection>({
    mutationFn: (selection) => api.bulkCancel(selection),
    onSettled: () => refreshAfterBulkChange(queryClient),
  });
}

export function useBulkRetry() {
  const queryClient = useQueryClient();
  return useMutation<RetryOutcome, ApiError, JobSelection>({
    mutationFn: (selection) => api.bulkRetry(selection),
    onSettled: () => refreshAfterBulkChange(queryClient),
  });
}
