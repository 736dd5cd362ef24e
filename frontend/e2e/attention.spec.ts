/**
 * What the dashboard tells an operator before they ask, on real data: a frozen worker, the
 * backlog's one age, and why a type fails. Run by run-e2e.sh in its first phase: it freezes
 * the worker run-e2e.sh started (E2E_WORKER_PID) and thaws it before it ends.
 */
import { expect, test, type Page } from '@playwright/test';
import {
  API,
  cancelViaApi,
  createViaApi,
  jobRow,
  jobStatus,
  screenshotPath,
  whileWorkerFrozen,
} from './support';

test.describe.configure({ mode: 'serial' });

const attention = (page: Page) => page.getByRole('list', { name: 'Needs attention' });
const attentionItem = (page: Page, kind: string) => attention(page).locator(`li[data-kind="${kind}"]`);

test('a frozen worker: the overview says no worker is live and links to the jobs left waiting and the expired leases', async ({
  page,
  request,
}) => {
  test.setTimeout(120_000);
  const slow = [
    await createViaApi(request, { type: 'demo.slow', payload: { sleep_seconds: 60 }, queue: 'e2e-frozen' }),
    await createViaApi(request, { type: 'demo.slow', payload: { sleep_seconds: 60 }, queue: 'e2e-frozen' }),
  ];
  for (const id of slow) await expect.poll(() => jobStatus(request, id), { timeout: 30_000 }).toBe('running');

  let waiting: string[] = [];
  try {
    await whileWorkerFrozen(async () => {
      await page.goto('/');
      // Within a heartbeat interval (3 s here), not after the 5-minute backlog threshold.
      const noWorker = attentionItem(page, 'no_worker');
      await expect(noWorker).toContainText('No live worker', { timeout: 20_000 });
      // Created once the worker is seen silent: a fetch it sent just before the freeze has
      // ended by then, so it cannot have claimed them.
      waiting = [
        await createViaApi(request, { type: 'demo.success', queue: 'e2e-frozen' }),
        await createViaApi(request, { type: 'demo.success', queue: 'e2e-frozen' }),
      ];
      for (const id of waiting) expect(await jobStatus(request, id)).toBe('queued');
      await expect(noWorker).toContainText(/[1-9]\d* due jobs? wait/);
      await noWorker.getByRole('link', { name: 'Due jobs' }).click();
      await expect(page).toHaveURL(/\/jobs\?status=queued&due=true$/);
      for (const id of waiting) await expect(jobRow(page, id)).toBeVisible();

      // The running jobs' leases (9 s) run out with nobody to renew them.
      await page.goto('/');
      const overdue = attentionItem(page, 'overdue_leases');
      // At least these two: the e2e schedule's job of the moment may have been frozen too.
      await expect(overdue).toContainText(/(?:[2-9]|\d{2,}) running jobs have an expired lease/, { timeout: 30_000 });
      await page.screenshot({ path: screenshotPath('attention-frozen-worker.png') });
      await overdue.getByRole('link', { name: 'Running jobs with an expired lease' }).click();
      await expect(page).toHaveURL(/\/jobs\?status=running&lease_expired=true$/);
      await expect(page.getByRole('combobox', { name: 'State' })).toHaveValue('lease_expired');
      for (const id of slow) await expect(jobRow(page, id).locator('[data-lease-expired]')).toHaveText('lease expired');
    });
    // Thawed: the worker checks in again and the item goes.
    await page.goto('/');
    await expect(page.getByRole('heading', { name: 'Needs attention' })).toBeVisible();
    await expect(attentionItem(page, 'no_worker')).toHaveCount(0, { timeout: 20_000 });
  } finally {
    for (const id of [...slow, ...waiting]) await cancelViaApi(request, id);
  }
});

