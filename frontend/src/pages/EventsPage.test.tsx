import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, JOB_ID, config, eventPage, makeEvent } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

const link = (cursor: string) => `${API}/job-events/?cursor=${encodeURIComponent(cursor)}&limit=2`;

function serveFeed() {
  const seen: Record<string, string>[] = [];
  server.use(
    http.get(`${API}/job-events/`, ({ request }) => {
      const params = Object.fromEntries(new URL(request.url).searchParams);
      seen.push(params);
      if (params.cursor === 'older-1') {
        return HttpResponse.json(eventPage([makeEvent({ id: 8 }), makeEvent({ id: 7 })], null, link('newer-1')));
      }
      return HttpResponse.json(eventPage([makeEvent({ id: 10, type: 'failed' }), makeEvent({ id: 9 })], link('older-1')));
    }),
  );
  return seen;
}

const ids = () =>
  within(screen.getByRole('table'))
    .getAllByRole('row')
    .slice(1)
    .map((r) => r.getAttribute('data-event-id'));

describe('Events page', () => {
  it('pages older and back to newer with the cursors the API returns', async () => {
    const seen = serveFeed();
    renderApp('/events?limit=10');
    await screen.findByRole('table');
    expect(ids()).toEqual(['10', '9']);
    expect(screen.getByRole('button', { name: /newer/i })).toBeDisabled();

    await userEvent.click(screen.getByRole('button', { name: /older/i }));
    await waitFor(() => expect(ids()).toEqual(['8', '7']));
    expect(seen.at(-1)).toMatchObject({ cursor: 'older-1', limit: '10' });
    expect(screen.getByRole('button', { name: /older/i })).toBeDisabled();

    await userEvent.click(screen.getByRole('button', { name: /newer/i }));
    await waitFor(() => expect(seen.at(-1)).toMatchObject({ cursor: 'newer-1' }));
  });

  it('filters by event type and by a job id or a short one, refusing fewer than 8 characters', async () => {
    const seen = serveFeed();
    renderApp('/events');
    await screen.findByRole('table');
    await userEvent.selectOptions(screen.getByLabelText('Event type'), 'failed');
    await waitFor(() => expect(seen.at(-1)).toMatchObject({ type: 'failed' }));

    const jobInput = screen.getByLabelText('Job ID');
    await userEvent.type(jobInput, '8421ac');
    expect(jobInput).toHaveAttribute('aria-invalid', 'true');
    expect(screen.getByText('Enter a job id or its first 8 characters or more.')).toBeInTheDocument();
    await userEvent.type(jobInput, 'a2');
    await waitFor(() => expect(seen.at(-1)).toMatchObject({ type: 'failed', job_id: '8421aca2' }));
    await userEvent.clear(jobInput);
    await userEvent.paste(JOB_ID);
    await waitFor(() => expect(seen.at(-1)).toMatchObject({ type: 'failed', job_id: JOB_ID }));
    expect(seen.some((p) => p.job_id === '8421ac')).toBe(false);
  });

  it('offers the released type in the filter and keeps it in the address', async () => {
    const seen = serveFeed();
    renderApp('/events?type=released');
    await screen.findByRole('table');
    expect(seen.at(-1)).toMatchObject({ type: 'released' });
    const select = screen.getByLabelText('Event type');
    expect(select).toHaveValue('released');
    expect(within(select).getAllByRole('option').map((o) => o.getAttribute('value'))).toContain('released');
  });

  it("shows the API's word on an ambiguous short id under the filter", async () => {
    server.use(
      http.get(`${API}/job-events/`, () =>
        HttpResponse.json({ job_id: ["'8421aca2' matches 2 jobs: type more characters."] }, { status: 400 }),
      ),
    );
    renderApp('/events?job_id=8421aca2');
    expect(await screen.findAllByText("'8421aca2' matches 2 jobs: type more characters.")).not.toHaveLength(0);
    expect(screen.getByLabelText('Job ID')).toHaveAttribute('aria-invalid', 'true');
  });

  it('hides heartbeats unless asked for, or filtered on', async () => {
    const seen = serveFeed();
    renderApp('/events');
    await screen.findByRole('table');
    expect(seen.at(-1)).toEqual({ heartbeats: 'exclude' });
    await userEvent.click(screen.getByRole('checkbox', { name: /Show heartbeats/ }));
    await waitFor(() => expect(seen.at(-1)).toEqual({ heartbeats: 'include' }));
    await userEvent.click(screen.getByRole('checkbox', { name: /Show heartbeats/ }));
    await userEvent.selectOptions(screen.getByLabelText('Event type'), 'lease_renewed');
    await waitFor(() => expect(seen.at(-1)).toEqual({ type: 'lease_renewed', heartbeats: 'include' }));
  });

  it('offers the page sizes from /config/ and leaves the default to the API', async () => {
    server.use(
      http.get(`${API}/config/`, () =>
        HttpResponse.json({ ...config, pagination: { ...config.pagination, job_events: { default_limit: 30, max_limit: 60 } } }),
      ),
    );
    const seen = serveFeed();
    renderApp('/events');
    const perPage = await screen.findByLabelText('Per page');
    expect(within(perPage).getAllByRole('option').map((o) => o.textContent)).toEqual(['10', '25', '30', '50', '60']);
    expect(perPage).toHaveValue('30');
    expect(seen[0]).toEqual({ heartbeats: 'exclude' });

    await userEvent.selectOptions(perPage, '60');
    await waitFor(() => expect(seen.at(-1)).toEqual({ limit: '60', heartbeats: 'exclude' }));
    await userEvent.selectOptions(screen.getByLabelText('Per page'), '30');
    await waitFor(() => expect(seen.at(-1)).toEqual({ heartbeats: 'exclude' }));
  });

  it('shows an empty state for filters that match nothing', async () => {
    server.use(http.get(`${API}/job-events/`, () => HttpResponse.json(eventPage([]))));
    renderApp('/events?type=manual_retry');
    expect(await screen.findByText('No events match these filters.')).toBeInTheDocument();
  });
});
