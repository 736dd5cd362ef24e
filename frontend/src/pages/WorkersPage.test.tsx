import { screen, within } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { API, JOB_ID, makeProcess, makeWorker, makeWorkers } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

describe('Workers page', () => {
  it('shows each process with its threads, their current job and finished attempts', async () => {
    const running = makeWorker({
      worker_id: 'box:4242:thread-1:aa',
      finished: 7,
      current_job: {
        id: JOB_ID,
        type: 'demo.slow',
        queue: 'reports',
        attempt: 2,
        since: new Date().toISOString(),
        locked_until: new Date(Date.now() + 20_000).toISOString(),
        lease_overdue: false,
      },
    });
    const idle = makeWorker({ worker_id: 'box:4242:thread-2:bb', thread: 2, finished: 3 });
    const maintenance = makeWorker({ worker_id: 'box:4242:thread-0:cc', thread: 0, role: 'maintenance' });
    const other = makeWorker({ worker_id: 'other:7:thread-1:dd', host: 'other', pid: 7 });
    server.use(
      http.get(`${API}/workers/`, () =>
        HttpResponse.json(
          makeWorkers([
            makeProcess([maintenance, running, idle]),
            makeProcess([other], { process: 'other:7', host: 'other', pid: 7 }),
          ]),
        ),
      ),
    );
    renderApp('/workers');
    const box = await screen.findByRole('region', { name: 'box · pid 4242' });
    expect(screen.getByRole('region', { name: 'other · pid 7' })).toBeInTheDocument();
    expect(box).toHaveTextContent('1 of 2 threads busy · 10 finished');

    const rows = within(box).getAllByRole('row').slice(1);
    expect(rows.map((row) => within(row).getByRole('rowheader').textContent)).toEqual([
      'thread 1',
      'thread 2',
      'maintenance',
    ]);
    expect(within(rows[0]!).getByRole('link', { name: JOB_ID.slice(0, 8) })).toHaveAttribute('href', `/jobs/${JOB_ID}`);
    expect(rows[0]).toHaveTextContent('demo.slow');
    expect(rows[0]).toHaveTextContent('queue reports · attempt 2');
    expect(rows[0]).toHaveTextContent('7');
    expect(rows[1]).toHaveTextContent('idle');
  });

  it('says when no worker has been seen', async () => {
    renderApp('/workers');
    expect(await screen.findByText(/No worker seen in the last 15 minutes/)).toBeInTheDocument();
  });
});
