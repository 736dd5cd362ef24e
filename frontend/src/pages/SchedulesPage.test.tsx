import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { Schedule } from '../api/types';
import { API, JOB_ID, makeJob, makeSchedule, viewOnlySession } from '../test/fixtures';
import { renderApp } from '../test/render';
import { server } from '../test/server';

/** The first answer and render, which a loaded machine can slow past the default second. */
const LOAD = { timeout: 5000 };

const NIGHTLY = makeSchedule({
  name: 'nightly-report',
  target: 'demo.fail',
  cron: '0 3 * * *',
  interval_seconds: null,
  timezone: 'Asia/Tehran',
  queue: 'reports',
  next_run_at: new Date(Date.now() + 3_600_000).toISOString(),
  last_run_at: new Date(Date.now() - 600_000).toISOString(),
  last_job: { id: JOB_ID, status: 'failed', created_at: new Date(Date.now() - 600_000).toISOString() },
});
const TICK = makeSchedule({ name: 'tick', target: 'jobs.tasks.ping', kind: 'task', interval_seconds: 30, missed: 'skip' });
const NEW_JOB_ID = '11111111-2222-4333-8444-555555555555';

function serve(schedules: Schedule[]) {
  const state = new Map(schedules.map((s) => [s.name, s]));
  const posts: string[] = [];
  server.use(
    http.get(`${API}/schedules/`, () => HttpResponse.json([...state.values()])),
    http.post(`${API}/schedules/:name/:action/`, ({ params }) => {
      const name = String(params.name);
      const action = String(params.action);
      posts.push(`${action} ${name}`);
      const current = state.get(name);
      if (!current) return HttpResponse.json({ detail: 'Not found.' }, { status: 404 });
      if (action === 'trigger') {
        const job = makeJob({ id: NEW_JOB_ID, type: current.target ?? '', queue: current.queue ?? 'default' });
        const schedule = { ...current, last_job: { id: job.id, status: job.status, created_at: job.created_at } };
        state.set(name, schedule);
        return HttpResponse.json({ schedule, job }, { status: 201 });
      }
      const paused = action === 'pause';
      const schedule = {
        ...current,
        paused,
        paused_at: paused ? new Date().toISOString() : null,
        next_run_at: paused ? null : current.next_run_at,
      };
      state.set(name, schedule);
      return HttpResponse.json(schedule);
    }),
  );
  return posts;
}

/** The table row of `name` (its accessible name runs its cells together). */
function row(name: string): HTMLElement {
  const found = screen.getAllByRole('row').find((r) => r.getAttribute('data-schedule') === name);
  if (!found) throw new Error(`no row for ${name}`);
  return found;
}

