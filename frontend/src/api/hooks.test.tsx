import { focusManager } from '@tanstack/react-query';
import { act, waitFor } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { afterEach, describe, expect, it } from 'vitest';
import { usePolling } from '../polling/usePolling';
import { API, JOB_ID, jobsPage, makeEvent, makeJob, stats } from '../test/fixtures';
import { renderHookWithClient } from '../test/render';
import { server, timelineResponse } from '../test/server';
import { ApiError } from './client';
import {
  connectionFromHealth,
  queryKeys,
  useConnection,
  useJob,
  useJobEvents,
  useJobs,
  useRetryJob,
  useStats,
} from './hooks';
import type { Job } from './types';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function countingStats() {
  const calls = { n: 0 };
  server.use(
    http.get(`${API}/jobs/stats/`, () => {
      calls.n += 1;
      return HttpResponse.json(stats);
    }),
  );
  return calls;
}

afterEach(() => {
  focusManager.setFocused(undefined);
});

describe('polling', () => {
  it('refetches on the chosen interval', async () => {
    const calls = countingStats();
    const { result } = renderHookWithClient(() => useStats(), { pollIntervalMs: 40 });
    await waitFor(() => expect(result.current.data).toEqual(stats));
    await waitFor(() => expect(calls.n).toBeGreaterThanOrEqual(4), { timeout: 2000 });
  });

  it('stops when paused and resumes when unpaused', async () => {
    const calls = countingStats();
    const { result } = renderHookWithClient(() => ({ stats: useStats(), polling: usePolling() }), {
      pollIntervalMs: 40,
    });
    await waitFor(() => expect(result.current.stats.isSuccess).toBe(true));
    act(() => result.current.polling.setPaused(true));
    await sleep(60); // let an in-flight refetch land
    const atPause = calls.n;
    await sleep(250);
    expect(calls.n).toBe(atPause);
    act(() => result.current.polling.setPaused(false));
    await waitFor(() => expect(calls.n).toBeGreaterThan(atPause + 1), { timeout: 2000 });
  });

  it('does not poll while the tab is hidden', async () => {
    const calls = countingStats();
    const { result } = renderHookWithClient(() => useStats(), { pollIntervalMs: 40 });
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    act(() => focusManager.setFocused(false));
    await sleep(60);
    const hiddenAt = calls.n;
    await sleep(250);
    expect(calls.n).toBe(hiddenAt);
    act(() => focusManager.setFocused(true));
    await waitFor(() => expect(calls.n).toBeGreaterThan(hiddenAt), { timeout: 2000 });
  });
});

describe('useJobs', () => {
  it('keeps showing the previous page while the next one loads', async () => {
    server.use(
      http.get(`${API}/jobs/`, async ({ request }) => {
        const offset = Number(new URL(request.url).searchParams.get('offset'));
        if (offset > 0) await sleep(100);
        return HttpResponse.json(jobsPage([makeJob({ id: `job-${offset}` })], 30));
      }),
    );
    let offset = 0;
    const { result, rerender } = renderHookWithClient(() => useJobs({ limit: 25, offset }));
    await waitFor(() => expect(result.current.data?.results[0]?.id).toBe('job-0'));
    offset = 25;
    rerender();
    expect(result.current.isPlaceholderData).toBe(true);
    expect(result.current.data?.results[0]?.id).toBe('job-0');
    await waitFor(() => expect(result.current.data?.results[0]?.id).toBe('job-25'));
    expect(result.current.isPlaceholderData).toBe(false);
  });
});

