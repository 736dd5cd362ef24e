import { describe, expect, it, vi } from 'vitest';
import { ApiError } from '../api/client';
import { JOB_ID, makeJob } from '../test/fixtures';
import { findJob } from './search';

const notFound = () => Promise.reject(new ApiError('http', 404, 'Not found.'));

describe('findJob', () => {
  it('goes to the job with that id', async () => {
    const byKey = vi.fn();
    const found = await findJob(`  ${JOB_ID.toUpperCase()} `, { getJob: () => Promise.resolve(makeJob()), byIdempotencyKey: byKey });
    expect(found).toEqual({ kind: 'job', id: JOB_ID, via: 'id' });
    expect(byKey).not.toHaveBeenCalled();
  });

  it('takes anything else as an idempotency key, read through the list filter', async () => {
    const getJob = vi.fn();
    const byKey = vi.fn(() => Promise.resolve(makeJob()));
    expect(await findJob('order-42', { getJob, byIdempotencyKey: byKey })).toEqual({
      kind: 'job',
      id: JOB_ID,
      via: 'idempotency_key',
    });
    expect(getJob).not.toHaveBeenCalled();
    expect(byKey).toHaveBeenCalledWith('order-42');
  });

  it('tries a UUID that names no job as a key too', async () => {
    const key = '0b7ad3e4-0000-4000-8000-000000000000';
    const byKey = vi.fn(() => Promise.resolve(undefined));
    expect(await findJob(key, { getJob: notFound, byIdempotencyKey: byKey })).toEqual({ kind: 'not_found', query: key });
    expect(byKey).toHaveBeenCalledWith(key);
  });

  it('passes on an error other than 404', async () => {
    const down = () => Promise.reject(new ApiError('network', 0, 'Cannot reach the API.'));
    await expect(findJob(JOB_ID, { getJob: down, byIdempotencyKey: vi.fn() })).rejects.toThrow('Cannot reach the API.');
  });
});
