/**
 * What the dashboard tells an operator before they ask, on real data: a frozen worker, the
 * backlog's one age, and why a type fails. Run by run-e2e.sh last in its first phase: it
 * freezes the worker run-e2e.sh started (E2E_WORKER_PID) and thaws it before it ends.
 */
import { expect, test, type Page } from '@playwright/test';
import { API, cancelViaApi, createViaApi, jobStatus, whileWorkerFrozen } from './support';

test.describe.configure({ mode: 'serial' });

const attention = (page: Page) => page.getByRole('list', { name: 'Needs attention' });
const attentionItem = (page: Page, kind: string) => attention(page).locator(`li[data-kind="${kind}"]`);
const jobRow = (page: Page, id: string) => page.locator(`tr[data-job-id="${id}"]`);

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
      waiting = [
        await createViaApi(request, { type: 'demo.success', queue: 'e2e-frozen' }),
        await createViaApi(request, { type: 'demo.success', queue: 'e2e-frozen' }),
      ];
      await page.goto('/');
      // Within a heartbeat interval (3 s here), not after the 5-minute backlog threshold.
      const noWorker = attentionItem(page, 'no_worker');
      await expect(noWorker).toContainText('No live worker', { timeout: 20_000 });
      await expect(noWorker).toContainText(/\d+ due jobs? wait/);
      await noWorker.getByRole('link', { name: 'Due jobs' }).click();
      await expect(page).toHaveURL(/\/jobs\?status=queued&due=true$/);
      for (const id of waiting) await expect(jobRow(page, id)).toBeVisible();

      // The running jobs' leases (9 s) run out with nobody to renew them.
      await page.goto('/');
      const overdue = attentionItem(page, 'overdue_leases');
      await expect(overdue).toContainText('2 running jobs have an expired lease', { timeout: 30_000 });
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
