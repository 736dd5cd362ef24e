/**
 * The header's job search: a job id, else an idempotency key (which may itself look
 * like a UUID). The lookups are passed in so the rule can be tested without the API.
 */
import { ApiError } from '../api/client';
import type { Job } from '../api/types';
import { isUuid } from './params';

export type SearchOutcome =
  | { kind: 'job'; id: string; via: 'id' | 'idempotency_key' }
  | { kind: 'not_found'; query: string };

export interface JobLookups {
  getJob(id: string): Promise<Job>;
  /** The job created with this key, if any (the list's exact `idempotency_key` filter). */
  byIdempotencyKey(key: string): Promise<Job | undefined>;
}

export async function findJob(raw: string, lookups: JobLookups): Promise<SearchOutcome> {
  const query = raw.trim();
  if (isUuid(query)) {
    try {
      const job = await lookups.getJob(query.toLowerCase());
      return { kind: 'job', id: job.id, via: 'id' };
    } catch (error) {
      // No job with that id: it may still be someone's idempotency key.
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    }
  }
  const job = await lookups.byIdempotencyKey(query);
  return job ? { kind: 'job', id: job.id, via: 'idempotency_key' } : { kind: 'not_found', query };
}
