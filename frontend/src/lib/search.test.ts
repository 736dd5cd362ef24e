import { describe, expect, it, vi } from 'vitest';
import { ApiError } from '../api/client';
import { JOB_ID, makeJob } from '../test/fixtures';
import { findJob } from './search';

describe('findJob', () => {
  it('goes to the job the lookup names, trimmed, saying how it matched', async () => {
    const lookup = vi.fn(() => Promise.resolve({ match: 'id_prefix' as const, job: makeJob() }));
    expect(await findJob('  8421aca2 ', lookup)).toEqual({ kind: 'job', id: JOB_ID, via: 'id_prefix' });
    expect(lookup).toHaveBeenCalledWith('8421aca2');
  });

  it('says not found on a 404', async () => {
    const lookup = () => Promise.reject(new ApiError('http', 404, 'No job…', { detail: 'No job…' }));
    expect(await findJob('order-42', lookup)).toEqual({
      kind: 'not_found',
      query: 'order-42',
      message: 'No job has the id, id prefix or idempotency key “order-42”.',
    });
  });

  it("passes on the API's message for an ambiguous prefix", async () => {
    const body = { q: ["'fe7c1234' matches 3 jobs: type more characters."] };
    const lookup = () => Promise.reject(new ApiError('http', 400, 'q: …', body));
    expect(await findJob('fe7c1234', lookup)).toEqual({
      kind: 'ambiguous',
      query: 'fe7c1234',
      message: "'fe7c1234' matches 3 jobs: type more characters.",
    });
  });

  it('passes on any other error', async () => {
    const down = () => Promise.reject(new ApiError('network', 0, 'Cannot reach the API.'));
    await expect(findJob(JOB_ID, down)).rejects.toThrow('Cannot reach the API.');
  });
});
