/**
 * What an operator reads at 3 a.m., on real data: tracebacks, short ids, live workers,
 * numbers that add up, one time-zone story, a quiet first load. Run by run-e2e.sh in its
 * first phase, against the same API, worker
 * and database.
 */
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { spawn } from 'node:child_process';
import path from 'node:path';
import {
  API,
  BACKEND,
  POLL_MS,
  RENDER_MS,
  cancelViaApi,
  createViaApi,
  jobStatus,
  screenshotPath,
} from './support';

test.describe.configure({ mode: 'serial' });

/** Open `route` with polling paused (stored as the header's control stores it): only the first load's requests. */
async function openPaused(page: Page, route: string) {
  await page.addInitScript(() => {
    window.localStorage.setItem('job-queue.polling', JSON.stringify({ intervalMs: 500, paused: true }));
  });
  await page.goto(route);
}

test("a failing job's class and traceback are on its page, no raw JSON to open", async ({ page, request }) => {
  const id = await createViaApi(request, { type: 'demo.fail', max_attempts: 2 });
  await expect.poll(() => jobStatus(request, id), { timeout: 30_000 }).toBe('failed');

  await page.goto(`/jobs/${id}`);
  const lastError = page.getByRole('region', { name: 'Last error' });
  await expect(lastError.locator('.last-error__class')).toHaveText(/Error$/);
  const traceback = lastError.getByLabel('Traceback of the last error');
  await expect(traceback).toBeVisible();
  await expect(traceback).toContainText('Traceback (most recent call last)');
  await expect(traceback).toContainText('Intentional demo failure');
  // Real lines, not a JSON string with literal \n.
  expect(await traceback.innerText()).not.toContain('\\n');

  const attempts = page.getByRole('table', { name: 'Attempts' });
  await expect(attempts.locator('tr[data-attempt]')).toHaveCount(2);
  await expect(attempts.locator('tr[data-attempt="1"]')).toHaveAttribute('data-outcome', 'retried');
  await expect(attempts.locator('tr[data-attempt="2"]')).toHaveAttribute('data-outcome', 'failed');
  await attempts.getByText('Traceback of attempt 1').click();
  await expect(attempts.getByLabel('Traceback of attempt 1')).toContainText('Intentional demo failure');

  // Heartbeats are collapsed by default; progress events show with the toggle.
  const timeline = page.getByRole('list', { name: 'Event timeline' });
  await expect(timeline.locator('li[data-event-type="failed"]')).toHaveCount(1);
  await expect(timeline.locator('li[data-event-type="progress"]')).toHaveCount(0);
  await page.getByRole('checkbox', { name: /Show heartbeats/ }).check();
  await expect(timeline.locator('li[data-event-type="progress"]').first()).toBeVisible();
  await page.getByRole('checkbox', { name: /Show heartbeats/ }).uncheck();

  // A finished job says nothing about being available.
  await expect(page.locator('dt', { hasText: /^Available$/ })).toHaveCount(0);
  await page.screenshot({ path: screenshotPath('job-failed.png'), fullPage: true });
});

test('the header finds a job by its short id, and a miss keeps the header on one row', async ({ page, request }) => {
  const id = await createViaApi(request, { type: 'demo.success' });
  await page.goto('/');
  const search = page.getByRole('search', { name: 'Find a job' });
  const box = search.getByRole('searchbox', { name: 'Job id, short id or idempotency key' });
  const header = page.locator('header.topbar');
  const height = (await header.boundingBox())!.height;

  await box.fill('0000000000');
  await box.press('Enter');
  await expect(search.getByRole('alert')).toContainText('No job has the id, id prefix or idempotency key');
  expect((await header.boundingBox())!.height).toBe(height);

  await box.fill(id.slice(0, 8));
  await search.getByRole('button', { name: 'Find' }).click();
  await expect(page).toHaveURL(new RegExp(`/jobs/${id}$`));
  await expect(page.getByText(id, { exact: true })).toBeVisible();

  // The event feed's job filter takes the short id too.
  await page.goto(`/events?job_id=${id.slice(0, 8)}`);
  await expect(page.locator('tbody tr[data-event-id]').first()).toBeVisible();
  const jobs = await page.locator('tbody tr[data-event-id] a').evaluateAll((els) => els.map((e) => e.textContent));
  expect(new Set(jobs)).toEqual(new Set([id.slice(0, 8)]));
});

