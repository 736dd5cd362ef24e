/**
 * The header's job search: one call to `GET /api/jobs/lookup/?q=`, which takes a job id,
 * a unique id prefix (8+ hex characters, dashes ignored) or an exact idempotency key.
 * The lookup is passed in so the reading of its answers can be tested without the API.
 */
import { ApiError } from '../api/client';
import type { JobLookup } from '../api/types';

export type SearchOutcome =
  | { kind: 'job'; id: string; via: JobLookup['match'] }
  | { kind: 'not_found'; query: string; message: string }
  | { kind: 'ambiguous'; query: string; message: string };

/** The fewest hex digits of an id the lookup takes as a prefix (the API's ID_PREFIX_MIN_LENGTH). */
export const SHORT_ID_MIN_LENGTH = 8;

export type LookupFn = (query: string) => Promise<JobLookup>;

/** The first message of a DRF 400 body's `q` field, else the error's own message. */
function queryProblem(error: ApiError): string {
  return error.fieldErrors.q?.[0] ?? error.message;
}

export async function findJob(raw: string, lookup: LookupFn): Promise<SearchOutcome> {
  const query = raw.trim();
  try {
    const found = await lookup(query);
    return { kind: 'job', id: found.job.id, via: found.match };
  } catch (error) {
    if (error instanceof ApiError && error.kind === 'http') {
      if (error.status === 404) {
        // Too short to be a short id: say what would work, not just that nothing matched.
        const hex = query.replace(/-/g, '');
        if (/^[0-9a-f]+$/i.test(hex) && hex.length < SHORT_ID_MIN_LENGTH) {
          return {
            kind: 'not_found',
            query,
            message:
              `No job has the idempotency key “${query}”. To find a job by its id, type at least ` +
              `${SHORT_ID_MIN_LENGTH} characters of it (the lists show 8).`,
          };
        }
        return { kind: 'not_found', query, message: `No job has the id, id prefix or idempotency key “${query}”.` };
      }
      // A prefix several jobs share: the API says how many and to type more.
      if (error.status === 400) return { kind: 'ambiguous', query, message: queryProblem(error) };
    }
    throw error;
  }
}
