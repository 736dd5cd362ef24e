import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, JOB_ID, jobsPage, makeJob } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server, timelineResponse } from '../test/server';

describe('Header search', () => {
  it('opens the job created with an idempotency key, found through the list filter', async () => {
    const seen: Record<string, string>[] = [];
    server.use(
      http.get(`${API}/jobs/`, ({ request }) => {
        const query = Object.fromEntries(new URL(request.url).searchParams);
        seen.push(query);
        return HttpResponse.json(jobsPage(query.idempotency_key === 'order-42' ? [makeJob()] : []));
      }),
      http.get(`${API}/jobs/${JOB_ID}/`, () => HttpResponse.json(makeJob())),
      http.get(`${API}/jobs/${JOB_ID}/events/`, () => timelineResponse([])),
    );
    const { router } = renderApp('/');
    const search = screen.getByRole('search', { name: 'Find a job' });
    await userEvent.type(screen.getByRole('searchbox', { name: 'Job id or idempotency key' }), 'order-42');
    await userEvent.click(screen.getByRole('button', { name: 'Find' }));
    await waitFor(() => expect(router.state.location.pathname).toBe(`/jobs/${JOB_ID}`));
    expect(seen[0]).toEqual({ idempotency_key: 'order-42', limit: '1', offset: '0' });
    expect(search).toBeInTheDocument();
  });

  it('says so when nothing matches', async () => {
    server.use(
      http.get(`${API}/jobs/${JOB_ID}/`, () => HttpResponse.json({ detail: 'Not found.' }, { status: 404 })),
      http.get(`${API}/jobs/`, () => HttpResponse.json(jobsPage([]))),
    );
    const { router } = renderApp('/');
    await userEvent.type(screen.getByRole('searchbox', { name: 'Job id or idempotency key' }), `${JOB_ID}{Enter}`);
    expect(await screen.findByRole('alert')).toHaveTextContent(`No job has the id or idempotency key “${JOB_ID}”.`);
    expect(router.state.location.pathname).toBe('/');
  });

  it("shows the API's error when a lookup fails, and clears it on typing", async () => {
    server.use(
      http.get(`${API}/jobs/`, () => HttpResponse.json({ detail: 'Database unavailable.' }, { status: 503 })),
    );
    const { router } = renderApp('/');
    const input = screen.getByRole('searchbox', { name: 'Job id or idempotency key' });
    await userEvent.type(input, 'order-42{Enter}');
    expect(await screen.findByRole('alert')).toHaveTextContent('503: Database unavailable.');
    expect(router.state.location.pathname).toBe('/');
    await userEvent.type(input, '3');
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Find' })).toBeEnabled();
  });
});

