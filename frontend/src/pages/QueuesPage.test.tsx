import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { Queue, QueueLimitsInput } from '../api/types';
import { API, makeQueue, viewOnlySession } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

/** The first answer and render, which a loaded machine can slow past the default second. */
const LOAD = { timeout: 5000 };

const counts = (queued: number, running = 0, succeeded = 0, failed = 0, cancelled = 0) => ({
  queued,
  waiting: 0,
  running,
  succeeded,
  failed,
  cancelled,
});

const EMAILS = makeQueue({
  name: 'emails',
  counts: counts(3, 2, 10, 1),
  concurrency_limit: 5,
  running: 2,
  saturation: 0.4,
  rate_limit: 10,
  rate_period_seconds: 1,
});
const REPORTS = makeQueue({
  name: 'reports',
  paused: true,
  paused_at: new Date(Date.now() - 120_000).toISOString(),
  counts: counts(7),
  due: 5,
  scheduled: 2,
  // The scheduled ones were created first: the backlog's age is the oldest due job's.
  oldest_queued_at: new Date(Date.now() - 3_600_000).toISOString(),
  oldest_due_at: new Date(Date.now() - 300_000).toISOString(),
});

/** Serve `queues`; pause/resume/PATCH change them as the API would, and are recorded. */
function serve(queues: Queue[]) {
  const state = new Map(queues.map((q) => [q.name, q]));
  const seen = { posts: [] as string[], patches: [] as QueueLimitsInput[] };
  const answer = (name: string) => HttpResponse.json(state.get(name));
  server.use(
    http.get(`${API}/queues/`, () => HttpResponse.json([...state.values()])),
    http.post(`${API}/queues/:name/pause/`, ({ params }) => {
      const name = String(params.name);
      seen.posts.push(`pause ${name}`);
      state.set(name, { ...state.get(name)!, paused: true, paused_at: new Date().toISOString() });
      return answer(name);
    }),
    http.post(`${API}/queues/:name/resume/`, ({ params }) => {
      const name = String(params.name);
      seen.posts.push(`resume ${name}`);
      state.set(name, { ...state.get(name)!, paused: false, paused_at: null });
      return answer(name);
    }),
    http.patch(`${API}/queues/:name/`, async ({ params, request }) => {
      const name = String(params.name);
      const body = (await request.json()) as QueueLimitsInput;
      seen.patches.push(body);
      if (body.concurrency_limit !== undefined && body.concurrency_limit !== null && body.concurrency_limit > 100)
        return HttpResponse.json({ concurrency_limit: ['Ensure this value is less than or equal to 100.'] }, { status: 400 });
      state.set(name, { ...state.get(name)!, ...body });
      return answer(name);
    }),
  );
  return seen;
}

/** The table row of `name` (its accessible name runs its cells together). */
function row(name: string): HTMLElement {
  const found = screen.getAllByRole('row').find((r) => r.getAttribute('data-queue') === name);
  if (!found) throw new Error(`no row for ${name}`);
  return found;
}