describe('useJobEvents', () => {
  function serveJob(initial: Job, initialEvents = [makeEvent()]) {
    const state = { job: initial, events: initialEvents, eventCalls: 0 };
    server.use(
      http.get(`${API}/jobs/${JOB_ID}/`, () => HttpResponse.json(state.job)),
      http.get(`${API}/jobs/${JOB_ID}/events/`, () => {
        state.eventCalls += 1;
        return timelineResponse(state.events);
      }),
    );
    return state;
  }

  function renderJobAndEvents(pollIntervalMs: number) {
    return renderHookWithClient(
      () => {
        const j = useJob(JOB_ID);
        return { job: j, events: useJobEvents(JOB_ID, j.data) };
      },
      { pollIntervalMs },
    );
  }

  it.each(['failed', 'cancelled'] as const)('polls while the job can change and stops once it is %s', async (end) => {
    const state = serveJob(makeJob({ status: 'running', attempts: 1 }));
    const { result } = renderJobAndEvents(40);
    await waitFor(() => expect(state.eventCalls).toBeGreaterThanOrEqual(3), { timeout: 2000 });
    state.job = makeJob({ status: end, attempts: 1, updated_at: '2026-06-21T02:40:00+03:30' });
    await waitFor(() => expect(result.current.job.data?.status).toBe(end), { timeout: 2000 });
    await sleep(80);
    const settled = state.eventCalls;
    await sleep(250);
    expect(state.eventCalls).toBe(settled);
  });

  it('refetches the timeline whenever the job row changes', async () => {
    // Timer polling is effectively off here: only a change of the job can bring new events.
    const state = serveJob(makeJob({ status: 'running', attempts: 1 }), [
      makeEvent(),
      makeEvent({ id: 2, type: 'claimed', attempt: 1 }),
    ]);
    const { result, queryClient } = renderJobAndEvents(60_000);
    await waitFor(() => expect(result.current.events.data).toHaveLength(2));

    state.events = [...state.events, makeEvent({ id: 3, type: 'succeeded', attempt: 1 })];
    await act(() => queryClient.refetchQueries({ queryKey: queryKeys.job(JOB_ID), exact: true }));
    expect(result.current.events.data).toHaveLength(2); // unchanged job row: no refetch

    state.job = makeJob({ status: 'succeeded', attempts: 1, updated_at: '2026-06-21T02:40:00+03:30' });
    await act(() => queryClient.refetchQueries({ queryKey: queryKeys.job(JOB_ID), exact: true }));
    await waitFor(() => expect(result.current.events.data?.map((e) => e.type)).toEqual(['created', 'claimed', 'succeeded']));
  });
});

describe('useRetryJob', () => {
  it('puts the requeued job in the cache and reloads its events', async () => {
    let events = [makeEvent({ id: 7, type: 'failed', attempt: 1 })];
    server.use(
      http.get(`${API}/jobs/${JOB_ID}/events/`, () => timelineResponse(events)),
      http.post(`${API}/jobs/${JOB_ID}/retry/`, () => {
        events = [...events, makeEvent({ id: 8, type: 'manual_retry', attempt: 0 })];
        return HttpResponse.json(makeJob({ status: 'queued' }));
      }),
    );
    const { result, queryClient } = renderHookWithClient(() => ({
      retry: useRetryJob(JOB_ID),
      events: useJobEvents(JOB_ID, makeJob({ status: 'failed', attempts: 1 })),
    }));
    queryClient.setQueryData(queryKeys.job(JOB_ID), makeJob({ status: 'failed' }));
    await waitFor(() => expect(result.current.events.data).toHaveLength(1));
    await act(() => result.current.retry.mutateAsync());
    expect(queryClient.getQueryData<Job>(queryKeys.job(JOB_ID))?.status).toBe('queued');
    await waitFor(() => expect(result.current.events.data?.at(-1)?.type).toBe('manual_retry'));
  });
});

describe('connection state', () => {
  it('maps health results to banner states', () => {
    expect(connectionFromHealth(undefined, null)).toEqual({ state: 'checking' });
    expect(connectionFromHealth({ ok: true, database: 'ok' }, null)).toEqual({ state: 'ok' });
    expect(connectionFromHealth({ ok: false, database: 'error', detail: 'db down' }, null)).toEqual({
      state: 'degraded',
      detail: 'db down',
    });
    expect(connectionFromHealth(undefined, new ApiError('network', 0, 'x'))).toEqual({ state: 'unreachable' });
    const http503 = new ApiError('http', 503, 'x', { ok: false, database: 'error', detail: 'conn refused' });
    expect(connectionFromHealth(undefined, http503)).toEqual({ state: 'degraded', detail: 'conn refused' });
  });

  it('reports unreachable and recovers on its own when the API returns', async () => {
    server.use(http.get(`${API}/health/`, () => HttpResponse.error()));
    const { result } = renderHookWithClient(() => useConnection(), { pollIntervalMs: 40 });
    await waitFor(() => expect(result.current.state).toBe('unreachable'));
    server.use(http.get(`${API}/health/`, () => HttpResponse.json({ ok: true, database: 'ok' })));
    await waitFor(() => expect(result.current.state).toBe('ok'), { timeout: 2000 });
  });
});