test('a live idle worker is listed within one interval of starting and gone within one interval of kill -9', async ({
  page,
  request,
}) => {
  // An extra worker process on a queue nobody uses: idle all along.
  const worker = spawn(
    path.join(BACKEND, '.venv/bin/python'),
    ['manage.py', 'run_job_workers', '--queues', 'e2e-idle', '--threads', '1'],
    { cwd: BACKEND, env: process.env, stdio: 'ignore' },
  );
  const pid = worker.pid!;
  try {
    await page.goto('/workers');
    const region = page.getByRole('region', { name: new RegExp(`· pid ${pid}$`) });
    await expect(region).toBeVisible({ timeout: 30_000 });
    await expect(region).toContainText('0 of 1 threads busy');
    await expect(region).toContainText('queue e2e-idle');

    // Within one interval of its start, as the API says both.
    const listing = (await (await request.get(`${API}/workers/`)).json()) as {
      processes: { pid: number; started_at: string; last_seen_at: string; heartbeat_interval_seconds: number }[];
    };
    const me = listing.processes.find((p) => p.pid === pid)!;
    const intervalMs = me.heartbeat_interval_seconds * 1000;
    expect(Date.parse(me.last_seen_at) - Date.parse(me.started_at)).toBeLessThanOrEqual(intervalMs);

    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    await expect(region).toHaveCount(0, { timeout: intervalMs + POLL_MS + RENDER_MS });
    expect(Date.now() - killedAt).toBeLessThanOrEqual(intervalMs + POLL_MS + RENDER_MS);
    // The worker run-e2e.sh started is still there.
    await expect(page.getByRole('region', { name: /· pid \d+$/ })).toHaveCount(1);
  } finally {
    if (worker.exitCode === null) worker.kill('SIGKILL');
  }
});

interface TypeCounts {
  timed_out: number;
  cancelled: number;
  cancelled_queued: number;
}

async function typeCounts(request: APIRequestContext, type: string): Promise<TypeCounts | undefined> {
  const res = await request.get(`${API}/jobs/types/?minutes=60`);
  const body = (await res.json()) as { types: { type: string; counts: TypeCounts }[] };
  return body.types.find((t) => t.type === type)?.counts;
}

