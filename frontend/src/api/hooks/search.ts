/** The header's job search (the rule itself, id first then idempotency key, is lib/search.ts). */
import { useMutation } from '@tanstack/react-query';
import { findJob, type JobLookups, type SearchOutcome } from '../../lib/search';
import { api, type ApiError } from '../client';

const lookups: JobLookups = {
  getJob: (id) => api.getJob(id),
  byIdempotencyKey: async (key) => (await api.listJobs({ idempotencyKey: key, limit: 1, offset: 0 })).results[0],
};

/**
 * Find a job by what was typed: `mutateAsync(query)` resolves to the job's id or to "not
 * found", and rejects when the API fails. A lookup on demand rather than a view kept
 * fresh, so a mutation in TanStack's terms: pending and error state for one call, nothing
 * cached, no retry, no polling.
 */
export function useFindJob() {
  return useMutation<SearchOutcome, ApiError, string>({ mutationFn: (query) => findJob(query, lookups) });
}