describe('Queues page', () => {
  it('lists every queue with its counts, state, concurrency against the limit and rate limit', async () => {
    serve([EMAILS, REPORTS]);
    renderApp('/queues');
    await screen.findByRole('table', { name: 'Queues' }, LOAD);
    const emails = row('emails');
    expect(within(emails).getByText('active')).toBeInTheDocument();
    expect(within(emails).getByRole('link', { name: '3 queued in emails' })).toHaveAttribute(
      'href',
      '/jobs?status=queued&queue=emails',
    );
    expect(emails.querySelector('[data-count="succeeded"]')).toHaveTextContent('10');
    expect(emails.querySelector('[data-count="cancelled"]')).toHaveTextContent('0');
    expect(emails).toHaveTextContent('2 of 5 running (40 %)');
    expect(emails).toHaveTextContent('10 per 1 s');

    const reports = row('reports');
    expect(within(reports).getByText('paused')).toBeInTheDocument();
    expect(reports).toHaveTextContent('since 2m ago');
    expect(reports).toHaveTextContent(/oldest due job waited 5m 0\ds/);
    expect(reports).toHaveTextContent('7 queued (5 due, 2 scheduled)');
    expect(reports).toHaveTextContent('0 running, no limit');
    expect(reports).toHaveTextContent('no limit');
  });

  it('pauses a queue only after the confirmation, and shows it paused', async () => {
    const seen = serve([EMAILS]);
    renderApp('/queues');
    await userEvent.click(await screen.findByRole('button', { name: 'Pause queue emails' }, LOAD));
    const dialog = screen.getByRole('dialog', { name: 'Pause queue emails?' });
    expect(dialog).toHaveTextContent('its 2 running jobs finish');
    expect(seen.posts).toEqual([]);

    await userEvent.click(within(dialog).getByRole('button', { name: 'Go back' }));
    expect(screen.queryByRole('dialog')).not.toBeInTheDocument();
    expect(seen.posts).toEqual([]);

    await userEvent.click(screen.getByRole('button', { name: 'Pause queue emails' }));
    await userEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Pause queue' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(seen.posts).toEqual(['pause emails']);
    expect(screen.getByRole('status')).toHaveTextContent('Queue emails paused');
    expect(within(row('emails')).getByText('paused')).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Resume queue emails' })).toBeInTheDocument();
  });

  it('resumes a paused queue after the confirmation', async () => {
    const seen = serve([REPORTS]);
    renderApp('/queues');
    await userEvent.click(await screen.findByRole('button', { name: 'Resume queue reports' }, LOAD));
    const dialog = screen.getByRole('dialog', { name: 'Resume queue reports?' });
    expect(dialog).toHaveTextContent('its 5 due jobs again at once, within its limits, and its 2 scheduled for later when they are due');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Resume queue' }));
    await waitFor(() => expect(seen.posts).toEqual(['resume reports']));
    expect(await within(row('reports')).findByText('active')).toBeInTheDocument();
  });

  it('shows a failed pause in the dialog and keeps it open', async () => {
    serve([EMAILS]);
    server.use(http.post(`${API}/queues/:name/pause/`, () => HttpResponse.json({ detail: 'Nope.' }, { status: 403 })));
    renderApp('/queues');
    await userEvent.click(await screen.findByRole('button', { name: 'Pause queue emails' }, LOAD));
    await userEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Pause queue' }));
    expect(await within(screen.getByRole('dialog')).findByRole('alert')).toHaveTextContent('403: Nope.');
  });

  it('edits the limits with a PATCH and shows the new ones', async () => {
    const seen = serve([EMAILS]);
    renderApp('/queues');
    await userEvent.click(await screen.findByRole('button', { name: 'Edit limits of queue emails' }, LOAD));
    const form = screen.getByRole('form', { name: 'Limits of emails' });
    const concurrency = within(form).getByLabelText('Concurrency limit');
    expect(concurrency).toHaveFocus();
    expect(concurrency).toHaveValue(5);
    await userEvent.clear(concurrency);
    await userEvent.type(concurrency, '2');
    await userEvent.clear(within(form).getByLabelText('Rate limit'));
    await userEvent.click(within(form).getByRole('button', { name: 'Save limits' }));

    await waitFor(() => expect(screen.queryByRole('form', { name: 'Limits of emails' })).not.toBeInTheDocument());
    expect(seen.patches).toEqual([{ concurrency_limit: 2, rate_limit: null }]);
    expect(screen.getByRole('status')).toHaveTextContent('Limits of emails saved');
    expect(row('emails')).toHaveTextContent('of 2 running');
  });

  it('shows the API’s field errors under the field and sends nothing the form refuses', async () => {
    const seen = serve([EMAILS]);
    renderApp('/queues');
    await userEvent.click(await screen.findByRole('button', { name: 'Edit limits of queue emails' }, LOAD));
    const form = screen.getByRole('form', { name: 'Limits of emails' });
    const concurrency = within(form).getByLabelText('Concurrency limit');

    await userEvent.clear(concurrency);
    await userEvent.type(concurrency, '0');
    await userEvent.click(within(form).getByRole('button', { name: 'Save limits' }));
    expect(concurrency).toHaveAccessibleDescription(/must be a whole number of 1 or more/);
    expect(seen.patches).toEqual([]);

    await userEvent.clear(concurrency);
    await userEvent.type(concurrency, '500');
    await userEvent.click(within(form).getByRole('button', { name: 'Save limits' }));
    await waitFor(() => expect(concurrency).toHaveAccessibleDescription(/less than or equal to 100/));
    expect(concurrency).toHaveAttribute('aria-invalid', 'true');
    expect(seen.patches).toHaveLength(1);
    expect(screen.getByRole('form', { name: 'Limits of emails' })).toBeInTheDocument();
  });

  it('closes the limits form with Escape without saving', async () => {
    const seen = serve([EMAILS]);
    renderApp('/queues');
    await userEvent.click(await screen.findByRole('button', { name: 'Edit limits of queue emails' }, LOAD));
    await userEvent.keyboard('{Escape}');
    expect(screen.queryByRole('form', { name: 'Limits of emails' })).not.toBeInTheDocument();
    await waitFor(() => expect(screen.getByRole('button', { name: 'Edit limits of queue emails' })).toHaveFocus());
    expect(seen.patches).toEqual([]);
  });

  it('offers no action without the permission to change jobs', async () => {
    serve([EMAILS, REPORTS]);
    server.use(http.get(`${API}/auth/session/`, () => HttpResponse.json(viewOnlySession)));
    renderApp('/queues');
    const table = await screen.findByRole('table', { name: 'Queues' }, LOAD);
    expect(within(table).queryByRole('button', { name: /Pause|Resume|Edit limits/ })).not.toBeInTheDocument();
    expect(screen.queryByRole('columnheader', { name: 'Actions' })).not.toBeInTheDocument();
    expect(screen.getByText(/can look at queues but not change them/)).toBeInTheDocument();
  });

  it('says when there is no queue', async () => {
    renderApp('/queues');
    expect(await screen.findByText(/No queue yet/, {}, LOAD)).toBeInTheDocument();
  });

  it('is in the main navigation', async () => {
    renderApp('/');
    const link = within(screen.getByRole('navigation', { name: 'Main' })).getByRole('link', { name: 'Queues' });
    expect(link).toHaveAttribute('href', '/queues');
  });
});
