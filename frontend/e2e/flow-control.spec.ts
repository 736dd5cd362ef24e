/**
 * Flow control on real data: the Queues page (limits edited from the page hold
 * while jobs run; pause and resume with a confirmation), the unique and concurrency keys on
 * the create and job pages, the Schedules page (trigger now, pause, resume) and the
 * overview's "Needs attention" for a paused queue with a backlog and a schedule whose last
 * job failed. run-e2e.sh declares the schedules (e2e-heartbeat every 30 s, e2e-nightly-report
 * and e2e-failing-report, daily with missed ticks skipped, so the last only runs when triggered here)
 * and limits the queue `emails` to 2 running and 10 started per second.
 */
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { API, createViaApi, jobStatus, screenshotPath } from './support';

/** Declared in run-e2e.sh's JOB_SCHEDULES_JSON: demo.fail daily at 04:30 (the settings' time zone). */
const FAILING = 'e2e-failing-report';
/** Queues of their own, so the other specs' jobs do not count here. */
const LIMITED = 'e2e-limited';
const PAUSED = 'e2e-paused';

test.describe.configure({ mode: 'serial' });

interface QueueState {
  name: string;
  paused: boolean;
  running: number;
  concurrency_limit: number | null;
  counts: Record<string, number>;
}

async function queueState(request: APIRequestContext, name: string): Promise<QueueState | undefined> {
  const res = await request.get(`${API}/queues/`);
  expect(res.ok()).toBe(true);
  return ((await res.json()) as QueueState[]).find((q) => q.name === name);
}

const queueRow = (page: Page, name: string) => page.locator(`tr[data-queue="${name}"]`);

/** Neither the page nor any table wrapper scrolls sideways. */
async function expectNoOverflow(page: Page, label: string) {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow, `horizontal page overflow on ${label}`).toBeLessThanOrEqual(0);
  const tables = await page
    .locator('.table-wrap')
    .evaluateAll((els) => els.map((e) => e.scrollWidth - e.clientWidth));
  for (const t of tables) expect(t, `a table scrolls sideways on ${label}`).toBeLessThanOrEqual(0);
}

test('a concurrency limit set on the Queues page holds: one of three slow jobs runs at a time', async ({
  page,
  request,
}) => {
  // A job due in an hour makes the queue known without anything running in it.
  const placeholder = await createViaApi(request, {
    type: 'demo.success',
    queue: LIMITED,
    available_at: new Date(Date.now() + 3_600_000).toISOString(),
  });

  await page.goto('/');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Queues' }).click();
  await expect(page).toHaveURL(/\/queues$/);
  // run-e2e.sh limits `emails` before the API starts.
  await expect(queueRow(page, 'emails')).toContainText('0 of 2 running (0 %)');
  await expect(queueRow(page, 'emails')).toContainText('10 per 1 s');
  const row = queueRow(page, LIMITED);
  await expect(row).toContainText('0 running, no limit');

  await page.getByRole('button', { name: `Edit limits of queue ${LIMITED}` }).click();
  const form = page.getByRole('form', { name: `Limits of ${LIMITED}` });
  const concurrency = form.getByLabel('Concurrency limit');
  await expect(concurrency).toBeFocused();
  // Past the API's maximum: its 400 shows under the field, and nothing changes.
  await concurrency.fill('99999999');
  await form.getByRole('button', { name: 'Save limits' }).click();
  await expect(concurrency).toHaveAttribute('aria-invalid', 'true');
  await expect(form.locator('.field__errors')).toContainText(/less than or equal to/);
  expect((await queueState(request, LIMITED))?.concurrency_limit).toBeNull();

  await concurrency.fill('1');
  await form.getByLabel('Rate limit').fill('20');
  await form.getByLabel('Rate period in seconds').fill('1');
  await form.getByRole('button', { name: 'Save limits' }).click();
  await expect(form).toBeHidden();
  await expect(page.getByRole('status').filter({ hasText: `Limits of ${LIMITED} saved` })).toBeVisible();
  await expect(row).toContainText('0 of 1 running (0 %)');
  await expect(row).toContainText('20 per 1 s');

  const ids: string[] = [];
  for (let i = 0; i < 3; i++)
    ids.push(await createViaApi(request, { type: 'demo.slow', queue: LIMITED, payload: { sleep_seconds: 2 } }));
  await expect(row).toContainText('1 of 1 running (100 %)', { timeout: 30_000 });
  await expect(row.locator('.saturation__bar--danger')).toBeVisible();

  // Sample the API while they run: never more than one running, and all three finish.
  let most = 0;
  await expect
    .poll(
      async () => {
        const state = await queueState(request, LIMITED);
        most = Math.max(most, state?.running ?? 0);
        return state?.counts.succeeded ?? 0;
      },
      { timeout: 60_000, intervals: [200] },
    )
    .toBe(3);
  expect(most).toBe(1);
  await expect(row.locator('[data-count="succeeded"]')).toHaveText('3');

  const cancelled = await request.post(`${API}/jobs/${placeholder}/cancel/`);
  expect(cancelled.ok()).toBe(true);
});

