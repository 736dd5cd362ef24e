import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { JobListItem, JobSelection, JobStatus } from '../api/types';
import { EMPTY_FILTER_REASON } from '../lib/bulk';
import { API, jobsPage, makeJob } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

const id = (n: number) => `${String(n).repeat(8)}-0000-4000-8000-${String(n).padStart(12, '0')}`;

const ROWS: JobListItem[] = [
  makeJob({ id: id(1), status: 'failed', attempts: 1 }),
  makeJob({ id: id(2), status: 'running', attempts: 1 }),
  makeJob({ id: id(3), status: 'succeeded', attempts: 1 }),
  makeJob({ id: id(4), status: 'cancelled' }),
  makeJob({ id: id(5), status: 'queued' }),
];

/**
 * A jobs list whose page is ROWS (count `total`) and whose one-row requests (the bulk
 * actions' counts) answer `counts[status]`; records every request and bulk body.
 */
function serve({
  total = 57,
  counts = {},
  retried = 0,
  cancelOutcome = { cancelled: 0, cancel_requested: 0 },
}: {
  total?: number;
  counts?: Partial<Record<JobStatus, number>>;
  retried?: number;
  cancelOutcome?: { cancelled: number; cancel_requested: number };
} = {}) {
  const seen = { pages: [] as Record<string, string>[], counts: [] as Record<string, string>[], bodies: [] as unknown[] };
  server.use(
    http.get(`${API}/jobs/`, ({ request }) => {
      const params = Object.fromEntries(new URL(request.url).searchParams);
      if (params.limit === '1') {
        seen.counts.push(params);
        return HttpResponse.json(jobsPage([], counts[params.status as JobStatus] ?? 0));
      }
      seen.pages.push(params);
      return HttpResponse.json(jobsPage(ROWS, total));
    }),
    http.post(`${API}/jobs/retry/`, async ({ request }) => {
      seen.bodies.push(await request.json());
      return HttpResponse.json({ retried });
    }),
    http.post(`${API}/jobs/cancel/`, async ({ request }) => {
      seen.bodies.push(await request.json());
      return HttpResponse.json(cancelOutcome);
    }),
  );
  return seen;
}

const bar = () => screen.getByRole('group', { name: 'Bulk actions' });

describe('Jobs page bulk actions on the filters', () => {
  it('are refused without a filter, and say why', async () => {
    const seen = serve();
    renderApp('/jobs');
    await screen.findByRole('table');
    const retry = within(bar()).getByRole('button', { name: 'Retry failed/cancelled' });
    const cancel = within(bar()).getByRole('button', { name: 'Cancel waiting/queued/running' });
    expect(retry).toBeDisabled();
    expect(cancel).toBeDisabled();
    expect(retry).toHaveAccessibleDescription(EMPTY_FILTER_REASON);
    expect(within(bar()).getByText('All 57 jobs:')).toBeInTheDocument();
    expect(seen.counts).toEqual([]);
  });

  it('retry every job of the filtered status, naming the list’s count, and show what the API did', async () => {
    const seen = serve({ total: 57, retried: 55 });
    renderApp('/jobs?status=failed&queue=emails');
    await screen.findByRole('table');
    expect(within(bar()).queryByRole('button', { name: /^Cancel/ })).not.toBeInTheDocument();
    await userEvent.click(within(bar()).getByRole('button', { name: 'Retry 57 failed' }));

    const dialog = screen.getByRole('dialog', { name: 'Retry 57 failed jobs?' });
    expect(dialog).toHaveTextContent(
      'This applies to every job matching the filters (status failed · queue emails), not just the ones on this page: 57 failed jobs right now.',
    );
    expect(seen.bodies).toEqual([]);
    await userEvent.click(within(dialog).getByRole('button', { name: 'Retry 57 jobs' }));

    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(seen.bodies).toEqual([{ status: 'failed', queue: 'emails' } satisfies JobSelection]);
    expect(await screen.findByText(/Retried 55 jobs: queued again\./)).toBeInTheDocument();
    // The status filter's count is the list's: no extra count requests.
    expect(seen.counts).toEqual([]);
  });

  it('count each status an action takes when no status is filtered, and cancel by type', async () => {
    const seen = serve({
      counts: { failed: 3, cancelled: 2, waiting: 1, queued: 4, running: 1 },
      cancelOutcome: { cancelled: 4, cancel_requested: 1 },
    });
    renderApp('/jobs?type=demo');
    await screen.findByRole('table');
    const retry = await within(bar()).findByRole('button', { name: 'Retry 5 failed/cancelled' });
    expect(retry).toBeEnabled();
    await userEvent.click(within(bar()).getByRole('button', { name: 'Cancel 6 waiting/queued/running' }));
    expect(new Set(seen.counts.map((p) => `${p.status} ${p.type}`))).toEqual(
      new Set(['failed demo', 'cancelled demo', 'waiting demo', 'queued demo', 'running demo']),
    );

    const dialog = screen.getByRole('dialog', { name: 'Cancel 6 waiting/queued/running jobs?' });
    expect(dialog).toHaveTextContent('every job matching the filters (type contains “demo”)');
    expect(dialog).toHaveTextContent('within one heartbeat (10 s)');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Cancel 6 jobs' }));
    expect(
      await screen.findByText(
        'Cancelled 4 waiting or queued jobs. Asked 1 running job to stop: it ends as cancelled within a heartbeat (10 s), when the handler next checks in.',
        { exact: false },
      ),
    ).toBeInTheDocument();
    expect(seen.bodies).toEqual([{ type: 'demo' }]);
  });

  it('are disabled when nothing matches', async () => {
    serve({ counts: { failed: 0, cancelled: 0, waiting: 0, queued: 2, running: 0 } });
    renderApp('/jobs?queue=emails');
    await screen.findByRole('table');
    const retry = await within(bar()).findByRole('button', { name: 'Retry 0 failed/cancelled' });
    expect(retry).toBeDisabled();
    expect(retry).toHaveAccessibleDescription('No failed or cancelled job matches.');
    expect(within(bar()).getByRole('button', { name: 'Cancel 2 waiting/queued/running' })).toBeEnabled();
  });

  it('keep the dialog open with the API’s error', async () => {
    serve({ total: 3 });
    server.use(
      http.post(`${API}/jobs/retry/`, () => HttpResponse.json({ queue: ['Letters, digits only.'] }, { status: 400 })),
    );
    renderApp('/jobs?status=cancelled');
    await screen.findByRole('table');
    await userEvent.click(within(bar()).getByRole('button', { name: 'Retry 3 cancelled' }));
    const dialog = screen.getByRole('dialog');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Retry 3 jobs' }));
    expect(await within(dialog).findByRole('alert')).toHaveTextContent('400: queue: Letters, digits only.');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Go back' }));
    expect(screen.queryByRole('dialog')).not.toBeInTheDocument();
  });
});