describe('Schedules page', () => {
  it('lists each schedule with its target, cadence, time zone, next run and last job', async () => {
    serve([NIGHTLY, TICK]);
    renderApp('/schedules');
    await screen.findByRole('table', { name: 'Schedules' }, LOAD);
    const nightly = row('nightly-report');
    expect(nightly).toHaveTextContent('demo.fail');
    expect(nightly).toHaveTextContent('job type · queue reports');
    expect(nightly).toHaveTextContent('0 3 * * *');
    expect(nightly).toHaveTextContent('Asia/Tehran · missed ticks: run the latest once');
    expect(within(nightly).getByText('active')).toBeInTheDocument();
    expect(nightly).toHaveTextContent(/in (59|60)m/);
    const last = within(nightly).getByRole('link', { name: `Last job ${JOB_ID.slice(0, 8)}, failed` });
    expect(last).toHaveAttribute('href', `/jobs/${JOB_ID}`);
    expect(nightly.querySelector('[data-status]')).toHaveAttribute('data-status', 'failed');

    const tick = row('tick');
    expect(tick).toHaveTextContent('every 30 s');
    expect(tick).toHaveTextContent('task · queue default');
    expect(tick).toHaveTextContent('missed ticks: skipped');
    expect(tick).toHaveTextContent('none yet');
  });

  it('marks a failing schedule and one that cannot run, with why', async () => {
    const failing = makeSchedule({
      name: 'reports',
      error: 'ProgrammingError: the database refused the job',
      error_at: '2026-06-21T10:00:00Z',
    });
    const refused = makeSchedule({
      name: 'refused',
      runnable: false,
      priority: 40000,
      next_run_at: null,
      error: 'Cannot run as declared: priority: an integer from -32768 to 32767, got 40000.',
    });
    serve([failing, refused, TICK]);
    renderApp('/schedules');
    await screen.findByRole('table', { name: 'Schedules' }, LOAD);
    expect(within(row('reports')).getByText('failing')).toHaveAttribute('data-failing', 'true');
    expect(row('reports')).toHaveTextContent('the database refused the job');
    expect(within(row('refused')).getByText('cannot run')).toBeInTheDocument();
    expect(row('refused')).toHaveTextContent('priority: an integer from -32768 to 32767');
    expect(row('tick').querySelector('[data-failing]')).toBeNull();
  });

  it('triggers a schedule only after the confirmation and links to the new job', async () => {
    const posts = serve([NIGHTLY]);
    renderApp('/schedules');
    await userEvent.click(await screen.findByRole('button', { name: 'Trigger now: schedule nightly-report' }, LOAD));
    const dialog = screen.getByRole('dialog', { name: 'Run schedule nightly-report?' });
    expect(dialog).toHaveTextContent('Enqueues one demo.fail job on queue reports now');
    expect(posts).toEqual([]);
    await userEvent.click(within(dialog).getByRole('button', { name: 'Trigger now' }));

    const link = await screen.findByTestId('triggered-job-link');
    expect(link).toHaveAttribute('href', `/jobs/${NEW_JOB_ID}`);
    expect(posts).toEqual(['trigger nightly-report']);
    expect(screen.queryByRole('dialog')).not.toBeInTheDocument();
    await waitFor(() =>
      expect(within(row('nightly-report')).getByRole('link', { name: /^Last job 11111111/ })).toBeInTheDocument(),
    );
  });

  it('pauses and resumes a schedule after confirming; a paused one has no next run', async () => {
    const posts = serve([NIGHTLY]);
    renderApp('/schedules');
    await userEvent.click(await screen.findByRole('button', { name: 'Pause schedule nightly-report' }, LOAD));
    await userEvent.click(within(screen.getByRole('dialog', { name: 'Pause schedule nightly-report?' })).getByRole('button', { name: 'Pause schedule' }));
    await waitFor(() => expect(within(row('nightly-report')).getByText('paused', { selector: '.badge' })).toBeInTheDocument());
    expect(row('nightly-report').querySelector('[data-next-run]')).toHaveTextContent('paused');
    expect(row('nightly-report')).toHaveTextContent('since just now');

    await userEvent.click(screen.getByRole('button', { name: 'Resume schedule nightly-report' }));
    await userEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Resume schedule' }));
    await waitFor(() => expect(within(row('nightly-report')).getByText('active')).toBeInTheDocument());
    expect(posts).toEqual(['pause nightly-report', 'resume nightly-report']);
  });

  it('shows a failed trigger in the dialog', async () => {
    serve([NIGHTLY]);
    server.use(
      http.post(`${API}/schedules/:name/trigger/`, () => HttpResponse.json({ detail: 'Schedule not found.' }, { status: 404 })),
    );
    renderApp('/schedules');
    await userEvent.click(await screen.findByRole('button', { name: 'Trigger now: schedule nightly-report' }, LOAD));
    await userEvent.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Trigger now' }));
    expect(await within(screen.getByRole('dialog')).findByRole('alert')).toHaveTextContent('404: Schedule not found.');
  });

  it('offers no action without the permission to change jobs', async () => {
    serve([NIGHTLY]);
    server.use(http.get(`${API}/auth/session/`, () => HttpResponse.json(viewOnlySession)));
    renderApp('/schedules');
    const table = await screen.findByRole('table', { name: 'Schedules' }, LOAD);
    expect(within(table).queryByRole('button', { name: /Pause|Resume|Trigger/ })).not.toBeInTheDocument();
    expect(screen.getByText(/can look at schedules but not change them/)).toBeInTheDocument();
  });

  it('says when no schedule is declared', async () => {
    renderApp('/schedules');
    expect(await screen.findByText(/No schedule is declared/, {}, LOAD)).toBeInTheDocument();
  });
});
