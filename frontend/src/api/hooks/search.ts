/** The header's job search (the reading of the lookup's answers is lib/search.ts). */
import { useMutation } from '@tanstack/react-query';
import { findJob, type SearchOutcome } from '../../lib/search';
import { api, type ApiError } from '../client';

/**
 * Find a job by what was typed (an id, a unique id prefix or an idempotency key):
 * `mutateAsync(query)` resolves to the job's id, "not found" or "ambiguous", and rejects
 * when the API fails. A lookup on demand rather than a view kept fresh, so a mutation in
 * TanStack's terms: pending and error state for one call, nothing cached, no retry, no polling.
 */
export function useFindJob() {
  return useMutation<SearchOutcome, ApiError, string>({ mutationFn: (query) => findJob(query, (q) => api.lookupJob(q)) });
}
