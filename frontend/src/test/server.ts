import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import type { JobEvent } from '../api/types';
import {
  API,
  config,
  makeJobTypes,
  makeProcess,
  makeThread,
  makeThroughput,
  makeWorkers,
  openSession,
  stats,
  workflowsPage,
} from './fixtures';

/** Default handlers: a healthy, empty API with one idle worker. Tests override what they exercise. */
export const defaultHandlers = [
  http.get(`${API}/health/`, () => HttpResponse.json({ ok: true, database: 'ok' })),
  http.get(`${API}/config/`, () => HttpResponse.json(config)),
  http.get(`${API}/auth/session/`, () => HttpResponse.json(openSession)),
  http.get(`${API}/jobs/stats/`, () => HttpResponse.json(stats)),
  http.get(`${API}/jobs/throughput/`, () => HttpResponse.json(makeThroughput([[0, 0]]))),
  http.get(`${API}/jobs/types/`, () => HttpResponse.json(makeJobTypes([]))),
  http.get(`${API}/workers/`, () => HttpResponse.json(makeWorkers([makeProcess([makeThread(1)])]))),
  http.get(`${API}/jobs/:id/attempts/`, () => HttpResponse.json([])),
  http.get(`${API}/queues/`, () => HttpResponse.json([])),
  http.get(`${API}/schedules/`, () => HttpResponse.json([])),
  http.get(`${API}/workflows/`, () => HttpResponse.json(workflowsPage([]))),
];

export const server = setupServer(...defaultHandlers);

/**
 * A job's timeline as the API answers it: the array of events, with a `Link` header
 * naming the next (and previous) page when there is one.
 */
export function timelineResponse(events: JobEvent[], links: { next?: string; prev?: string } = {}) {
  const header = Object.entries(links)
    .map(([rel, url]) => `<${url}>; rel="${rel}"`)
    .join(', ');
  return HttpResponse.json(events, header ? { headers: { Link: header } } : undefined);
}
