import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { Job, JobEvent } from '../api/types';
import { API, JOB_ID, WORKFLOW_ID, edge, makeAttempt, makeEvent, makeJob, makeMember, makeWorkflow } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server, timelineResponse } from '../test/server';

function serve(job: Job, events: JobEvent[]) {
  const state = { job, events, retries: 0 };
  server.use(
    http.get(`${API}/jobs/${JOB_ID}/`, () => HttpResponse.json(state.job)),
    http.get(`${API}/jobs/${JOB_ID}/events/`, () => timelineResponse(state.events)),
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
    expect(screen.queryByRole('button', { name: 'Cancel job' })).not.toBeInTheDocument();
  });

  it('offers Cancel for a job waiting on its parents', async () => {
    serve(makeJob({ status: 'waiting' }), [makeEvent()]);
    renderApp(`/jobs/${JOB_ID}`);
    expect(await screen.findByRole('button', { name: 'Cancel job' })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Run now' })).not.toBeInTheDocument();
  });

  it('offers Run now by the server clock, not the browser one', async () => {
    const inHalfAnHour = new Date(Date.now() + 30 * 60_000).toISOString();
    // The server's clock is an hour ahead: by it the job is due already.
    const serverDate = () => new Date(Date.now() + 60 * 60_000).toUTCString();
    server.use(
      http.get(`${API}/jobs/${JOB_ID}/`, () =>
        HttpResponse.json(makeJob({ status: 'queued', available_at: inHalfAnHour }), {
          headers: { Date: serverDate() },
        }),
      ),
      http.get(`${API}/jobs/${JOB_ID}/events/`, () => timelineResponse([makeEvent()])),
    );
    renderApp(`/jobs/${JOB_ID}`);
    expect(await screen.findByText(JOB_ID)).toBeInTheDocument();
    await waitFor(() => expect(screen.queryByRole('button', { name: 'Run now' })).not.toBeInTheDocument());
  });

  it('offers Run now for a job scheduled for later by the server clock', async () => {
    const inTwoHours = new Date(Date.now() + 120 * 60_000).toISOString();
    serve(makeJob({ status: 'queued', available_at: inTwoHours }), [makeEvent()]);
    renderApp(`/jobs/${JOB_ID}`);
    expect(await screen.findByRole('button', { name: 'Run now' })).toBeInTheDocument();
  });

  it('shows a released claim in the timeline, neutral, before the claim that ran', async () => {
    const [first, second] = ['host:1:thread-1:aaaa', 'host:2:thread-1:bbbb'];
    serve(makeJob({ status: 'succeeded', attempts: 1 }), [
      makeEvent(),
      makeEvent({ id: 2, type: 'claimed', attempt: 1, worker_id: first, message: 'Job claimed' }),
      makeEvent({
        id: 3,
        type: 'released',
        attempt: 1,
        worker_id: first,
        message: 'Released before it started; the attempt is not spent',
        data: {},
      }),
      makeEvent({ id: 4, type: 'claimed', attempt: 1, worker_id: second, message: 'Job claimed' }),
      makeEvent({ id: 5, type: 'succeeded', attempt: 1, worker_id: second, message: 'Job succeeded' }),
    ]);
    renderApp(`/jobs/${JOB_ID}`);
    const timeline = await screen.findByRole('list', { name: 'Event timeline' });
    const items = within(timeline).getAllByRole('listitem');
    expect(items.map((i) => i.getAttribute('data-event-type'))).toEqual([
      'created',
      'claimed',
      'released',
      'claimed',
      'succeeded',
    ]);
    expect(items[2]).toHaveTextContent('attempt 1');
    expect(items[2]).toHaveTextContent(first);
    expect(items[2]).toHaveTextContent('the attempt is not spent');
    expect(within(timeline).getByText('released')).toHaveClass('badge--neutral');
    expect(items[2]?.querySelector('details')).toBeNull(); // no data to show
  });

  it('shows the unique and concurrency keys when the job has them', async () => {
    serve(makeJob({ unique_key: 'rebuild-index', concurrency_key: 'customer:42' }), [makeEvent()]);
    renderApp(`/jobs/${JOB_ID}`);
    const fields = await screen.findByRole('region', { name: 'Fields' });
    const value = (label: string) => within(fields).getByText(label, { selector: 'dt' }).nextElementSibling;
    expect(value('Unique key')).toHaveTextContent('rebuild-index');
    expect(value('Concurrency key')).toHaveTextContent('customer:42');
  });

  it('leaves the keys out when the job has none', async () => {
    serve(makeJob({ unique_key: null, concurrency_key: null }), [makeEvent()]);
    renderApp(`/jobs/${JOB_ID}`);
    const fields = await screen.findByRole('region', { name: 'Fields' });
    expect(within(fields).queryByText('Unique key')).not.toBeInTheDocument();
    expect(within(fields).queryByText('Concurrency key')).not.toBeInTheDocument();
  });

  it('shows the metadata, with the trace id its traceparent names', async () => {
    const state = serve(
      makeJob({
        metadata: {
          request_id: 'req-42',
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
          baggage: 'tenant=acme',
        },
      }),
      [],
    );
    const { queryClient } = renderApp(`/jobs/${JOB_ID}`);
    const section = await screen.findByRole('region', { name: 'Metadata' });
    const entries = within(section).getByLabelText('Metadata entries');
    const value = (key: string) => within(entries).getByText(key, { selector: 'dt' }).nextElementSibling!;
    expect([...entries.querySelectorAll('dt')].map((term) => term.textContent)).toEqual([
      'baggage',
      'request_id',
      'traceparent',
    ]);
    expect(value('request_id')).toHaveTextContent('req-42');
    expect(value('baggage')).toHaveTextContent('tenant=acme');
    expect(section).toHaveTextContent('Trace 0af7651916cd43dd8448eb211c80319c');

    state.job = makeJob({ metadata: {}, updated_at: '2026-06-21T03:00:00+03:30' });
    await queryClient.refetchQueries({ queryKey: ['jobs', 'detail', JOB_ID], exact: true });
    await waitFor(() => expect(section).toHaveTextContent('No metadata.'));
    expect(section).not.toHaveTextContent('Trace');
  });

  it('shows the queue and the timeout, or which default applies', async () => {
    const state = serve(makeJob({ queue: 'emails', timeout_seconds: 120 }), []);
    const { queryClient } = renderApp(`/jobs/${JOB_ID}`);
    const field = (label: string) => screen.getByText(label, { selector: 'dt' }).nextElementSibling!;
    await waitFor(() => expect(field('Queue')).toHaveTextContent('emails'));
    expect(field('Timeout')).toHaveTextContent('120 s');

    state.job = makeJob({ timeout_seconds: null, updated_at: '2026-06-21T03:00:00+03:30' });
    await queryClient.refetchQueries({ queryKey: ['jobs', 'detail', JOB_ID], exact: true });
    await waitFor(() => expect(field('Queue')).toHaveTextContent('default'));
    expect(field('Timeout')).toHaveTextContent('not set: the job type’s default, else the worker’s (no limit)');
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

  it('cancels a queued job after a confirmation and then offers Retry', async () => {
    const state = serve(makeJob({ status: 'queued' }), [makeEvent()]);
    let posts = 0;
    server.use(
      http.post(`${API}/jobs/${JOB_ID}/cancel/`, () => {
        posts += 1;
        state.job = makeJob({ status: 'cancelled', finished_at: '2026-06-21T02:40:00+03:30' });
        state.events = [...state.events, makeEvent({ id: 2, type: 'cancelled', message: 'Cancelled' })];
        return HttpResponse.json(state.job);
      }),
    );
    renderApp(`/jobs/${JOB_ID}`);
    await userEvent.click(await screen.findByRole('button', { name: 'Cancel job' }));
    const dialog = screen.getByRole('dialog', { name: `Cancel job ${JOB_ID.slice(0, 8)}?` });
    expect(dialog).toHaveTextContent('It is queued: it will not run.');
    expect(posts).toBe(0);

    await userEvent.click(within(dialog).getByRole('button', { name: 'Cancel job' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(posts).toBe(1);
    expect(screen.getByText('cancelled', { selector: '.page__title-row [data-status]' })).toBeInTheDocument();
    const timeline = screen.getByRole('list', { name: 'Event timeline' });
    await waitFor(() => expect(within(timeline).getByText('cancelled')).toBeInTheDocument());
    expect(screen.getByText('None: the job was cancelled.')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Cancel job' })).not.toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Retry job' })).toBeEnabled();
  });

  it('sends nothing when the confirmation is dismissed', async () => {
    serve(makeJob({ status: 'queued' }), []);
    let posts = 0;
    server.use(
      http.post(`${API}/jobs/${JOB_ID}/cancel/`, () => {
        posts += 1;
        return HttpResponse.json(makeJob({ status: 'cancelled' }));
      }),
    );
    renderApp(`/jobs/${JOB_ID}`);
    await userEvent.click(await screen.findByRole('button', { name: 'Cancel job' }));
    await userEvent.click(screen.getByRole('button', { name: 'Keep job' }));
    expect(screen.queryByRole('dialog')).not.toBeInTheDocument();
    expect(posts).toBe(0);
  });

  it('shows a 202 as a cancel request and the job ending as cancelled as polling catches up', async () => {
    const requestedAt = new Date(2026, 5, 21, 14, 5, 9).toISOString();
    const running = { status: 'running', attempts: 1, locked_by: 'host:7:thread-2:ab12' } as const;
    const state = serve(makeJob(running), [makeEvent(), makeEvent({ id: 2, type: 'claimed', attempt: 1 })]);
    server.use(
      http.post(`${API}/jobs/${JOB_ID}/cancel/`, () => {
        state.job = makeJob({ ...running, cancel_requested_at: requestedAt, updated_at: requestedAt });
        state.events = [...state.events, makeEvent({ id: 3, type: 'cancel_requested', attempt: 1 })];
        return HttpResponse.json(state.job, { status: 202 });
      }),
    );
    renderApp(`/jobs/${JOB_ID}`, { pollIntervalMs: 100 });
    await userEvent.click(await screen.findByRole('button', { name: 'Cancel job' }));
    const dialog = screen.getByRole('dialog');
    expect(dialog).toHaveTextContent('It is running on host:7:thread-2:ab12');
    expect(dialog).toHaveTextContent('within one heartbeat (every 10 s)');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Cancel job' }));

    const notice = await screen.findByText(/waiting for the worker/);
    expect(notice).toHaveTextContent('Cancel requested at 14:05:09 UTC, waiting for the worker');
    expect(notice).toHaveAttribute('role', 'status');
    expect(screen.queryByRole('button', { name: 'Cancel job' })).not.toBeInTheDocument();
    expect(screen.getByText('Cancel requested', { selector: 'dt' })).toBeInTheDocument();

    // The worker sees the request at its next heartbeat and ends the attempt.
    state.job = makeJob({ ...running, status: 'cancelled', cancel_requested_at: requestedAt, locked_by: null });
    state.events = [...state.events, makeEvent({ id: 4, type: 'cancelled', attempt: 1 })];
    await waitFor(() =>
      expect(screen.getByText('cancelled', { selector: '.page__title-row [data-status]' })).toBeInTheDocument(),
    );
    expect(screen.queryByText(/waiting for the worker/)).not.toBeInTheDocument();
    const timeline = screen.getByRole('list', { name: 'Event timeline' });
    await waitFor(() =>
      expect(within(timeline).getAllByRole('listitem').map((i) => i.getAttribute('data-event-type'))).toEqual([
        'created',
        'claimed',
        'cancel_requested',
        'cancelled',
      ]),
    );
    expect(screen.getByRole('button', { name: 'Retry job' })).toBeInTheDocument();
  });

  it('explains a 409 when the job finished before the cancel arrived', async () => {
    const state = serve(makeJob({ status: 'running', attempts: 1 }), []);
    server.use(
      http.post(`${API}/jobs/${JOB_ID}/cancel/`, () => {
        state.job = makeJob({ status: 'succeeded', attempts: 1, updated_at: '2026-06-21T03:00:00+03:30' });
        return HttpResponse.json(
          { detail: 'Only queued or running jobs can be cancelled; job is succeeded.', status: 'succeeded' },
          { status: 409 },
        );
      }),
    );
    renderApp(`/jobs/${JOB_ID}`);
    await userEvent.click(await screen.findByRole('button', { name: 'Cancel job' }));
    await userEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Cancel job' }));
    expect(await within(screen.getByRole('dialog')).findByRole('alert')).toHaveTextContent(
      'Only queued or running jobs can be cancelled; job is succeeded.',
    );
    // The page behind reloads the job, so it shows where the job really is.
    await waitFor(() =>
      expect(screen.getByText('succeeded', { selector: '.page__title-row [data-status]' })).toBeInTheDocument(),
    );
  });

  it('retries a cancelled job', async () => {
    const state = serve(makeJob({ status: 'cancelled' }), []);
    server.use(
      http.post(`${API}/jobs/${JOB_ID}/retry/`, () => {
        state.job = makeJob({ status: 'queued', updated_at: '2026-06-21T03:00:00+03:30' });
        return HttpResponse.json(state.job);
      }),
    );
    renderApp(`/jobs/${JOB_ID}`);
    await userEvent.click(await screen.findByRole('button', { name: 'Retry job' }));
    await waitFor(() =>
      expect(screen.getByText('queued', { selector: '.page__title-row [data-status]' })).toBeInTheDocument(),
    );
    expect(screen.getByRole('button', { name: 'Cancel job' })).toBeInTheDocument();
  });

  it('says when the job does not exist', async () => {
    const missing = '00000000-0000-4000-8000-00000000dead';
    server.use(http.get(`${API}/jobs/${missing}/`, () => HttpResponse.json({ detail: 'Not found.' }, { status: 404 })));
    server.use(
      http.get(`${API}/jobs/${missing}/events/`, () => HttpResponse.json({ detail: 'Not found.' }, { status: 404 })),
    );
    renderApp(`/jobs/${missing}`);
    expect(await screen.findByText('Job not found')).toBeInTheDocument();
  });

  it('opens the job a short id names (the id the lists show), under its whole id', async () => {
    server.use(
      http.get(`${API}/jobs/lookup/`, ({ request }) =>
        new URL(request.url).searchParams.get('q') === JOB_ID.slice(0, 8)
          ? HttpResponse.json({ match: 'id_prefix', job: makeJob() })
          : HttpResponse.json({ detail: 'No job.' }, { status: 404 }),
      ),
    );
    const { router } = renderApp(`/jobs/${JOB_ID.slice(0, 8)}`);
    await waitFor(() => expect(router.state.location.pathname).toBe(`/jobs/${JOB_ID}`));
  });

  it('says why a short id names no job', async () => {
    server.use(http.get(`${API}/jobs/lookup/`, () => HttpResponse.json({ detail: 'No job.' }, { status: 404 })));
    renderApp('/jobs/9ee69b8a');
    expect(await screen.findByText('Job not found')).toBeInTheDocument();
    expect(screen.getByRole('alert')).toHaveTextContent('No job has the id, id prefix or idempotency key “9ee69b8a”.');
  });
});

describe('Job detail timeline paging', () => {
  it("shows the first page and loads the one its Link header announces on demand, oldest first", async () => {
    const first = [makeEvent(), makeEvent({ id: 2, type: 'claimed', attempt: 1 })];
    const second = [makeEvent({ id: 3, type: 'progress', attempt: 1, message: 'half way' })];
    const cursors: (string | null)[] = [];
    server.use(
      http.get(`${API}/jobs/${JOB_ID}/`, () => HttpResponse.json(makeJob({ status: 'succeeded', attempts: 1 }))),
      http.get(`${API}/jobs/${JOB_ID}/events/`, ({ request }) => {
        const cursor = new URL(request.url).searchParams.get('cursor');
        cursors.push(cursor);
        return cursor === 'p2'
          ? timelineResponse(second, { prev: `${API}/jobs/${JOB_ID}/events/?cursor=p1` })
          : timelineResponse(first, { next: `${API}/jobs/${JOB_ID}/events/?cursor=p2` });
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

describe('Job detail attempts and errors', () => {
  const traceback = [
    'Traceback (most recent call last):',
    '  File "/app/jobs/demo.py", line 12, in fail',
    '    raise ValueError("Intentional demo failure")',
    'ValueError: Intentional demo failure',
  ].join('\n');

  it('shows the last error with its class and traceback as code, and one row per attempt by round', async () => {
    serve(
      makeJob({
        status: 'failed',
        attempts: 1,
        max_attempts: 1,
        last_error: 'Intentional demo failure',
        finished_at: '2026-06-21T02:33:05+03:30',
        ...{ total_attempts: 3, round: 2, last_exception_class: 'ValueError', last_traceback: traceback },
      }),
      [],
    );
    server.use(
      http.get(`${API}/jobs/${JOB_ID}/attempts/`, () =>
        HttpResponse.json([
          makeAttempt({ number: 1, round: 1, attempt: 1, outcome: 'retried', exception_class: 'ValueError', traceback }),
          makeAttempt({ number: 2, round: 1, attempt: 2, outcome: 'failed', exception_class: 'ValueError' }),
          makeAttempt({ number: 3, round: 2, attempt: 1, outcome: 'timed_out', error: 'Timed out after 10 s' }),
        ]),
      ),
    );
    renderApp(`/jobs/${JOB_ID}`);
    const lastError = await screen.findByRole('region', { name: 'Last error' });
    expect(within(lastError).getByText('ValueError')).toBeInTheDocument();
    expect(within(lastError).getByLabelText('Traceback of the last error')).toHaveTextContent(
      'File "/app/jobs/demo.py", line 12, in fail',
    );
    expect(screen.getByText('1 of 1', { exact: false }).closest('dd')).toHaveTextContent('1 of 1 · 3 in all (round 2)');

    const table = await screen.findByRole('table', { name: 'Attempts' });
    const rounds = within(table).getAllByRole('rowgroup').slice(1);
    expect(rounds.map((r) => r.getAttribute('data-round'))).toEqual(['1', '2']);
    expect(within(rounds[1]!).getByText('Round 2 (after a manual retry)')).toBeInTheDocument();
    expect(table.querySelectorAll('tr[data-attempt]')).toHaveLength(3);
    expect(table.querySelector('tr[data-attempt="3"]')).toHaveTextContent('timed out');
    expect(table.querySelector('tr[data-attempt="3"]')).toHaveTextContent('Timed out after 10 s');
    expect(within(table).getByText('Traceback of attempt 1')).toBeInTheDocument();
  });

  it('shows the timeout in force with its source, and nothing available about a finished job', async () => {
    serve(
      makeJob({
        status: 'cancelled',
        finished_at: '2026-06-21T02:33:05+03:30',
        ...{ effective_timeout_seconds: 10, timeout_source: 'type' as const },
      }),
      [],
    );
    renderApp(`/jobs/${JOB_ID}`);
    expect(await screen.findByText('10 s (the job type’s default)')).toBeInTheDocument();
    expect(screen.queryByText('Available', { selector: 'dt' })).not.toBeInTheDocument();
    expect(await screen.findByText('Cancelled before it ran.')).toBeInTheDocument();
  });

  it('asks for the timeline without heartbeats until they are asked for', async () => {
    const filters: (string | null)[] = [];
    server.use(
      http.get(`${API}/jobs/${JOB_ID}/`, () => HttpResponse.json(makeJob({ status: 'succeeded' }))),
      http.get(`${API}/jobs/${JOB_ID}/events/`, ({ request }) => {
        const heartbeats = new URL(request.url).searchParams.get('heartbeats');
        filters.push(heartbeats);
        return timelineResponse(
          heartbeats === 'exclude' ? [makeEvent()] : [makeEvent(), makeEvent({ id: 2, type: 'lease_renewed', attempt: 1 })],
        );
      }),
    );
    renderApp(`/jobs/${JOB_ID}`);
    const timeline = await screen.findByRole('list', { name: 'Event timeline' });
    expect(within(timeline).getAllByRole('listitem')).toHaveLength(1);
    await userEvent.click(screen.getByRole('checkbox', { name: /Show heartbeats/ }));
    await waitFor(() =>
      expect(
        within(screen.getByRole('list', { name: 'Event timeline' }))
          .getAllByRole('listitem')
          .map((i) => i.getAttribute('data-event-type')),
      ).toEqual(['created', 'lease_renewed']),
    );
    expect(filters).toEqual(['exclude', 'include']);
  });
});

describe('Job detail page: its workflow', () => {
  const extract = makeMember('extract');
  const transform = makeMember('transform', { id: JOB_ID, status: 'running', finished_at: null });
  const load = makeMember('load', { status: 'waiting', attempts: 0, finished_at: null });
  const workflow = makeWorkflow([extract, transform, load], [edge(extract, transform), edge(transform, load)], {
    state: 'active',
  });

  /** The job (in the workflow unless `workflowId` is null), and the workflow, counting its requests. */
  function serveInWorkflow(workflowId: string | null) {
    const asked = { workflow: 0 };
    serve(makeJob({ status: 'running', workflow_id: workflowId }), [makeEvent()]);
    server.use(
      http.get(`${API}/workflows/${WORKFLOW_ID}/`, () => {
        asked.workflow += 1;
        return HttpResponse.json(workflow);
      }),
    );
    return asked;
  }

  it('shows the workflow graph with this job outlined, each node linking to its job', async () => {
    serveInWorkflow(WORKFLOW_ID);
    renderApp(`/jobs/${JOB_ID}`);
    const section = await screen.findByRole('region', { name: 'Workflow' });
    const graph = await within(section).findByRole('group', { name: 'Workflow graph' });
    expect(within(section).getByRole('link', { name: 'nightly-etl' })).toHaveAttribute('href', `/workflows/${WORKFLOW_ID}`);
    expect(within(section).getByText('active', { selector: '[data-state]' })).toBeInTheDocument();

    const current = graph.querySelector('[aria-current="page"]');
    expect(current).toHaveAttribute('data-node-id', JOB_ID);
    expect(current).toHaveClass('dag-node--current');
    expect(current).toHaveTextContent('this job');
    expect(graph.querySelectorAll('[data-current]')).toHaveLength(1);
    expect(within(graph).getByRole('link', { name: /^extract/ })).toHaveAttribute('href', `/jobs/${extract.id}`);
    expect(within(graph).getByRole('link', { name: /^load/ })).toHaveAttribute('href', `/jobs/${load.id}`);
    expect(graph.querySelectorAll('[data-edge-from]')).toHaveLength(2);
  });

  it('shows no workflow section, and asks for none, for a job created alone', async () => {
    const asked = serveInWorkflow(null);
    renderApp(`/jobs/${JOB_ID}`);
    await screen.findByRole('region', { name: 'Fields' });
    expect(screen.queryByRole('region', { name: 'Workflow' })).not.toBeInTheDocument();
    expect(asked.workflow).toBe(0);
  });
});

describe('Job detail page: a job past the members its workflow lists', () => {
  it('says it is one of the members the graph leaves out', async () => {
    const start = makeMember('start');
    const first = Array.from({ length: 999 }, (_, i) => makeMember(`part-${i}`, { status: 'waiting' }));
    serve(makeJob({ status: 'waiting', workflow_id: WORKFLOW_ID }), [makeEvent()]);
    server.use(
      http.get(`${API}/workflows/${WORKFLOW_ID}/`, () =>
        HttpResponse.json(
          makeWorkflow([start, ...first], first.map((p) => edge(start, p)), { jobs: 10_002, members_truncated: true }),
        ),
      ),
    );
    renderApp(`/jobs/${JOB_ID}`);
    const section = await screen.findByRole('region', { name: 'Workflow' });
    expect(await within(section).findByText(/First 1,000 members shown, of 10,002/)).toHaveTextContent(
      'This job is one of those left out.',
    );
    expect(section.querySelector('[aria-current]')).toBeNull();
  });
});

describe('Job detail page: a job waiting for a whole group', () => {
  it('links its first 20 parents and counts the rest', async () => {
    const parents = Array.from({ length: 10_000 }, (_, i) => `${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`);
    serve(makeJob({ status: 'waiting', workflow_id: WORKFLOW_ID, ...{ depends_on: parents, on_parent_failure: 'run' } }), []);
    server.use(
      http.get(`${API}/workflows/${WORKFLOW_ID}/`, () => HttpResponse.json(makeWorkflow([makeMember('a')], []))),
    );
    renderApp(`/jobs/${JOB_ID}`);
    const fields = await screen.findByRole('region', { name: 'Fields' });
    const dependsOn = within(fields).getByText('Depends on', { selector: 'dt' }).nextElementSibling as HTMLElement;
    expect(within(dependsOn).getAllByRole('link')).toHaveLength(20);
    expect(within(dependsOn).getAllByRole('link')[0]).toHaveAttribute('href', `/jobs/${parents[0]}`);
    expect(dependsOn).toHaveTextContent('and 9,980 more (the workflow’s graph counts them)');
  });
});
