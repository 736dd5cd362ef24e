import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, JOB_ID, makeJob } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server, timelineResponse } from '../test/server';

const box = () => screen.getByRole('searchbox', { name: 'Job id, short id or idempotency key' });

describe('Header search', () => {
  it('opens the job a short id names, through the lookup', async () => {
    const seen: string[] = [];
    server.use(
      http.get(`${API}/jobs/lookup/`, ({ request }) => {
        seen.push(new URL(request.url).searchParams.get('q') ?? '');
        return HttpResponse.json({ match: 'id_prefix', job: makeJob() });
      }),
      http.get(`${API}/jobs/${JOB_ID}/`, () => HttpResponse.json(makeJob())),
      http.get(`${API}/jobs/${JOB_ID}/events/`, () => timelineResponse([])),
    );
    const { router } = renderApp('/');
    await userEvent.type(box(), '8421aca2');
    await userEvent.click(screen.getByRole('button', { name: 'Find' }));
    await waitFor(() => expect(router.state.location.pathname).toBe(`/jobs/${JOB_ID}`));
    expect(seen).toEqual(['8421aca2']);
    expect(screen.getByRole('search', { name: 'Find a job' })).toBeInTheDocument();
  });

  it('says so when nothing matches', async () => {
    server.use(http.get(`${API}/jobs/lookup/`, () => HttpResponse.json({ detail: 'No job.' }, { status: 404 })));
    const { router } = renderApp('/');
    await userEvent.type(box(), `${JOB_ID}{Enter}`);
    expect(await screen.findByRole('alert')).toHaveTextContent(
      `No job has the id, id prefix or idempotency key “${JOB_ID}”.`,
    );
    expect(router.state.location.pathname).toBe('/');
  });

  it('says how many characters a short id needs when too few of them match nothing', async () => {
    server.use(http.get(`${API}/jobs/lookup/`, () => HttpResponse.json({ detail: 'No job.' }, { status: 404 })));
    renderApp('/');
    await userEvent.type(box(), '9e{Enter}');
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('type at least 8 characters');
    await userEvent.keyboard('{Escape}');
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });

  it('says a short id is ambiguous, in the API words', async () => {
    server.use(
      http.get(`${API}/jobs/lookup/`, () =>
        HttpResponse.json({ q: ["'fe7c1234' matches 3 jobs: type more characters."] }, { status: 400 }),
      ),
    );
    renderApp('/');
    await userEvent.type(box(), 'fe7c1234{Enter}');
    expect(await screen.findByRole('alert')).toHaveTextContent("'fe7c1234' matches 3 jobs: type more characters.");
  });

  it("shows the API's error when a lookup fails, and clears it on typing", async () => {
    server.use(
      http.get(`${API}/jobs/lookup/`, () => HttpResponse.json({ detail: 'Database unavailable.' }, { status: 503 })),
    );
    const { router } = renderApp('/');
    await userEvent.type(box(), 'order-42{Enter}');
    expect(await screen.findByRole('alert')).toHaveTextContent('503: Database unavailable.');
    expect(router.state.location.pathname).toBe('/');
    await userEvent.type(box(), '3');
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Find' })).toBeEnabled();
  });
});
