/**
 * The hooks' polling, end to end against the mock API: the header's interval, the pause
 * control and a hidden tab, and which hooks follow them.
 */
import { focusManager } from '@tanstack/react-query';
import { act, waitFor } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { afterEach, describe, expect, it } from 'vitest';
import { usePolling } from '../../polling/usePolling';
import {
  API,
  JOB_ID,
  WORKFLOW_ID,
  eventPage,
  jobsPage,
  makeEvent,
  makeJob,
  makeMember,
  makeWorkflow,
  stats,
} from '../../test/fixtures';
import { renderHookWithClient } from '../../test/render';
import { server, timelineResponse } from '../../test/server';
import { sleep } from '../../test/sleep';
import { useConfig } from './config';
import { useEventFeed } from './events';
import { useHealth } from './health';
import { useJob, useJobAttempts, useJobCounts, useJobEvents, useJobs } from './jobs';
import { useJobTypes } from './jobTypes';
import { useSession } from './session';
import { useActiveQueues, useStats, useThroughput } from './stats';
import { useWorkers } from './workers';
import { useWorkflow, useWorkflows } from './workflows';

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

describe('which hooks poll', () => {
  /** GETs the API received, by path (`/api/jobs/stats/`). */
  function countRequests() {
    const byPath = new Map<string, number>();
    const count = ({ request }: { request: Request }) => {
      const path = new URL(request.url).pathname;
      byPath.set(path, (byPath.get(path) ?? 0) + 1);
    };
    server.events.on('request:start', count);
    server.use(
      http.get(`${API}/jobs/`, () => HttpResponse.json(jobsPage([makeJob()]))),
      http.get(`${API}/jobs/${JOB_ID}/`, () => HttpResponse.json(makeJob({ status: 'running', attempts: 1 }))),
      http.get(`${API}/jobs/${JOB_ID}/events/`, () => timelineResponse([makeEvent()])),
      http.get(`${API}/job-events/`, () => HttpResponse.json(eventPage([makeEvent()]))),
      http.get(`${API}/workflows/${WORKFLOW_ID}/`, () =>
        HttpResponse.json(makeWorkflow([makeMember('a', { status: 'running' })], [], { state: 'active' })),
      ),
    );
    return { of: (path: string) => byPath.get(`/api/${path}`) ?? 0 };
  }

  afterEach(() => server.events.removeAllListeners());

  // Every live view: the header's interval, and nothing while paused.
  it.each([
    ['useHealth', () => useHealth(), 'health/'],
    ['useStats', () => useStats(), 'jobs/stats/'],
    ['useThroughput', () => useThroughput({ minutes: 15, bucketSeconds: 60 }), 'jobs/throughput/'],
    ['useJobs', () => useJobs({ limit: 25, offset: 0 }), 'jobs/'],
    ['useJobCounts', () => useJobCounts({ type: 'demo' }, ['failed']), 'jobs/'],
    ['useJob', () => useJob(JOB_ID), `jobs/${JOB_ID}/`],
    ['useJobEvents', () => useJobEvents(JOB_ID, makeJob({ status: 'running' })), `jobs/${JOB_ID}/events/`],
    ['useJobAttempts', () => useJobAttempts(JOB_ID, makeJob({ status: 'running' })), `jobs/${JOB_ID}/attempts/`],
    ['useJobTypes', () => useJobTypes(60), 'jobs/types/'],
    ['useWorkers', () => useWorkers(), 'workers/'],
    ['useEventFeed', () => useEventFeed({}), 'job-events/'],
    ['useWorkflows', () => useWorkflows({ page: 1 }), 'workflows/'],
    ['useWorkflow (active)', () => useWorkflow(WORKFLOW_ID), `workflows/${WORKFLOW_ID}/`],
  ] as const)('%s polls on the chosen interval and stops while paused', async (_name, hook, path) => {
    const requests = countRequests();
    const { result } = renderHookWithClient(() => ({ hook: hook(), polling: usePolling() }), { pollIntervalMs: 40 });
    await waitFor(() => expect(requests.of(path)).toBeGreaterThanOrEqual(3), { timeout: 2000 });
    act(() => result.current.polling.setPaused(true));
    await sleep(60); // let an in-flight refetch land
    const atPause = requests.of(path);
    await sleep(200);
    expect(requests.of(path)).toBe(atPause);
  });

  // Read once (and on focus or invalidation), or on a timer of their own.
  it.each([
    ['useConfig', () => useConfig(), 'config/'],
    ['useSession', () => useSession(), 'auth/session/'],
    ['useActiveQueues', () => useActiveQueues(), 'jobs/stats/'],
  ] as const)('%s does not follow the polling interval', async (_name, hook, path) => {
    const requests = countRequests();
    const { result } = renderHookWithClient(() => hook(), { pollIntervalMs: 40 });
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    await sleep(250);
    expect(requests.of(path)).toBe(1);
  });

  it('useWorkflow stops polling once every member has finished', async () => {
    const requests = countRequests();
    server.use(
      http.get(`${API}/workflows/${WORKFLOW_ID}/`, () =>
        HttpResponse.json(makeWorkflow([makeMember('a', { status: 'failed' })], [], { state: 'failed' })),
      ),
    );
    const { result } = renderHookWithClient(() => useWorkflow(WORKFLOW_ID), { pollIntervalMs: 40 });
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    await sleep(250);
    expect(requests.of(`workflows/${WORKFLOW_ID}/`)).toBe(1);
  });

  it('useWorkflow asks for nothing without an id', async () => {
    const requests = countRequests();
    renderHookWithClient(() => useWorkflow(null), { pollIntervalMs: 40 });
    await sleep(150);
    expect(requests.of('workflows/')).toBe(0);
    expect(requests.of(`workflows/${WORKFLOW_ID}/`)).toBe(0);
  });
});
