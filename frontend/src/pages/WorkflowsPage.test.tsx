import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { WorkflowSummary } from '../api/types';
import { API, WORKFLOW_ID, makeWorkflowSummary, workflowsPage } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

const UNNAMED_ID = 'abcdef01-0000-4000-8000-000000000002';

const WORKFLOWS = [
  makeWorkflowSummary({
    state: 'active',
    jobs: 10_002,
    counts: { queued: 4, waiting: 1, running: 4, succeeded: 9_990, failed: 3, cancelled: 0 },
  }),
  makeWorkflowSummary({ id: UNNAMED_ID, name: '', state: 'failed', jobs: 3 }),
];

/** Serves `results` and records each request's query string. */
function serve(results: WorkflowSummary[], count = results.length): URLSearchParams[] {
  const seen: URLSearchParams[] = [];
  server.use(
    http.get(`${API}/workflows/`, ({ request }) => {
      seen.push(new URL(request.url).searchParams);
      return HttpResponse.json(workflowsPage(results, count));
    }),
  );
  return seen;
}

describe('Workflows page', () => {
  it('lists each workflow by name or short id, linking to it, with its state, progress and size', async () => {
    serve(WORKFLOWS);
    renderApp('/workflows');
    const named = await screen.findByRole('link', { name: 'nightly-etl' });
    expect(named).toHaveAttribute('href', `/workflows/${WORKFLOW_ID}`);
    expect(screen.getByRole('link', { name: 'abcdef01' })).toHaveAttribute('href', `/workflows/${UNNAMED_ID}`);

    const row = named.closest('tr')!;
    expect(within(row).getByText('active')).toHaveAttribute('data-state', 'active');
    expect(within(row).getByRole('img', { name: '10,002 jobs: 9,990 succeeded · 3 failed · 4 running · 4 queued · 1 waiting' }))
      .toBeInTheDocument();
    expect(row.querySelector('[data-status="succeeded"]')).toHaveAttribute('data-count', '9990');
    expect(row).toHaveTextContent('10,002');
    expect(row.querySelector('time')).toHaveAttribute('dateTime', '2026-06-21T10:00:00Z');
    expect(document.title).toBe('Workflows · Job Queue');
  });

  it('keeps the state filter in the URL and asks the API for that state', async () => {
    const seen = serve(WORKFLOWS);
    const { router } = renderApp('/workflows');
    await screen.findByRole('link', { name: 'nightly-etl' });
    expect(seen[0]!.has('state')).toBe(false);

    await userEvent.selectOptions(screen.getByLabelText('State'), 'failed');
    await waitFor(() => expect(seen.at(-1)!.get('state')).toBe('failed'));
    expect(router.state.location.search).toBe('?state=failed');
  });

  it('reads the state filter from the URL on first load', async () => {
    const seen = serve([WORKFLOWS[1]!]);
    renderApp('/workflows?state=failed');
    await screen.findByRole('link', { name: 'abcdef01' });
    expect(seen[0]!.get('state')).toBe('failed');
    expect(screen.getByLabelText('State')).toHaveValue('failed');
  });

  it('says there are no workflows yet, and how one is made', async () => {
    serve([]);
    renderApp('/workflows');
    expect(await screen.findByText(/No workflows yet/)).toHaveTextContent('POST /api/workflows/');
    expect(screen.queryByRole('table')).not.toBeInTheDocument();
  });

  it('says none is in the state filtered, with a way back to all of them', async () => {
    serve([]);
    renderApp('/workflows?state=cancelled');
    expect(await screen.findByText(/No cancelled workflows/)).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'Show every workflow' })).toHaveAttribute('href', '/workflows');
  });

  it('pages by the API page number, kept in the URL', async () => {
    const seen = serve(WORKFLOWS, 120);
    const { router } = renderApp('/workflows');
    const pager = await screen.findByRole('navigation', { name: 'Workflow pages' });
    expect(pager).toHaveTextContent('1–50 of 120');
    await userEvent.click(within(pager).getByRole('button', { name: 'Next →' }));
    await waitFor(() => expect(seen.at(-1)!.get('page')).toBe('2'));
    expect(router.state.location.search).toBe('?page=2');
    await waitFor(() => expect(pager).toHaveTextContent('51–100 of 120'));
  });

  it('offers the first page when the page asked for is past the last', async () => {
    server.use(http.get(`${API}/workflows/`, () => HttpResponse.json({ detail: 'Invalid page.' }, { status: 404 })));
    renderApp('/workflows?page=9&state=failed');
    expect(await screen.findByText(/Page 9 is past the last page/)).toBeInTheDocument();
    expect(screen.getByRole('link', { name: 'First page' })).toHaveAttribute('href', '/workflows?state=failed');
  });

  it('says the API could not be reached instead of an empty list', async () => {
    server.use(http.get(`${API}/workflows/`, () => HttpResponse.error()));
    renderApp('/workflows');
    expect(await screen.findByRole('alert')).toHaveTextContent('Could not load this data');
    expect(screen.queryByText(/No workflows yet/)).not.toBeInTheDocument();
  });
});
