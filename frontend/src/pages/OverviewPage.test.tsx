import { screen, waitFor, within } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, JOB_ID, makeJobTypes, makeQueue, makeSchedule, makeThroughput, makeTypeHealth, stats } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

describe('Overview page', () => {
  it('shows each stat and asks for the 15-minute throughput window', async () => {
    const seen: Record<string, string>[] = [];
    server.use(
      http.get(`${API}/jobs/stats/`, () =>
        HttpResponse.json({
          ...stats,
          total: 60,
          by_status: { queued: 4, running: 2, succeeded: 41, failed: 12, cancelled: 1 },
          due: 4,
          overdue_running: 1,
          retries_pending: 3,
          // A job scheduled long ago is still queued, but the backlog is the oldest *due* one.
          oldest_queued_at: new Date(Date.now() - 3_600_000).toISOString(),
          oldest_due_at: new Date(Date.now() - 125_000).toISOString(),
        }),
      ),
      http.get(`${API}/jobs/throughput/`, ({ request }) => {
        seen.push(Object.fromEntries(new URL(request.url).searchParams));
        return HttpResponse.json(makeThroughput([[1, 0], [4, 2]]));
      }),
    );
    renderApp('/');
    const list = await screen.findByRole('list', { name: 'Queue statistics' });
    const card = (label: string) => within(list).getByText(label).closest('li')!;
    await waitFor(() => expect(card('Total jobs')).toHaveTextContent('60'));
    expect(card('Queued')).toHaveTextContent('4');
    expect(card('Running')).toHaveTextContent('2');
    expect(card('Succeeded')).toHaveTextContent('41');
    expect(card('Failed')).toHaveTextContent('12');
    expect(card('Cancelled')).toHaveTextContent('1');
    expect(within(card('Cancelled')).getByRole('link')).toHaveAttribute('href', '/jobs?status=cancelled');
    expect(card('Overdue running')).toHaveTextContent('1');
    expect(card('Retries pending')).toHaveTextContent('3');
    expect(card('Backlog age')).toHaveTextContent(/2m \d\ds/);
    expect(within(card('Failed')).getByRole('link')).toHaveAttribute('href', '/jobs?status=failed');

    expect(await screen.findAllByTestId('throughput-bar')).toHaveLength(2);
    expect(seen[0]).toEqual({ minutes: '15', bucket_seconds: '60' });
  });

  it('shows jobs scheduled for later apart from the due ones', async () => {
    server.use(
      http.get(`${API}/jobs/stats/`, () =>
        HttpResponse.json({ ...stats, by_status: { ...stats.by_status, queued: 7 }, scheduled: 5, due: 2 }),
      ),
    );
    renderApp('/');
    const list = await screen.findByRole('list', { name: 'Queue statistics' });
    const card = (label: string) => within(list).getByText(label).closest('li')!;
    await waitFor(() => expect(card('Scheduled')).toHaveTextContent('5'));
    expect(card('Queued')).toHaveTextContent('2');
    expect(card('Queued')).toHaveTextContent('due now');
  });

  it('marks estimated counts of a very large table with ≈ and says why', async () => {
    server.use(
      http.get(`${API}/jobs/stats/`, () =>
        HttpResponse.json({
          ...stats,
          total: 10_000_004,
          by_status: { queued: 4, running: 0, succeeded: 9_000_000, failed: 1_000_000, cancelled: 0 },
          due: 4,
          estimated: true,
        }),
      ),
      http.get(`${API}/jobs/throughput/`, () => HttpResponse.json(makeThroughput([[0, 0]]))),
    );
    renderApp('/');
    const list = await screen.findByRole('list', { name: 'Queue statistics' });
    const card = (label: string) => within(list).getByText(label).closest('li')!;
    await waitFor(() => expect(card('Total jobs')).toHaveTextContent('≈10,000,004'));
    expect(card('Total jobs')).toHaveTextContent("estimated from the database's statistics");
    expect(card('Succeeded')).toHaveTextContent('≈9,000,000');
    expect(card('Queued')).toHaveTextContent('4');
    expect(card('Queued')).not.toHaveTextContent('≈');
  });

  it('shows the unreachable banner and clears it when the API returns', async () => {
    server.use(
      http.get(`${API}/health/`, () => HttpResponse.error()),
      http.get(`${API}/jobs/stats/`, () => HttpResponse.error()),
    );
    renderApp('/', { pollIntervalMs: 50 });
    expect(await screen.findByText('API unreachable.')).toBeInTheDocument();
    expect(await screen.findByText('Could not load this data')).toBeInTheDocument();

    server.resetHandlers();
    await waitFor(() => expect(screen.queryByText('API unreachable.')).not.toBeInTheDocument(), { timeout: 3000 });
    await waitFor(() => expect(screen.getByRole('list', { name: 'Queue statistics' })).toBeInTheDocument(), {
      timeout: 3000,
    });
  });

  it('puts failing types, expired leases and an old backlog first under "Needs attention"', async () => {
    const seen: string[] = [];
    server.use(
      http.get(`${API}/jobs/stats/`, () =>
        HttpResponse.json({ ...stats, overdue_running: 1, oldest_due_at: new Date(Date.now() - 600_000).toISOString() }),
      ),
      http.get(`${API}/jobs/types/`, ({ request }) => {
        seen.push(new URL(request.url).searchParams.get('minutes') ?? '');
        return HttpResponse.json(
          makeJobTypes([makeTypeHealth('demo.fail', { counts: { failed: 4 } }), makeTypeHealth('demo.success', { counts: { succeeded: 9 } })], 15),
        );
      }),
    );
    renderApp('/');
    const list = await screen.findByRole('list', { name: 'Needs attention' });
    const items = await within(list).findAllByRole('listitem');
    expect(items.map((item) => item.getAttribute('data-kind'))).toEqual(['failing_type', 'overdue_leases', 'backlog']);
    expect(items[0]).toHaveTextContent('demo.fail is failing: 100% of attempts');
    expect(within(items[0]!).getByRole('link', { name: 'demo.fail jobs' })).toHaveAttribute('href', '/jobs?type=demo.fail');
    expect(seen[0]).toBe('15');
    // The attention panel comes before the counts.
    const headings = screen.getAllByRole('heading', { level: 2 }).map((h) => h.textContent);
    expect(headings[0]).toBe('Needs attention');
  });

  it('says "Nothing needs attention" when all is fine', async () => {
    server.use(
      http.get(`${API}/jobs/types/`, () =>
        HttpResponse.json(makeJobTypes([makeTypeHealth('demo.success', { counts: { succeeded: 9 } })], 15)),
      ),
    );
    renderApp('/');
    expect(await screen.findByText('Nothing needs attention.')).toBeInTheDocument();
  });

  it('does not say all is fine when the job types did not load', async () => {
    server.use(http.get(`${API}/jobs/types/`, () => HttpResponse.json({ detail: 'boom' }, { status: 500 })));
    renderApp('/');
    expect(await screen.findByText(/Failing job types are unknown/)).toBeInTheDocument();
    expect(screen.queryByText('Nothing needs attention.')).not.toBeInTheDocument();
  });

  it('lists a paused queue holding jobs and a schedule whose last job failed under Needs attention', async () => {
    server.use(
      http.get(`${API}/queues/`, () =>
        HttpResponse.json([
          makeQueue({
            name: 'emails',
            paused: true,
            paused_at: new Date(Date.now() - 60_000).toISOString(),
            counts: { queued: 12, waiting: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 },
            due: 12,
          }),
          makeQueue({ name: 'default', counts: { queued: 3, waiting: 0, running: 1, succeeded: 0, failed: 0, cancelled: 0 }, due: 3 }),
        ]),
      ),
      http.get(`${API}/schedules/`, () =>
        HttpResponse.json([
          makeSchedule({
            name: 'nightly-report',
            last_job: { id: JOB_ID, status: 'failed', created_at: new Date(Date.now() - 60_000).toISOString() },
          }),
          makeSchedule({ name: 'fine' }),
        ]),
      ),
    );
    renderApp('/');
    const list = await screen.findByRole('list', { name: 'Needs attention' });
    const paused = await within(list).findByText('Queue emails is paused with 12 due jobs waiting');
    expect(within(paused.closest('li')!).getByRole('link', { name: 'Queued jobs in emails' })).toHaveAttribute(
      'href',
      '/jobs?status=queued&queue=emails',
    );
    const failed = within(list).getByText('Schedule nightly-report: its last job failed');
    expect(within(failed.closest('li')!).getByRole('link')).toHaveAttribute('href', `/jobs/${JOB_ID}`);
    expect(within(list).getAllByRole('listitem')).toHaveLength(2);
  });

  it('says the flow-control rules are unknown when queues and schedules cannot be read', async () => {
    server.use(
      http.get(`${API}/queues/`, () => HttpResponse.json({ detail: 'Forbidden.' }, { status: 403 })),
      http.get(`${API}/schedules/`, () => HttpResponse.json({ detail: 'Forbidden.' }, { status: 403 })),
    );
    renderApp('/');
    expect(await screen.findByText(/Paused queues are unknown: 403: Forbidden\./)).toHaveTextContent(
      'Failed schedules are unknown: 403: Forbidden.',
    );
  });
});