test('a queue paused from the page is not claimed from, shows under Needs attention, and drains when resumed', async ({
  page,
  request,
}) => {
  const first = await createViaApi(request, { type: 'demo.success', queue: PAUSED, payload: { sleep_seconds: 0 } });
  await expect.poll(() => jobStatus(request, first), { timeout: 30_000 }).toBe('succeeded');

  await page.goto('/queues');
  const row = queueRow(page, PAUSED);
  await expect(row.locator('[data-paused]')).toHaveText('active');
  await page.getByRole('button', { name: `Pause queue ${PAUSED}` }).click();
  const dialog = page.getByRole('dialog', { name: `Pause queue ${PAUSED}?` });
  await expect(dialog).toContainText('No worker claims from it until it is resumed');
  // The safe button has the focus; Escape changes nothing.
  await expect(dialog.getByRole('button', { name: 'Go back' })).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  expect((await queueState(request, PAUSED))?.paused).toBe(false);

  await page.getByRole('button', { name: `Pause queue ${PAUSED}` }).click();
  await dialog.getByRole('button', { name: 'Pause queue' }).click();
  await expect(dialog).toBeHidden();
  await expect(row.locator('[data-paused]')).toHaveText('paused');
  expect((await queueState(request, PAUSED))?.paused).toBe(true);

  // A job with both keys from the create form: it waits in the paused queue.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Create' }).click();
  await page.getByLabel('Type').selectOption('demo.success');
  await page.getByLabel('Queue (optional)').fill(PAUSED);
  await page.getByLabel('Unique key (optional)').fill('e2e-rebuild-index');
  await page.getByLabel('Concurrency key (optional)').fill('customer:e2e');
  await page.getByRole('button', { name: 'Create job' }).click();
  const link = page.getByTestId('created-job-link');
  await expect(page.getByRole('status').filter({ has: link })).toContainText('Job created');
  const id = (await link.getAttribute('href'))!.split('/').pop()!;

  // The same unique key while that job is queued: the API returns it (200, matched: unique_key).
  await page.getByRole('button', { name: 'Create job' }).click();
  await expect(page.getByRole('status').filter({ has: link })).toContainText(
    'A job with this unique key is already queued or running',
  );
  expect((await link.getAttribute('href'))!.split('/').pop()).toBe(id);

  await link.click();
  await expect(page).toHaveURL(new RegExp(`/jobs/${id}$`));
  const fields = page.getByRole('region', { name: 'Fields' });
  await expect(fields.locator('.dl__row').filter({ hasText: 'Unique key' })).toContainText('e2e-rebuild-index');
  await expect(fields.locator('.dl__row').filter({ hasText: 'Concurrency key' })).toContainText('customer:e2e');
  await page.waitForTimeout(2000); // a few polls of the worker (200 ms): it must not claim
  expect(await jobStatus(request, id)).toBe('queued');

  // Three slow jobs on `emails` (limited to 2 by run-e2e.sh) fill it for the screenshot.
  const emails: string[] = [];
  for (let i = 0; i < 3; i++)
    emails.push(await createViaApi(request, { type: 'demo.slow', queue: 'emails', payload: { sleep_seconds: 10 } }));

  await page.goto('/');
  const attention = page.getByRole('list', { name: 'Needs attention' });
  const item = attention.locator('li[data-kind="paused_queue"]');
  await expect(item).toContainText(`Queue ${PAUSED} is paused with 1 due job waiting`);
  // The item leads to the jobs it is about; the Queues page shows the queue.
  await item.getByRole('link', { name: `Queued jobs in ${PAUSED}` }).click();
  await expect(page).toHaveURL(new RegExp(`/jobs\\?status=queued&queue=${PAUSED}$`));
  await expect(page.locator('tbody tr[data-job-id]')).toHaveCount(1);
  await page.goto('/queues');
  await expect(queueRow(page, PAUSED).locator('[data-count="queued"]')).toHaveText('1');
  await expect(queueRow(page, LIMITED)).toContainText('of 1 running');
  await expect(queueRow(page, 'emails')).toContainText('2 of 2 running (100 %)', { timeout: 30_000 });
  await expect(queueRow(page, 'emails').locator('[data-count="queued"]')).toHaveText('1');
  await page.screenshot({ path: screenshotPath('queues.png'), fullPage: true });

  await page.getByRole('button', { name: `Resume queue ${PAUSED}` }).click();
  const resume = page.getByRole('dialog', { name: `Resume queue ${PAUSED}?` });
  await resume.getByRole('button', { name: 'Resume queue' }).click();
  await expect(resume).toBeHidden();
  await expect(queueRow(page, PAUSED).locator('[data-paused]')).toHaveText('active');
  await expect.poll(() => jobStatus(request, id), { timeout: 30_000 }).toBe('succeeded');
  await expect(queueRow(page, PAUSED).locator('[data-count="queued"]')).toHaveText('0');
  for (const e of emails) await expect.poll(() => jobStatus(request, e), { timeout: 60_000 }).toBe('succeeded');
});