test("a queue's backlog is aged from its oldest due job; jobs scheduled for later are counted apart", async ({
  page,
  request,
}) => {
  const queue = 'e2e-backlog';
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const scheduled = await createViaApi(request, { type: 'demo.success', queue, available_at: later });
  // Long enough for a created_at-based age to show seconds.
  await page.waitForTimeout(2_000);
  await page.goto('/queues');
  const row = page.locator(`tr[data-queue="${queue}"]`);
  await expect(row.locator('[data-count="queued"]')).toHaveText('1');
  await expect(row.locator('[data-count="scheduled"]')).toHaveText('1');
  await expect(row.locator('[data-count="due"]')).toHaveText('0');
  await expect(row).not.toContainText('oldest');

  const pause = await request.post(`${API}/queues/${queue}/pause/`);
  expect(pause.ok()).toBe(true);
  const due = await createViaApi(request, { type: 'demo.success', queue });
  try {
    await page.goto('/');
    const paused = attention(page).locator(`li[data-kind="paused_queue"]`, { hasText: queue });
    await expect(paused).toContainText(`Queue ${queue} is paused with 1 due job waiting (and 1 scheduled for later)`);
    await expect(paused).toContainText(/The oldest has waited \d+s\./);
    await paused.getByRole('link', { name: `Queued jobs in ${queue}` }).click();
    await expect(jobRow(page, due)).toBeVisible();
    await expect(jobRow(page, scheduled)).toBeVisible();

    await page.goto('/queues');
    await expect(row.locator('[data-backlog-age]')).toContainText(/oldest due job waited \d+s/);
    await row.getByRole('button', { name: `Resume queue ${queue}` }).click();
    const dialog = page.getByRole('dialog', { name: `Resume queue ${queue}?` });
    await expect(dialog).toContainText('its 1 due job again at once, within its limits, and its 1 scheduled for later when they are due');
    await dialog.getByRole('button', { name: 'Resume queue' }).click();
    await expect.poll(() => jobStatus(request, due), { timeout: 30_000 }).toBe('succeeded');
  } finally {
    await request.post(`${API}/queues/${queue}/resume/`);
    await cancelViaApi(request, scheduled);
  }
});

test('why a type fails: failures grouped by error on Job types, each leading to its jobs with their last error', async ({
  page,
  request,
}) => {
  const tag = Date.now().toString(36);
  const declined = `e2e card declined ${tag}`;
  const gateway = `e2e gateway timeout ${tag}`;
  const fail = (error: string) => createViaApi(request, { type: 'demo.fail', payload: { error }, max_attempts: 1 });
  const jobs = [await fail(declined), await fail(declined), await fail(gateway)];
  for (const id of jobs) await expect.poll(() => jobStatus(request, id), { timeout: 30_000 }).toBe('failed');
  // A manual retry that fails again: a second failed attempt of the same job.
  expect((await request.post(`${API}/jobs/${jobs[0]}/retry/`)).ok()).toBe(true);
  await expect.poll(() => jobStatus(request, jobs[0]!), { timeout: 30_000 }).toBe('failed');

  await page.goto('/job-types');
  const groups = page.getByRole('table', { name: 'Failures by error' });
  const declinedRow = groups.locator('tr', { hasText: declined });
  await expect(declinedRow).toContainText(`RuntimeError: ${declined}`);
  await expect(declinedRow.locator('[data-attempts]')).toHaveText('3');
  await expect(declinedRow.locator('[data-jobs]')).toHaveText('2');
  await expect(groups.locator('tr', { hasText: gateway }).locator('[data-attempts]')).toHaveText('1');
  await page.screenshot({ path: screenshotPath('job-types-failures-by-error.png'), fullPage: true });

  await declinedRow.getByRole('link', { name: new RegExp(declined) }).click();
  await expect(page).toHaveURL(/\/jobs\?type=demo\.fail&error=/);
  const rows = page.locator('tbody tr[data-job-id]');
  await expect(rows).toHaveCount(2);
  for (const id of jobs.slice(0, 2)) {
    await expect(jobRow(page, id).locator('.last-error-text')).toHaveText(`RuntimeError: ${declined}`);
  }

  // The error filter typed by hand; Back restores the previous one.
  await page.getByRole('searchbox', { name: 'Error contains' }).fill(gateway);
  await expect(rows).toHaveCount(1);
  await expect(jobRow(page, jobs[2]!)).toBeVisible();
  await page.goBack();
  await expect(rows).toHaveCount(2);
  await expect(page.getByRole('searchbox', { name: 'Error contains' })).toHaveValue(declined);
});