test('scheduled jobs apart on the overview; timed-out and cancelled attempts counted as such on Job types', async ({
  page,
  request,
}) => {
  // A job for later: scheduled, not queued-and-due; cancelled before it runs, it is no attempt.
  const later = await createViaApi(request, {
    type: 'demo.slow',
    payload: { sleep_seconds: 60 },
    available_at: new Date(Date.now() + 3_600_000).toISOString(),
  });
  await page.goto('/');
  const stats = page.getByRole('list', { name: 'Queue statistics' });
  const card = (label: string) =>
    stats.locator('li').filter({ has: page.locator('.stat__label', { hasText: new RegExp(`^${label}$`) }) });
  await expect(card('Scheduled').locator('.stat__value')).toHaveText('1');
  await expect(card('Queued').locator('.stat__value')).toHaveText('0', { timeout: 30_000 });
  await page.screenshot({ path: screenshotPath('overview.png'), fullPage: true });
  await cancelViaApi(request, later);
  await page.goto(`/jobs/${later}`);
  await expect(page.getByText('Cancelled before it ran.')).toBeVisible();
  await expect(page.locator('dt', { hasText: /^Available$/ })).toHaveCount(0);

  // A running job cancelled: an attempt that ended cancelled.
  const running = await createViaApi(request, { type: 'demo.slow', payload: { sleep_seconds: 60 } });
  await expect.poll(() => jobStatus(request, running), { timeout: 30_000 }).toBe('running');
  await cancelViaApi(request, running);
  // A job that outlives its own 2 s timeout, once.
  const timedOut = await createViaApi(request, {
    type: 'demo.timeout',
    payload: { sleep_seconds: 30 },
    timeout_seconds: 2,
    max_attempts: 1,
  });
  await page.goto(`/jobs/${timedOut}`);
  await expect(page.locator('dd').filter({ hasText: '2 s (set on the job)' })).toBeVisible();
  for (const id of [running, timedOut]) {
    await expect.poll(() => jobStatus(request, id), { timeout: 30_000 }).not.toMatch(/queued|running/);
  }
  await expect(page.getByRole('table', { name: 'Attempts' }).locator('tr[data-outcome="timed_out"]')).toHaveCount(1, {
    timeout: 10_000,
  });

  const slow = (await typeCounts(request, 'demo.slow'))!;
  const timeout = (await typeCounts(request, 'demo.timeout'))!;
  expect(slow.cancelled_queued).toBeGreaterThanOrEqual(1);
  expect(slow.cancelled).toBeGreaterThanOrEqual(1);
  expect(timeout.timed_out).toBeGreaterThanOrEqual(1);

  await page.goto('/job-types');
  const table = page.getByRole('table');
  const timeoutRow = table.locator('tr[data-type="demo.timeout"]');
  await expect(timeoutRow).toContainText(`${timeout.timed_out} timed out`);
  const slowRow = table.locator('tr[data-type="demo.slow"]');
  await expect(slowRow.locator('[data-cancelled]')).toHaveAttribute('data-cancelled', String(slow.cancelled));
  await expect(slowRow.locator('[data-cancelled]')).toContainText(`+${slow.cancelled_queued} before running`);
  await page.screenshot({ path: screenshotPath('job-types.png'), fullPage: true });
});

