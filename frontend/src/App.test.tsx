import { screen } from '@testing-library/react';
import { render } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { StrictMode } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from './App';
import { API, eventPage, jobsPage } from './test/fixtures';
import { testQueryClient } from './test/render';
import { server } from './test/server';
import { sleep } from './test/sleep';

describe('the app under StrictMode (as `make run` serves it)', () => {
  afterEach(() => {
    server.events.removeAllListeners();
    window.history.replaceState(null, '', '/');
  });

  /**
   * StrictMode mounts, unmounts and mounts every component once more in development. A query
   * whose function hands TanStack its abort signal is cancelled when its last observer
   * unmounts, so each first request was aborted and sent again: every page load sent its
   * first API calls twice and aborted one copy.
   */
  it.each(['/', '/jobs', '/events', '/workers', '/job-types', '/queues', '/schedules', '/workflows'])('sends each first API call of %s once', async (route) => {
    const sent = new Map<string, number>();
    server.events.on('request:start', ({ request }) => {
      const url = new URL(request.url);
      const key = `${request.method} ${url.pathname}${url.search}`;
      sent.set(key, (sent.get(key) ?? 0) + 1);
    });
    server.use(
      http.get(`${API}/jobs/`, () => HttpResponse.json(jobsPage([]))),
      http.get(`${API}/job-events/`, () => HttpResponse.json(eventPage([]))),
    );
    window.history.replaceState(null, '', route);
    render(
      <StrictMode>
        <App queryClient={testQueryClient()} pollIntervalMs={60_000} />
      </StrictMode>,
    );
    expect(await screen.findByRole('heading', { level: 1 })).toBeInTheDocument();
    await sleep(300);
    expect(sent.size).toBeGreaterThan(0);
    expect([...sent].filter(([, n]) => n > 1)).toEqual([]);
  });
});
