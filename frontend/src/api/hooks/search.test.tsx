import { act, waitFor } from '@testing-library/react';
import { delay, http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, JOB_ID, makeJob } from '../../test/fixtures';
import { renderHookWithClient } from '../../test/render';
import { server } from '../../test/server';
import { ApiError } from '../client';
import { useFindJob } from './search';

/** Answers the lookup from `jobs` (query → job id); records the queries. */
function serveLookup(jobs: Record<string, string>, status = 404) {
  const queries: string[] = [];
  server.use(
    http.get(`${API}/jobs/lookup/`, ({ request }) => {
      const q = new URL(request.url).searchParams.get('q') ?? '';
      queries.push(q);
      const id = jobs[q];
      if (id) return HttpResponse.json({ match: 'id_prefix', job: makeJob({ id }) });
      if (status === 400) return HttpResponse.json({ q: [`'${q}' matches 2 jobs: type more characters.`] }, { status });
      return HttpResponse.json({ detail: 'No job.' }, { status });
    }),
  );
  return queries;
}

describe('useFindJob', () => {
  it('finds a job by a short id through one lookup, trimmed', async () => {
    const queries = serveLookup({ '8421aca2': JOB_ID });
    const { result } = renderHookWithClient(() => useFindJob());
    const found = await act(() => result.current.mutateAsync(' 8421aca2 '));
    expect(found).toEqual({ kind: 'job', id: JOB_ID, via: 'id_prefix' });
    expect(queries).toEqual(['8421aca2']);
  });

  it('resolves to not found on a 404', async () => {
    serveLookup({});
    const { result } = renderHookWithClient(() => useFindJob());
    const found = await act(() => result.current.mutateAsync('order-42'));
    expect(found).toMatchObject({ kind: 'not_found', query: 'order-42' });
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
  });

  it('resolves to ambiguous on a 400 with the API message', async () => {
    serveLookup({}, 400);
    const { result } = renderHookWithClient(() => useFindJob());
    const found = await act(() => result.current.mutateAsync('fe7c1234'));
    expect(found).toEqual({
      kind: 'ambiguous',
      query: 'fe7c1234',
      message: "'fe7c1234' matches 2 jobs: type more characters.",
    });
  });

  it('rejects with the API error when the lookup fails, instead of saying not found', async () => {
    serveLookup({}, 503);
    const { result } = renderHookWithClient(() => useFindJob());
    const failure = await act(() => result.current.mutateAsync(JOB_ID).catch((error: unknown) => error));
    expect(failure).toBeInstanceOf(ApiError);
    expect(failure).toMatchObject({ status: 503 });
    await waitFor(() => expect(result.current.error).toBe(failure));
  });

  it('is pending while it looks up, and asks the API once', async () => {
    let calls = 0;
    server.use(
      http.get(`${API}/jobs/lookup/`, async () => {
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
