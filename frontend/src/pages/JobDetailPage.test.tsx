import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { Job, JobEvent } from '../api/types';
import { API, JOB_ID, eventPage, makeEvent, makeJob } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

function serve(job: Job, events: JobEvent[]) {
  const state = { job, events, retries: 0 };
  server.use(
    http.get(`${API}/jobs/${JOB_ID}/`, () => HttpResponse.json(state.job)),
    http.get(`${API}/jobs/${JOB_ID}/events/`, () => HttpResponse.json(eventPage(state.events))),
  );
  return state;
}

describe('Job detail page', () => {
  it('shows every field, the payload, result and the timeline', async () => {
    serve(
      makeJob({
        status: 'succeeded',
        attempts: 1,
        result: { ok: true, slept: 1 },
        idempotency_key: 'key-7',
        finished_at: '2026-06-21T02:33:05+03:30',
      }),
      [
        makeEvent(),
        makeEvent({ id: 2, type: 'claimed', attempt: 1, worker_id: 'host:1:thread-1:abcd', message: 'Claimed' }),
        makeEvent({ id: 3, type: 'succeeded', attempt: 1, worker_id: 'host:1:thread-1:abcd', message: 'Done' }),
      ],
    );
    renderApp(`/jobs/${JOB_ID}`);
    expect(await screen.findByText(JOB_ID)).toBeInTheDocument();
    expect(screen.getByText('key-7')).toBeInTheDocument();
    expect(screen.getByLabelText('Payload JSON')).toHaveTextContent('"sleep_seconds": 1');
    expect(screen.getByLabelText('Result JSON')).toHaveTextContent('"slept": 1');
    const timeline = await screen.findByRole('list', { name: 'Event timeline' });
    const items = within(timeline).getAllByRole('listitem');
    expect(items.map((i) => i.getAttribute('data-event-type'))).toEqual(['created', 'claimed', 'succeeded']);
    expect(items[1]).toHaveTextContent('attempt 1');
    expect(items[1]).toHaveTextContent('host:1:thread-1:abcd');
    expect(items[2]).toHaveTextContent('Done');
    expect(screen.queryByRole('button', { name: 'Retry job' })).not.toBeInTheDocument();
  });

  it('counts down the lease of a running job', async () => {
    serve(
      makeJob({
        status: 'running',
        attempts: 1,
        locked_by: 'w1',
        locked_until: new Date(Date.now() + 25_000).toISOString(),
      }),
      [makeEvent()],
    );
    renderApp(`/jobs/${JOB_ID}`);
    expect(await screen.findByText(/^2[45]s left$/)).toBeInTheDocument();
  });

  it('shows an expired lease as such', async () => {
    serve(
      makeJob({ status: 'running', attempts: 1, locked_by: 'w1', locked_until: new Date(Date.now() - 90_000).toISOString() }),
      [],
    );
    renderApp(`/jobs/${JOB_ID}`);
    expect(await screen.findByText(/^expired 1m 3\ds ago$/)).toBeInTheDocument();
  });

  it('retries a failed job and shows manual_retry in the timeline', async () => {
    const state = serve(makeJob({ status: 'failed', attempts: 1, max_attempts: 1, last_error: 'Intentional demo failure' }), [
      makeEvent(),
      makeEvent({ id: 2, type: 'failed', attempt: 1, message: 'Intentional demo failure' }),
    ]);
    server.use(
      http.post(`${API}/jobs/${JOB_ID}/retry/`, () => {
        state.job = makeJob({ status: 'queued', attempts: 0, max_attempts: 1, updated_at: '2026-06-21T03:00:00+03:30' });
        state.events = [...state.events, makeEvent({ id: 3, type: 'manual_retry', message: 'Manual retry' })];
        return HttpResponse.json(state.job);
      }),
    );
    renderApp(`/jobs/${JOB_ID}`);
    expect(await screen.findByText('Intentional demo failure', { selector: 'pre' })).toBeInTheDocument();
    await userEvent.click(await screen.findByRole('button', { name: 'Retry job' }));
    const timeline = screen.getByRole('list', { name: 'Event timeline' });
    await waitFor(() => expect(within(timeline).getByText('manual_retry')).toBeInTheDocument());
    expect(screen.queryByRole('button', { name: 'Retry job' })).not.toBeInTheDocument();
  });

  it('explains a 409 when the job is no longer failed', async () => {
    serve(makeJob({ status: 'failed', attempts: 1 }), []);
    server.use(
      http.post(`${API}/jobs/${JOB_ID}/retry/`, () =>
        HttpResponse.json({ detail: 'Only failed jobs can be retried; job is queued.', status: 'queued' }, { status: 409 }),
      ),
    );
    renderApp(`/jobs/${JOB_ID}`);
    await userEvent.click(await screen.findByRole('button', { name: 'Retry job' }));
    expect(await screen.findByRole('alert')).toHaveTextContent('Only failed jobs can be retried; job is queued.');
  });

  it('says when the job does not exist', async () => {
    server.use(http.get(`${API}/jobs/nope/`, () => HttpResponse.json({ detail: 'Not found.' }, { status: 404 })));
    server.use(http.get(`${API}/jobs/nope/events/`, () => HttpResponse.json({ detail: 'Not found.' }, { status: 404 })));
    renderApp('/jobs/nope');
    expect(await screen.findByText('Job not found')).toBeInTheDocument();
  });
});

describe('Job detail timeline paging', () => {
  it('shows the first page and loads the next one on demand, oldest first', async () => {
    const first = [makeEvent(), makeEvent({ id: 2, type: 'claimed', attempt: 1 })];
    const second = [makeEvent({ id: 3, type: 'progress', attempt: 1, message: 'half way' })];
    const cursors: (string | null)[] = [];
    server.use(
      http.get(`${API}/jobs/${JOB_ID}/`, () => HttpResponse.json(makeJob({ status: 'succeeded', attempts: 1 }))),
      http.get(`${API}/jobs/${JOB_ID}/events/`, ({ request }) => {
        const cursor = new URL(request.url).searchParams.get('cursor');
        cursors.push(cursor);
        return cursor === 'p2'
          ? HttpResponse.json(eventPage(second, null, `${API}/jobs/${JOB_ID}/events/?cursor=p1`))
          : HttpResponse.json(eventPage(first, `${API}/jobs/${JOB_ID}/events/?cursor=p2`));
      }),
    );
    renderApp(`/jobs/${JOB_ID}`);
    const timeline = await screen.findByRole('list', { name: 'Event timeline' });
    expect(within(timeline).getAllByRole('listitem')).toHaveLength(2);
    await userEvent.click(await screen.findByRole('button', { name: 'Load up to 100 more events' }));
    await waitFor(() =>
      expect(within(timeline).getAllByRole('listitem').map((i) => i.getAttribute('data-event-type'))).toEqual([
        'created',
        'claimed',
        'progress',
      ]),
    );
    expect(screen.queryByRole('button', { name: /more events/ })).not.toBeInTheDocument();
    expect(cursors).toEqual([null, 'p2']);
  });
});
