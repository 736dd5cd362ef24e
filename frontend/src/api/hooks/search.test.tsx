import { act, waitFor } from '@testing-library/react';
import { delay, http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, JOB_ID, jobsPage, makeJob } from '../../test/fixtures';
import { renderHookWithClient } from '../../test/render';
import { server } from '../../test/server';
import { ApiError } from '../client';
import { useFindJob } from './search';

const OTHER_ID = '0b7f3c1e-5d2a-4c8e-9f10-2a3b4c5d6e7f';

/** Answers the two lookups; records the list's query strings. */
function serveLookups({ byId, byKey }: { byId: 'found' | 'missing' | 'broken'; byKey: Record<string, string> }) {
  const listQueries: Record<string, string>[] = [];
  server.use(
    http.get(`${API}/jobs/:id/`, ({ params }) => {
      if (byId === 'broken') return HttpResponse.json({ detail: 'Database unavailable.' }, { status: 503 });
      if (byId === 'missing') return HttpResponse.json({ detail: 'Not found.' }, { status: 404 });
      return HttpResponse.json(makeJob({ id: String(params.id) }));
    }),
    http.get(`${API}/jobs/`, ({ request }) => {
      const query = Object.fromEntries(new URL(request.url).searchParams);
      listQueries.push(query);
      const id = byKey[query.idempotency_key ?? ''];
      return HttpResponse.json(jobsPage(id ? [makeJob({ id })] : []));
    }),
  );
  return listQueries;
}

describe('useFindJob', () => {
  it('finds a job by its id, whatever its case and spaces, without asking for keys', async () => {
    const listQueries = serveLookups({ byId: 'found', byKey: {} });
    const { result } = renderHookWithClient(() => useFindJob());
    const found = await act(() => result.current.mutateAsync(`  ${JOB_ID.toUpperCase()} `));
    expect(found).toEqual({ kind: 'job', id: JOB_ID, via: 'id' });
    expect(listQueries).toEqual([]);
  });

  it('finds a job by its idempotency key through the exact list filter, one row', async () => {
    const listQueries = serveLookups({ byId: 'missing', byKey: { 'order-42': OTHER_ID } });
    const { result } = renderHookWithClient(() => useFindJob());
    const found = await act(() => result.current.mutateAsync('order-42'));
    expect(found).toEqual({ kind: 'job', id: OTHER_ID, via: 'idempotency_key' });
    expect(listQueries).toEqual([{ idempotency_key: 'order-42', limit: '1', offset: '0' }]);
  });

  it('tries a UUID as an idempotency key when no job has that id', async () => {
    const listQueries = serveLookups({ byId: 'missing', byKey: { [JOB_ID]: OTHER_ID } });
    const { result } = renderHookWithClient(() => useFindJob());
    const found = await act(() => result.current.mutateAsync(JOB_ID));
    expect(found).toEqual({ kind: 'job', id: OTHER_ID, via: 'idempotency_key' });
    expect(listQueries).toHaveLength(1);
  });

  it('resolves to not found when neither matches', async () => {
    serveLookups({ byId: 'missing', byKey: {} });
    const { result } = renderHookWithClient(() => useFindJob());
    const found = await act(() => result.current.mutateAsync(` ${JOB_ID} `));
    expect(found).toEqual({ kind: 'not_found', query: JOB_ID });
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
  });

  it('rejects with the API error when a lookup fails, instead of saying not found', async () => {
    const listQueries = serveLookups({ byId: 'broken', byKey: {} });
    const { result } = renderHookWithClient(() => useFindJob());
    const failure = await act(() => result.current.mutateAsync(JOB_ID).catch((error: unknown) => error));
    expect(failure).toBeInstanceOf(ApiError);
    expect(failure).toMatchObject({ status: 503, message: 'Database unavailable.' });
    expect(listQueries).toEqual([]); // a broken id lookup is not a missing job
    await waitFor(() => expect(result.current.error).toBe(failure));
  });

  it('is pending while it looks up, and asks the API once', async () => {
    let calls = 0;
    server.use(
      http.get(`${API}/jobs/`, async () => {
        calls += 1;
        await delay(100);
        return HttpResponse.json({ detail: 'Server error.' }, { status: 500 });
      }),
    );
    const { result } = renderHookWithClient(() => useFindJob());
    let settled: Promise<unknown> = Promise.resolve();
    act(() => {
      settled = result.current.mutateAsync('order-42').catch(() => undefined);
    });
    await waitFor(() => expect(result.current.isPending).toBe(true));
    await act(() => settled);
    await waitFor(() => expect(result.current.isPending).toBe(false));
    expect(result.current.isError).toBe(true);
    expect(calls).toBe(1);
  });
});
