import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, makeJobTypes, makeTypeHealth } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

const TYPES = [
  makeTypeHealth('demo.success', { counts: { claimed: 9, succeeded: 8, released: 1 }, run_ms: { p50: 1000, p95: 1500 } }),
  makeTypeHealth('demo.fail', {
    counts: { claimed: 5, failed: 2, retry_scheduled: 1, timed_out: 1, cancelled_queued: 2 },
    failures: [0, 2, 0, 2],
    last_error: { message: 'Intentional demo failure', at: new Date().toISOString(), job_id: 'f0f0f0f0-0000-4000-8000-000000000001' },
  }),
  makeTypeHealth('demo.slow'),
];

function rowNames() {
  const table = screen.getByRole('table');
  return within(table)
    .getAllByRole('rowheader')
    .map((cell) => within(cell).getByRole('link').textContent);
}

/** Serves TYPES and records the `minutes` window of each request. */
function windowsAskedFor(): string[] {
  const seen: string[] = [];
  server.use(
    http.get(`${API}/jobs/types/`, ({ request }) => {
      seen.push(new URL(request.url).searchParams.get('minutes') ?? '');
      return HttpResponse.json(makeJobTypes(TYPES));
    }),
  );
  return seen;
}

describe('Job types page', () => {
  it('groups failures by error with counts, each linking to the jobs with that error', async () => {
    server.use(
      http.get(`${API}/jobs/types/`, () =>
        HttpResponse.json(
          makeJobTypes(TYPES, 60, [
            {
              type: 'demo.fail',
              exception_class: 'ValueError',
              message: 'amount must be positive',
              attempts: 3000,
              jobs: 1000,
              jobs_capped: true,
              last_at: new Date().toISOString(),
            },
            {
              type: 'demo.fail',
              exception_class: null,
              message: 'Lease expired; job requeued',
              attempts: 2,
              jobs: 2,
              jobs_capped: false,
              last_at: new Date().toISOString(),
            },
          ]),
        ),
      ),
    );
    renderApp('/job-types');
    const groups = await screen.findByRole('table', { name: 'Failures by error' });
    const rows = within(groups).getAllByRole('row').slice(1);
    expect(rows.map((row) => row.textContent)).toEqual([
      expect.stringContaining('ValueError: amount must be positive3,0001,000+'),
      expect.stringContaining('Lease expired; job requeued22'),
    ]);
    expect(within(rows[0]!).getByRole('link')).toHaveAttribute(
      'href',
      '/jobs?type=demo.fail&error=amount+must+be+positive',
    );
  });

  it('lists each type worst first, linking to its jobs, with its numbers and sparkline', async () => {
    const seen = windowsAskedFor();
    renderApp('/job-types');
    await screen.findByRole('link', { name: 'demo.fail' });
    expect(seen[0]).toBe('60');
    expect(rowNames()).toEqual(['demo.fail', 'demo.success', 'demo.slow']);
    expect(screen.getByRole('link', { name: 'demo.fail' })).toHaveAttribute('href', '/jobs?type=demo.fail');
    const fail = screen.getByRole('link', { name: 'demo.fail' }).closest('tr')!;
    expect(fail).toHaveTextContent('100%');
    expect(fail).toHaveTextContent('1 retried · 2 failed · 1 timed out');
    expect(fail).toHaveTextContent('+2 before running');
    expect(within(fail).getByRole('img', { name: 'demo.fail: 4 failures, per 1-minute bucket' })).toBeInTheDocument();
    expect(within(fail).getByRole('link', { name: 'Intentional demo failure' })).toHaveAttribute(
      'href',
      '/jobs/f0f0f0f0-0000-4000-8000-000000000001',
    );
    const success = screen.getByRole('link', { name: 'demo.success' }).closest('tr')!;
    expect(success).toHaveTextContent('1.0 s / 1.5 s');
    // A claim given back unstarted is shown beside the attempts, not among them.
    expect(success).toHaveTextContent('8+1 released');
    expect(fail).not.toHaveTextContent('released');
  });

  it('sorts by a column when its header is clicked, and flips on a second click', async () => {
    server.use(http.get(`${API}/jobs/types/`, () => HttpResponse.json(makeJobTypes(TYPES))));
    const { router } = renderApp('/job-types');
    await screen.findByRole('link', { name: 'demo.fail' });
    const header = screen.getByRole('columnheader', { name: /Type/ });
    expect(header).toHaveAttribute('aria-sort', 'none');

    await userEvent.click(within(header).getByRole('button'));
    await waitFor(() => expect(rowNames()).toEqual(['demo.fail', 'demo.slow', 'demo.success']));
    expect(header).toHaveAttribute('aria-sort', 'ascending');
    expect(router.state.location.search).toBe('?sort=type');

    await userEvent.click(within(header).getByRole('button'));
    await waitFor(() => expect(rowNames()).toEqual(['demo.success', 'demo.slow', 'demo.fail']));
    expect(header).toHaveAttribute('aria-sort', 'descending');
  });

  it('asks for another window when one is chosen', async () => {
    const seen = windowsAskedFor();
    renderApp('/job-types');
    await screen.findByRole('link', { name: 'demo.fail' });
    await userEvent.selectOptions(screen.getByLabelText('Window'), 'last 24 hours');
    await waitFor(() => expect(seen.at(-1)).toBe('1440'));
  });
});
