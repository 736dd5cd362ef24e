import { act, waitFor } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, JOB_ID, jobsPage, makeEvent, makeJob } from '../../test/fixtures';
import { renderHookWithClient } from '../../test/render';
import { server, timelineResponse } from '../../test/server';
import { sleep } from '../../test/sleep';
import type { Job } from '../types';
import { useJob, useJobEvents, useJobs } from './jobs';
import { queryKeys } from './keys';

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