test('jobs created in bulk from the Create page, listed with Started and Duration and sorted by a column', async ({
  page,
}) => {
  await page.goto('/create');
  await page.getByLabel('Type').selectOption('demo.success');
  await page.getByLabel('Payload').fill(JSON.stringify({ sleep_seconds: 0.2 }));
  await page.getByLabel('How many').fill('5');
  await page.getByRole('button', { name: 'Create 5 jobs' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Created 5 jobs' })).toBeVisible();
  await page.getByRole('link', { name: 'see demo.success jobs' }).click();
  await expect(page).toHaveURL(/\/jobs\?type=demo\.success$/);

  const table = page.getByRole('table');
  await table.getByRole('button', { name: /^Started/ }).click();
  await expect(page).toHaveURL(/ordering=-started_at/);
  await expect(table.getByRole('columnheader', { name: /^Started/ })).toHaveAttribute('aria-sort', 'descending');
  const rows = page.locator('tbody tr[data-job-id]');
  // Every row finished: each shows when it started and how long it ran, newest start first.
  await expect
    .poll(() => rows.locator('[data-status]').evaluateAll((els) => els.map((e) => e.getAttribute('data-status'))), {
      timeout: 30_000,
    })
    .not.toContain('queued');
  const started = await rows.evaluateAll((trs) =>
    trs.map((tr) => tr.querySelectorAll('td')[9]?.querySelector('time')?.getAttribute('datetime') ?? ''),
  );
  const times = started.filter((t) => t !== '').map((t) => Date.parse(t));
  expect(times.length).toBeGreaterThanOrEqual(5);
  expect(times).toEqual([...times].sort((a, b) => b - a));
  await expect(rows.first().locator('td').nth(10)).toHaveText(/^\d+(\.\d)? m?s$/);
  await page.screenshot({ path: screenshotPath('jobs.png'), fullPage: true });
});

test('every time on the pages says its zone', async ({ page, request }) => {
  const id = await createViaApi(request, { type: 'demo.fail', max_attempts: 1 });
  await expect.poll(() => jobStatus(request, id), { timeout: 30_000 }).toBe('failed');
  let checked = 0;
  for (const route of ['/', '/jobs', '/job-types', '/workers', '/events', `/jobs/${id}`]) {
    await openPaused(page, route);
    await expect(page.locator('h1')).toBeVisible();
    await page.waitForLoadState('networkidle');
    const times = await page
      .locator('main time')
      .evaluateAll((els) => els.map((e) => ({ text: e.textContent ?? '', title: e.getAttribute('title') ?? '' })));
    for (const { text, title } of times) {
      // The tooltip: full date and time with its UTC offset.
      expect(title, `${route}: tooltip of “${text}”`).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [+-]\d\d:\d\d$/);
      // The text: relative ("3m ago"), a duration, or a clock time followed by its zone.
      const relative = /(ago|^in \S+|just now|^\d+[dhms]( \d+[hms])?)$/.test(text);
      const zoned = /\d\d:\d\d(:\d\d)? \S+$/.test(text);
      expect(relative || zoned, `${route}: “${text}” says its zone`).toBe(true);
      checked += 1;
    }
  }
  // Lists, feed, workers and the job page hold dozens: none of them went unread.
  expect(checked).toBeGreaterThan(20);
  await page.goto('/');
  await expect(page.locator('[data-zone]')).toContainText(/times in \S+/);
});

test('each API call of a first load is sent once, none aborted', async ({ page }) => {
  const sent = new Map<string, number>();
  const failed: string[] = [];
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (url.pathname.startsWith('/api/')) sent.set(`${r.method()} ${url.pathname}${url.search}`, (sent.get(`${r.method()} ${url.pathname}${url.search}`) ?? 0) + 1);
  });
  page.on('requestfailed', (r) => {
    if (new URL(r.url()).pathname.startsWith('/api/')) failed.push(`${r.url()}: ${r.failure()?.errorText ?? ''}`);
  });
  for (const route of ['/', '/jobs', '/job-types', '/workers', '/events', '/create']) {
    sent.clear();
    await openPaused(page, route);
    await expect(page.locator('h1')).toBeVisible();
    await page.waitForLoadState('networkidle');
    const twice = [...sent].filter(([, n]) => n > 1).map(([key, n]) => `${key} ×${n}`);
    expect(twice, `duplicate requests loading ${route}`).toEqual([]);
    expect(sent.size, `requests loading ${route}`).toBeGreaterThan(0);
  }
  expect(failed, 'aborted requests').toEqual([]);
});

test('header buttons stay readable on hover, and the Job types table fits its card at 1280 px', async ({ page }) => {
  await page.goto('/job-types');
  await expect(page.getByRole('heading', { name: 'Job types', level: 1 })).toBeVisible();
  for (const name of [/pause/i, 'Refresh now']) {
    const button = page.getByRole('group', { name: 'Live refresh' }).getByRole('button', { name });
    await button.hover();
    const look = await button.evaluate((el) => {
      const style = getComputedStyle(el);
      return { color: style.color, background: style.backgroundColor };
    });
    expect(look.color, `text of ${String(name)} on hover`).toBe('rgb(255, 255, 255)');
    // Translucent white over the dark bar, never an opaque light surface.
    expect(look.background, `background of ${String(name)} on hover`).toMatch(/^rgba\(255, 255, 255, 0\.[0-4]\d*\)$/);
  }
  // The types table (failures by error has a table of its own below it).
  await expect(page.locator('table.table--types')).toBeVisible();
  const overflow = await page
    .locator('.table-wrap')
    .first()
    .evaluate((el) => el.scrollWidth - el.clientWidth);
  expect(overflow, 'Job types table wider than its card').toBeLessThanOrEqual(0);
});
