import { expect, test, type Page } from '@playwright/test';
import { createFromForm } from './support';

/**
 * Production as Docker Compose runs it (e2e/run-e2e.sh phase 2): nginx with the front
 * door's config serving the built dashboard and proxying /api/ to gunicorn with
 * DEBUG=false. The dashboard signs in with a Django session, writes with the CSRF token,
 * and runs under the Content-Security-Policy nginx sets.
 */
const USER = process.env.E2E_USER ?? 'operator';
const PASSWORD = process.env.E2E_PASSWORD ?? '';

async function signIn(page: Page, password: string) {
  await page.getByLabel('Username').fill(USER);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

test('signs in with a session, creates a job under CSP and signs out', async ({ page }) => {
  const refused: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) refused.push(message.text());
  });

  const response = await page.goto('/');
  expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();

  await signIn(page, 'not-the-password');
  await expect(page.getByRole('alert').filter({ hasText: 'Wrong username or password' })).toBeVisible();

  await signIn(page, PASSWORD);
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
  await expect(page.getByText(USER, { exact: true })).toBeVisible();

  // A write through the session: the client echoes the csrftoken cookie.
  await createFromForm(page, 'demo.success');
  await page.getByTestId('created-job-link').click();
  const timeline = page.getByRole('list', { name: 'Event timeline' });
  await expect(timeline.locator('li[data-event-type="created"]')).toHaveCount(1);

  // A reload keeps the session (the cookie, not anything in the bundle, signs requests).
  await page.reload();
  await expect(timeline.locator('li[data-event-type="created"]')).toHaveCount(1);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  expect(refused).toEqual([]);
});

test('who did what: Run now and Cancel record the signed-in operator, shown in the timeline and the events feed', async ({
  page,
}) => {
  await page.goto('/');
  await signIn(page, PASSWORD);
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();

  // A job scheduled an hour ahead, made due at once from its page.
  await page.goto('/create');
  await page.getByLabel('Type').selectOption('demo.slow');
  await page.getByRole('radio', { name: 'After a delay' }).check();
  await page.getByLabel('Delay in seconds').fill('3600');
  await page.getByRole('button', { name: 'Create job' }).click();
  await page.getByTestId('created-job-link').click();
  await page.getByRole('button', { name: 'Run now' }).click();
  const timeline = page.getByRole('list', { name: 'Event timeline' });
  const runNow = timeline.locator('li[data-event-type="run_now"]');
  await expect(runNow).toContainText(`by ${USER} (dashboard or API)`);
  await expect(page.getByRole('button', { name: 'Run now' })).toHaveCount(0);

  const id = page.url().split('/jobs/')[1]!;
  await page.getByRole('button', { name: 'Cancel job' }).click();
  await page.getByRole('dialog', { name: /^Cancel job/ }).getByRole('button', { name: 'Cancel job' }).click();
  await expect(timeline.locator('li[data-event-type="cancel_requested"], li[data-event-type="cancelled"]').first()).toContainText(
    `by ${USER}`,
  );

  await page.goto(`/events?job_id=${id.slice(0, 8)}`);
  const row = page.locator('tbody tr[data-event-id]', { has: page.locator('[data-event-type="run_now"]') });
  await expect(row.locator(`[data-actor="${USER}"]`)).toHaveText(`by ${USER} (dashboard or API)`);
});