test("an operator's cancel of a running job is no error: no red text, no traceback", async ({ page, request }) => {
  const id = await createViaApi(request, { type: 'demo.slow', payload: { sleep_seconds: 120 } });
  await expect.poll(() => jobStatus(request, id), { timeout: 30_000 }).toBe('running');
  await page.goto(`/jobs/${id}`);
  await page.getByRole('button', { name: 'Cancel job' }).click();
  await page.getByRole('dialog', { name: `Cancel job ${id.slice(0, 8)}?` }).getByRole('button', { name: 'Cancel job' }).click();
  await expect(page.locator('.page__title-row [data-status]')).toHaveAttribute('data-status', 'cancelled', {
    timeout: 30_000,
  });

  const lastError = page.getByRole('region', { name: 'Last error' });
  await expect(lastError).toContainText('Cancelled as requested; nothing failed.');
  await expect(lastError.locator('.error-text, .last-error__class')).toHaveCount(0);
  await expect(page.getByLabel('Traceback of the last error')).toHaveCount(0);
  const attempt = page.getByRole('table', { name: 'Attempts' }).locator('tr[data-attempt="1"]');
  await expect(attempt).toHaveAttribute('data-outcome', 'cancelled');
  await expect(attempt).toContainText('stopped as asked');
  await expect(page.getByText('Traceback of attempt 1')).toHaveCount(0);
});

test('a hung demo.hang: its abandoned thread is on the process card with the job it still runs', async ({
  page,
  request,
}) => {
  const id = await createViaApi(request, {
    type: 'demo.hang',
    payload: { sleep_seconds: 30 },
    timeout_seconds: 2,
    max_attempts: 1,
  });
  // The attempt times out: the job fails, but its thread is still in the handler.
  await expect.poll(() => jobStatus(request, id), { timeout: 30_000 }).toBe('failed');
  await page.goto('/workers');
  const thread = page.locator(`[data-abandoned-thread]`, { has: page.locator(`a[href="/jobs/${id}"]`) });
  await expect(thread).toContainText(`${id.slice(0, 8)} demo.hang · attempt 1 · the job is failed now · abandoned`);
  const group = page.getByRole('group', { name: /^Abandoned threads of / }).filter({ has: thread });
  await expect(group).toContainText(/\d+ abandoned threads? still runs? (its|their) handlers?/);
  const card = page.getByRole('region').filter({ has: thread });
  await expect(card.locator('.process__head')).toContainText(/· \d+ abandoned threads? still in a handler/);
  await card.screenshot({ path: screenshotPath('workers-abandoned-thread.png') });
});

test('a short id in the address opens its job; two characters in the search say to type eight, off the header', async ({
  page,
  request,
}) => {
  const id = await createViaApi(request, { type: 'demo.success' });
  await page.goto(`/jobs/${id.slice(0, 8)}`);
  await expect(page).toHaveURL(new RegExp(`/jobs/${id}$`));
  await expect(page.getByRole('heading', { name: `Job ${id.slice(0, 8)}` })).toBeVisible();

  await page.goto('/');
  const search = page.getByRole('search', { name: 'Find a job' });
  await search.getByRole('searchbox').fill(id.slice(0, 2));
  await search.getByRole('searchbox').press('Enter');
  const alert = search.getByRole('alert');
  await expect(alert).toContainText('type at least 8 characters');
  // It floats over the page, not over the header's own controls.
  const box = (await alert.boundingBox())!;
  for (const control of await page.locator('header.topbar button, header.topbar a, header.topbar select').all()) {
    if (!(await control.isVisible())) continue;
    if (await control.evaluate((el) => el.closest('[role="search"]') !== null)) continue;
    const other = (await control.boundingBox())!;
    const overlaps =
      box.x < other.x + other.width && other.x < box.x + box.width && box.y < other.y + other.height && other.y < box.y + box.height;
    expect(overlaps, `the search's message covers ${await control.textContent()}`).toBe(false);
  }
  await search.getByRole('searchbox').press('Escape');
  await expect(alert).toHaveCount(0);
});

test('the overview says why the chart counts more failures than the card: a job retried by hand that fails again', async ({
  page,
  request,
}) => {
  const id = await createViaApi(request, { type: 'demo.fail', max_attempts: 1 });
  await expect.poll(() => jobStatus(request, id), { timeout: 30_000 }).toBe('failed');
  expect((await request.post(`${API}/jobs/${id}/retry/`)).ok()).toBe(true);
  await expect.poll(() => jobStatus(request, id), { timeout: 30_000 }).toBe('failed');

  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Job endings, last 15 minutes' })).toBeVisible();
  await expect(page.locator('[data-counting-note]')).toContainText('a job retried by hand that fails again counts twice');
  const card = page.locator('.stat', { has: page.locator('.stat__label', { hasText: /^Failed$/ }) });
  await expect(card.locator('.stat__hint')).toHaveText('jobs failed now, all time');
});

