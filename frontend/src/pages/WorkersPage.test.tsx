import { screen, within } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, JOB_ID, makeProcess, makeThread, makeWorkers } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

describe('Workers page', () => {
  it('shows each live process, idle threads too, and what its busy threads run', async () => {
    const busy = makeThread(1, { id: JOB_ID, type: 'demo.slow', queue: 'reports', attempt: 2, started_at: new Date().toISOString() });
    server.use(
      http.get(`${API}/workers/`, () =>
        HttpResponse.json(
          makeWorkers([
            makeProcess([makeThread(2), busy], { queues: ['reports'] }),
            makeProcess([makeThread(1, null, 'other:7')], { worker_id: 'other:7', hostname: 'other', pid: 7 }),
          ]),
        ),
      ),
    );
    renderApp('/workers');
    const box = await screen.findByRole('region', { name: 'box · pid 4242' });
    expect(screen.getByRole('region', { name: 'other · pid 7' })).toHaveTextContent('0 of 1 threads busy');
    expect(box).toHaveTextContent('1 of 2 threads busy · 0 attempts finished in 15 min · queue reports');

    const rows = within(box).getAllByRole('row').slice(1);
    expect(rows.map((row) => within(row).getByRole('rowheader').textContent)).toEqual(['thread 1', 'thread 2']);
    expect(within(rows[0]!).getByRole('link', { name: JOB_ID.slice(0, 8) })).toHaveAttribute('href', `/jobs/${JOB_ID}`);
    expect(rows[0]).toHaveTextContent('demo.slow');
    expect(rows[0]).toHaveTextContent('queue reports · attempt 2');
    expect(rows[1]).toHaveTextContent('idle');
  });

  it('names the abandoned threads still in a handler, with the job each runs', async () => {
    server.use(
      http.get(`${API}/workers/`, () =>
        HttpResponse.json(
          makeWorkers([
            makeProcess([makeThread(5)], {
              threads_configured: 1,
              threads_abandoned: [
                {
                  worker_id: 'box:4242:thread-1:00c0ffee',
                  job: { id: JOB_ID, type: 'demo.hang', attempt: 1, status: 'failed' },
                  abandoned_at: new Date(Date.now() - 30_000).toISOString(),
                },
              ],
            }),
          ]),
        ),
      ),
    );
    renderApp('/workers');
    const group = await screen.findByRole('group', { name: 'Abandoned threads of box · pid 4242' });
    expect(group).toHaveTextContent('1 abandoned thread still runs its handler');
    expect(group).toHaveTextContent('thread 1: 8421aca2 demo.hang · attempt 1 · the job is failed now · abandoned');
    expect(within(group).getByRole('link')).toHaveAttribute('href', `/jobs/${JOB_ID}`);
    expect(screen.getByRole('region', { name: 'box · pid 4242' })).toHaveTextContent(
      '0 of 1 threads busy · 1 abandoned thread still in a handler',
    );
  });

  it('says when no worker is running', async () => {
    server.use(http.get(`${API}/workers/`, () => HttpResponse.json(makeWorkers([]))));
    renderApp('/workers');
    expect(await screen.findByText(/No worker is running/)).toBeInTheDocument();
  });
});