describe('Jobs page bulk actions on selected rows', () => {
  it('act on the selected rows they apply to, by id, then clear the selection', async () => {
    const seen = serve({ cancelOutcome: { cancelled: 0, cancel_requested: 1 } });
    renderApp('/jobs?type=demo');
    const table = await screen.findByRole('table');
    for (const n of [1, 2, 3]) {
      await userEvent.click(within(table).getByRole('checkbox', { name: `Select job ${id(n).slice(0, 8)}` }));
    }
    expect(within(bar()).getByText('3 jobs selected')).toBeInTheDocument();
    expect(within(table).getByRole('checkbox', { name: 'Select all jobs on this page' })).toHaveProperty(
      'indeterminate',
      true,
    );
    expect(within(bar()).getByRole('button', { name: 'Retry 1 failed/cancelled' })).toBeEnabled();
    await userEvent.click(within(bar()).getByRole('button', { name: 'Cancel 1 waiting/queued/running' }));

    const dialog = screen.getByRole('dialog', { name: 'Cancel 1 selected job?' });
    expect(dialog).toHaveTextContent(`Only the selected jobs that are waiting, queued or running: ${id(2).slice(0, 8)}.`);
    await userEvent.click(within(dialog).getByRole('button', { name: 'Cancel 1 job' }));
    expect(await screen.findByText(/Asked 1 running job to stop/)).toBeInTheDocument();
    expect(seen.bodies).toEqual([{ ids: [id(2)] }]);
    expect(within(table).getAllByRole('checkbox').filter((c) => (c as HTMLInputElement).checked)).toEqual([]);
    expect(within(bar()).getByText('All 57 jobs matching the filters:')).toBeInTheDocument();
  });

  it('select the whole page and act without any filter', async () => {
    const seen = serve({ retried: 2 });
    renderApp('/jobs');
    const table = await screen.findByRole('table');
    await userEvent.click(within(table).getByRole('checkbox', { name: 'Select all jobs on this page' }));
    expect(within(bar()).getByText('5 jobs selected')).toBeInTheDocument();
    await userEvent.click(within(bar()).getByRole('button', { name: 'Retry 2 failed/cancelled' }));
    await userEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Retry 2 jobs' }));
    expect(await screen.findByText(/Retried 2 jobs/)).toBeInTheDocument();
    expect(seen.bodies).toEqual([{ ids: [id(1), id(4)] }]);
  });

  it('start again with none when the filters change', async () => {
    serve();
    renderApp('/jobs');
    const table = await screen.findByRole('table');
    await userEvent.click(within(table).getByRole('checkbox', { name: `Select job ${id(1).slice(0, 8)}` }));
    expect(within(bar()).getByText('1 job selected')).toBeInTheDocument();
    await userEvent.selectOptions(screen.getByLabelText('Status'), 'failed');
    await waitFor(() => expect(within(bar()).queryByText('1 job selected')).not.toBeInTheDocument());
    expect(within(table).getByRole('checkbox', { name: `Select job ${id(1).slice(0, 8)}` })).not.toBeChecked();
  });
});