test('with the API down only the health check polls, backing off; the header says so with the time of the last good data', async ({
  page,
}) => {
  test.setTimeout(120_000);
  await page.goto('/');
  await expect(page.getByRole('list', { name: 'Queue statistics' })).toBeVisible();

  const asked: string[] = [];
  page.on('request', (request) => {
    if (request.url().includes('/api/')) asked.push(new URL(request.url()).pathname);
  });
  // The API stops answering: every request of the page is refused, as by a stopped server.
  await page.route('**/api/**', (route) => route.abort('connectionrefused'));
  await expect(page.getByRole('alert').filter({ hasText: 'API unreachable.' })).toBeVisible({ timeout: 20_000 });
  const offline = page.locator('header [data-offline]');
  await expect(offline).toHaveText(/^Offline · data from \d\d:\d\d:\d\d \S+$/);

  // Ten seconds of an outage: a handful of health checks, spaced wider and wider, and no
  // panel's request (the e2e build polls every 500 ms: some 150 requests before).
  // (Requests already under way when it stopped may retry once; then the count starts.)
  await page.waitForTimeout(2_000);
  asked.length = 0;
  await page.waitForTimeout(10_000);
  expect(asked.every((path) => path.endsWith('/api/health/')), asked.join(', ')).toBe(true);
  expect(asked.length).toBeLessThanOrEqual(5);

  // A page opened during the outage says it cannot load, instead of spinning.
  await page.goto('/jobs');
  await expect(page.getByRole('alert').filter({ hasText: 'Could not load' }).first()).toBeVisible({ timeout: 20_000 });

  await page.unroute('**/api/**');
  await expect(page.getByRole('alert').filter({ hasText: 'API unreachable.' })).toHaveCount(0, { timeout: 40_000 });
  await expect(offline).toHaveCount(0);
  await expect(page.locator('tbody tr[data-job-id]').first()).toBeVisible({ timeout: 20_000 });
});

for (const [zone, offset] of [
  ['America/New_York', '-05:00'],
  ['Asia/Tokyo', '+09:00'],
] as const) {
  test.describe(`a browser in ${zone}`, () => {
    test.use({ timezoneId: zone });

    test(`one time-zone story (${zone}): event data and metadata in the browser's zone, no zone on an interval`, async ({
      page,
      request,
    }) => {
      const id = await createViaApi(request, { type: 'demo.fail', max_attempts: 2, metadata: { note: 'tz' } });
      await expect.poll(() => jobStatus(request, id), { timeout: 30_000 }).toBe('failed');
      const apiOffset = ((await (await request.get(`${API}/jobs/${id}/`)).json()) as { created_at: string }).created_at.slice(-6);
      expect(apiOffset).not.toBe(offset);

      await page.goto(`/jobs/${id}`);
      const retried = page.getByRole('list', { name: 'Event timeline' }).locator('li[data-event-type="retry_scheduled"]');
      await retried.locator('summary', { hasText: 'Data' }).click();
      const data = retried.getByLabel(/^Data of event/);
      await expect(data).toContainText(`"available_at": "`);
      await expect(data).toContainText(` ${offset}"`);
      // Nothing on the page is in the API's zone.
      expect(await page.locator('main').innerText()).not.toContain(apiOffset);

      await page.goto('/schedules');
      const interval = page.locator('tr', { hasText: 'e2e-heartbeat' });
      await expect(interval).toContainText('missed ticks');
      await expect(interval).not.toContainText(/UTC|Asia\/|America\/|Europe\//);
      await expect(page.locator('tr', { hasText: 'e2e-nightly-report' })).toContainText('Asia/Tehran');
    });
  });
}

test.describe('an 800 px window', () => {
  test.use({ viewport: { width: 800, height: 800 } });

  test('tables say when columns lie past the edge; each page has its title; focus moves to the new page; Back undoes a sort', async ({
    page,
    request,
  }) => {
    await createViaApi(request, { type: 'demo.success' });
    await page.goto('/');
    await expect(page).toHaveTitle('Overview · Job Queue');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).click();
    await expect(page).toHaveTitle('Jobs · Job Queue');
    await expect(page.getByRole('heading', { level: 1, name: 'Jobs' })).toBeFocused();
    await expect(page.locator('[data-table-cue]')).toContainText('More columns of the jobs to the right');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Job types' }).click();
    await expect(page).toHaveTitle('Job types · Job Queue');
    await expect(page.locator('[data-table-cue]').first()).toContainText('More columns of the job types to the right');
    await page.getByRole('button', { name: /^Attempts/ }).click();
    await expect(page).toHaveURL(/sort=/);
    await page.goBack();
    await expect(page).toHaveURL(/\/job-types$/);
  });
});