test('a schedule triggered from the Schedules page enqueues a job; its failure shows under Needs attention', async ({
  page,
  request,
}) => {
  await page.goto('/');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Schedules' }).click();
  await expect(page).toHaveURL(/\/schedules$/);
  const heartbeat = page.locator('tr[data-schedule="e2e-heartbeat"]');
  await expect(heartbeat).toContainText('every 30 s');
  await expect(heartbeat.locator('[data-next-run]')).toContainText(/^(in \d+s|just now)$/);
  const nightly = page.locator('tr[data-schedule="e2e-nightly-report"]');
  await expect(nightly).toContainText('0 3 * * *');
  await expect(nightly).toContainText('Asia/Tehran · missed ticks: skipped');
  await expect(nightly).toContainText('none yet');

  const row = page.locator(`tr[data-schedule="${FAILING}"]`);
  await expect(row).toContainText('demo.fail');
  await expect(row).toContainText('30 4 * * *');
  await expect(row.locator('[data-paused]')).toHaveText('active');
  await expect(row.locator('[data-next-run]')).toContainText(/^in /);

  await page.getByRole('button', { name: `Trigger now: schedule ${FAILING}` }).click();
  const dialog = page.getByRole('dialog', { name: `Run schedule ${FAILING}?` });
  await dialog.getByRole('button', { name: 'Trigger now' }).click();
  await expect(dialog).toBeHidden();
  const link = page.getByTestId('triggered-job-link');
  const id = (await link.getAttribute('href'))!.split('/').pop()!;
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  await expect(row.locator('[data-last-job]')).toHaveAttribute('data-last-job', id);
  await expect.poll(() => jobStatus(request, id), { timeout: 60_000 }).toBe('failed');
  await expect(row.locator('[data-last-job] [data-status]')).toHaveAttribute('data-status', 'failed');

  // Pause and resume: a paused schedule has no next run.
  await page.getByRole('button', { name: `Pause schedule ${FAILING}` }).click();
  await page.getByRole('dialog', { name: `Pause schedule ${FAILING}?` }).getByRole('button', { name: 'Pause schedule' }).click();
  await expect(row.locator('[data-paused]')).toHaveText('paused');
  await expect(row.locator('[data-next-run]')).toHaveText('paused');
  await page.screenshot({ path: screenshotPath('schedules.png'), fullPage: true });
  await page.getByRole('button', { name: `Resume schedule ${FAILING}` }).click();
  await page.getByRole('dialog', { name: `Resume schedule ${FAILING}?` }).getByRole('button', { name: 'Resume schedule' }).click();
  await expect(row.locator('[data-paused]')).toHaveText('active');
  await expect(row.locator('[data-next-run]')).toContainText(/^in /);

  await page.goto('/');
  const item = page.getByRole('list', { name: 'Needs attention' }).locator('li[data-kind="failed_schedule"]');
  await expect(item).toContainText(`Schedule ${FAILING}: its last job failed`);
  await item.getByRole('link', { name: `Job ${id.slice(0, 8)}` }).click();
  await expect(page).toHaveURL(new RegExp(`/jobs/${id}$`));
});

test('the Queues and Schedules pages fit 1280 and 800 px wide windows and a phone', async ({ page }) => {
  for (const width of [1280, 800, 390]) {
    await page.setViewportSize({ width, height: 800 });
    for (const route of ['/queues', '/schedules']) {
      await page.goto(route);
      await expect(page.locator('tbody tr').first()).toBeVisible();
      // A phone scrolls wide tables inside their wrapper; wider windows show them whole.
      if (width >= 800) await expectNoOverflow(page, `${route} at ${width} px`);
      else {
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        expect(overflow, `horizontal page overflow on ${route} at ${width} px`).toBeLessThanOrEqual(0);
      }
    }
  }
});
