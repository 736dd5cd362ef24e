import { act, waitFor } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, JOB_ID, WORKFLOW_ID, makeEvent, makeJob, makeMember, makeWorkflow } from '../../test/fixtures';
import { renderHookWithClient } from '../../test/render';
import { server, timelineResponse } from '../../test/server';
import type { Job } from '../types';
import { useRetryJob } from './jobActions';
import { useJobEvents } from './jobs';
import { queryKeys } from './keys';
import { useWorkflow } from './workflows';

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

  it("reloads the job's workflow, whose counts, state and graph it changes", async () => {
    let status: 'failed' | 'queued' = 'failed';
    server.use(
      http.get(`${API}/workflows/${WORKFLOW_ID}/`, () =>
        HttpResponse.json(
          makeWorkflow([makeMember('a', { id: JOB_ID, status })], [], { state: status === 'failed' ? 'failed' : 'active' }),
        ),
      ),
      http.post(`${API}/jobs/${JOB_ID}/retry/`, () => {
        status = 'queued';
        return HttpResponse.json(makeJob({ status: 'queued' }));
      }),
    );
    const { result } = renderHookWithClient(() => ({ retry: useRetryJob(JOB_ID), workflow: useWorkflow(WORKFLOW_ID) }));
    await waitFor(() => expect(result.current.workflow.data?.state).toBe('failed'));
    await act(() => result.current.retry.mutateAsync());
    await waitFor(() => expect(result.current.workflow.data?.state).toBe('active'));
    expect(result.current.workflow.data?.members[0]?.status).toBe('queued');
  });
});
