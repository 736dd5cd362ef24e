import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, config, jobsPage, makeJob, stats } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

function serveJobs() {
  const seen: Record<string, string>[] = [];
  server.use(
    http.get(`${API}/jobs/`, ({ request }) => {
      const params = Object.fromEntries(new URL(request.url).searchParams);
      // limit=1 is a bulk action's count (JobsPage.bulk.test.tsx), not the page.
      if (params.limit !== '1') seen.push(params);
      const offset = Number(params.offset ?? 0);
      const status = (params.status as 'failed' | undefined) ?? 'succeeded';
      return HttpResponse.json(
        jobsPage(
          [makeJob({ id: `00000000-0000-4000-8000-0000000000${String(offset).padStart(2, '0')}`, status })],
          60,
        ),
      );
    }),
  );
  return seen;
}

describe('Jobs page', () => {
  it('filters by state, error, key and metadata, shows the last error, and a new status drops the state', async () => {
    server.use(
      http.get(`${API}/jobs/`, () =>
        HttpResponse.json(
          jobsPage([
            makeJob({
              status: 'failed',
              last_error: 'amount must be positive',
              last_exception_class: 'builtins.ValueError',
            }),
          ]),
        ),
      ),
    );
    const { router } = renderApp('/jobs?status=queued&due=true&error=positive&key=k-1&metadata=request_id%3Dr-1');
    const table = await screen.findByRole('table');
    expect(within(table).getByText('ValueError')).toBeInTheDocument();
    expect(table).toHaveTextContent('ValueError: amount must be positive');
    expect(screen.getByRole('combobox', { name: 'State' })).toHaveValue('due');
    expect(screen.getByRole('searchbox', { name: 'Error contains' })).toHaveValue('positive');
    await userEvent.selectOptions(screen.getByRole('combobox', { name: 'Status' }), 'failed');
    await waitFor(() =>
      expect(router.state.location.search).toBe('?status=failed&error=positive&key=k-1&metadata=request_id%3Dr-1'),
    );
  });

  it('renders a real table with status badges and links', async () => {
    serveJobs();
    renderApp('/jobs');
    const table = await screen.findByRole('table');
    expect(within(table).getAllByRole('columnheader').map((h) => h.textContent)).toEqual([
      '',
      'Job',
      'Type↕',
      'Queue',
      'Status',
      'Priority↕',
      'Attempts',
      'Created↕',
      'Available',
      'Started↕',
      'Duration',
      'Finished↕',
      'Last error',
    ]);
    expect(within(table).getByRole('checkbox', { name: 'Select all jobs on this page' })).not.toBeChecked();
    const row = within(table).getAllByRole('row')[1]!;
    expect(within(row).getByText('succeeded')).toHaveClass('badge--success');
    expect(within(row).getAllByRole('cell')[3]).toHaveTextContent('default');
    expect(within(row).getByRole('link')).toHaveAttribute('href', '/jobs/00000000-0000-4000-8000-000000000000');
    const created = row.querySelector('time')!;
    expect(created).toHaveAttribute('title', expect.stringMatching(/^2026-06-2\d \d\d:\d\d:\d\d\.\d{3} [+-]\d\d:\d\d$/));
  });

  it('filters by status and type and pages with offsets', async () => {
    const seen = serveJobs();
    renderApp('/jobs');
    await screen.findByRole('table');
    await userEvent.selectOptions(screen.getByLabelText('Status'), 'failed');
    await waitFor(() => expect(seen.at(-1)).toMatchObject({ status: 'failed', offset: '0' }));
    await userEvent.type(screen.getByLabelText('Type contains'), 'demo.f');
    await waitFor(() => expect(seen.at(-1)).toMatchObject({ status: 'failed', type: 'demo.f' }));
    await userEvent.click(screen.getByRole('button', { name: /next/i }));
    // No `limit` in the URL: the API pages at its default, which /config/ gives the pager.
    await waitFor(() => expect(seen.at(-1)).toEqual({ status: 'failed', type: 'demo.f', offset: '25' }));
    expect(await screen.findByText(/26–50 of 60/)).toBeInTheDocument();
  });

  it('takes the page sizes from /config/', async () => {
    server.use(
      http.get(`${API}/config/`, () =>
        HttpResponse.json({ ...config, pagination: { ...config.pagination, jobs: { default_limit: 20, max_limit: 40 } } }),
      ),
    );
    const seen = serveJobs();
    renderApp('/jobs');
    const rows = await screen.findByLabelText('Rows');
    expect(within(rows).getAllByRole('option').map((o) => o.textContent)).toEqual(['10', '20', '25', '40']);
    expect(rows).toHaveValue('20');
    expect(screen.getByText(/1–20 of 60/)).toBeInTheDocument();

    await userEvent.click(screen.getByRole('button', { name: /next/i }));
    await waitFor(() => expect(seen.at(-1)).toEqual({ offset: '20' }));
    await userEvent.selectOptions(screen.getByLabelText('Rows'), '40');
    await waitFor(() => expect(seen.at(-1)).toEqual({ limit: '40', offset: '0' }));
    expect(await screen.findByText(/1–40 of 60/)).toBeInTheDocument();
  });

  it('lowers a limit in the URL to the API maximum', async () => {
    const seen = serveJobs();
    renderApp('/jobs?limit=500');
    await screen.findByLabelText('Rows');
    await waitFor(() => expect(seen.at(-1)).toEqual({ limit: String(config.pagination.jobs.max_limit), offset: '0' }));
    expect(screen.getByLabelText('Rows')).toHaveValue(String(config.pagination.jobs.max_limit));
  });

  it('reads filters from the URL', async () => {
    const seen = serveJobs();
    renderApp('/jobs?status=failed&limit=10&offset=20');
    await screen.findByRole('table');
    expect(seen[0]).toEqual({ status: 'failed', limit: '10', offset: '20' });
    expect(screen.getByLabelText('Status')).toHaveValue('failed');
  });

  it('filters by queue through the URL and keeps a name the API would refuse out of it', async () => {
    const seen = serveJobs();
    const { router } = renderApp('/jobs?queue=emails');
    await screen.findByRole('table');
    expect(seen[0]).toEqual({ queue: 'emails', offset: '0' });
    const input = screen.getByLabelText('Queue');
    expect(input).toHaveValue('emails');

    await userEvent.clear(input);
    await userEvent.type(input, 'bulk mail');
    expect(input).toHaveAttribute('aria-invalid', 'true');
    expect(input).toHaveAccessibleDescription('Letters, digits and . _ : - only, starting with a letter or digit.');
    await new Promise((r) => setTimeout(r, 400)); // past the debounce
    expect(seen.every((p) => p.queue !== 'bulk mail')).toBe(true);
    expect(router.state.location.search).toBe('?queue=emails');

    await userEvent.clear(input);
    await userEvent.type(input, 'bulk-mail');
    await waitFor(() => expect(seen.at(-1)).toEqual({ queue: 'bulk-mail', offset: '0' }));
    expect(input).toHaveAttribute('aria-invalid', 'false');
    await userEvent.click(screen.getByRole('button', { name: 'Clear filters' }));
    await waitFor(() => expect(seen.at(-1)).toEqual({ offset: '0' }));
    expect(input).toHaveValue('');
  });

  it('offers every queue it knows of in the one queue field', async () => {
    const seen = serveJobs();
    server.use(http.get(`${API}/jobs/stats/`, () => HttpResponse.json({ ...stats, queues: ['emails'] })));
    const { router } = renderApp('/jobs');
    await screen.findByRole('table');
    const input = screen.getByLabelText('Queue');
    await waitFor(() =>
      expect([...document.querySelectorAll('#job-queue-filter-names option')].map((o) => o.getAttribute('value'))).toEqual([
        'default',
        'emails',
      ]),
    );
    expect(input).toHaveAttribute('list', 'job-queue-filter-names');
    expect(screen.queryByLabelText('Pick a queue')).not.toBeInTheDocument();
    await userEvent.type(input, 'emails');
    await waitFor(() => expect(seen.at(-1)).toEqual({ queue: 'emails', offset: '0' }));
    expect(router.state.location.search).toBe('?queue=emails');
  });

  it('sorts by a column through the API ordering, and shows when each job started and how long it ran', async () => {
    const seen = serveJobs();
    server.use(
      http.get(`${API}/jobs/`, ({ request }) => {
        seen.push(Object.fromEntries(new URL(request.url).searchParams));
        return HttpResponse.json(
          jobsPage([
            makeJob({
              status: 'succeeded',
              ...{ started_at: '2026-06-21T02:33:00+03:30' },
              finished_at: '2026-06-21T02:35:05+03:30',
            }),
          ]),
        );
      }),
    );
    const { router } = renderApp('/jobs');
    const table = await screen.findByRole('table');
    const row = within(table).getAllByRole('row')[1]!;
    expect(row).toHaveTextContent('2m 05s');
    await userEvent.click(within(table).getByRole('button', { name: /Started/ }));
    await waitFor(() => expect(seen.at(-1)).toEqual({ ordering: '-started_at', offset: '0' }));
    expect(router.state.location.search).toBe('?ordering=-started_at');
    expect(within(table).getByRole('columnheader', { name: /Started/ })).toHaveAttribute('aria-sort', 'descending');
    await userEvent.click(within(table).getByRole('button', { name: /Started/ }));
    await waitFor(() => expect(seen.at(-1)).toEqual({ ordering: 'started_at', offset: '0' }));
  });

  it('shows an empty state', async () => {
    server.use(http.get(`${API}/jobs/`, () => HttpResponse.json(jobsPage([]))));
    renderApp('/jobs');
    expect(await screen.findByText(/No jobs yet/)).toBeInTheDocument();
  });

  it('shows an error state when the list fails', async () => {
    server.use(http.get(`${API}/jobs/`, () => HttpResponse.json({ detail: 'Boom.' }, { status: 500 })));
    renderApp('/jobs');
    expect(await screen.findByText('500: Boom.')).toBeInTheDocument();
  });
});
