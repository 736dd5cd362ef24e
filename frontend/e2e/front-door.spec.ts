import { expect, test } from '@playwright/test';

/**
 * Production as Docker Compose runs it (e2e/run-e2e.sh phase 2): nginx with the front
 * door's config serving the built dashboard and proxying /api/ to gunicorn with
 * DEBUG=false. The dashboard signs in with a Django session, writes with the CSRF token,
 * and runs under the Content-Security-Policy nginx sets.
 */
const USER = process.env.E2E_USER ?? 'operator';
const PASSWORD = process.env.E2E_PASSWORD ?? '';

test('signs in with a session, creates a job under CSP and signs out', async ({ page }) => {
  const refused: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) refused.push(message.text());
  });

  const response = await page.goto('/');
  expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();

  await page.getByLabel('Username').fill(USER);
  await page.getByLabel('Password').fill('not-the-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert').filter({ hasText: 'Wrong username or password' })).toBeVisible();

  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
  await expect(page.getByText(USER, { exact: true })).toBeVisible();

  // A write through the session: the client echoes the csrftoken cookie.
  await page.goto('/create');
  await page.getByLabel('Type').selectOption('demo.success');
  await page.getByRole('button', { name: 'Create job' }).click();
  const link = page.getByTestId('created-job-link');
  await expect(link).toBeVisible();
  await link.click();
  const timeline = page.getByRole('list', { name: 'Event timeline' });
  await expect(timeline.locator('li[data-event-type="created"]')).toHaveCount(1);

  // A reload keeps the session (the cookie, not anything in the bundle, signs requests).
  await page.reload();
  await expect(timeline.locator('li[data-event-type="created"]')).toHaveCount(1);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
  expect(refused).toEqual([]);
});
