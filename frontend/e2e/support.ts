/**
 * What the specs share: the API they drive, jobs created and read through it or through
 * the create form, the job table's rows, the README's screenshots, the poll and render
 * timings, and the worker process run-e2e.sh started (to freeze and thaw it). A helper
 * two specs need lives here, not in a copy in each.
 */
import { expect, type APIRequestContext, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import path from 'node:path';

export const API = process.env.E2E_API_URL ?? 'http://127.0.0.1:8000/api';
const SCREENSHOTS = process.env.SCREENSHOT_DIR ?? path.resolve(import.meta.dirname, '../../assets/screenshots');
export const BACKEND = path.resolve(import.meta.dirname, '../../backend');

/** The e2e build polls every 500 ms (run-e2e.sh's VITE_POLL_INTERVAL_MS). */
export const POLL_MS = 500;
/** A render after an answer takes well under this. */
export const RENDER_MS = 2000;

/** Where the README's screenshot `name` is written; the folder is made if missing. */
export function screenshotPath(name: string): string {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return path.join(SCREENSHOTS, name);
}

/** A job's row in the job table. */
export const jobRow = (page: Page, id: string) => page.locator(`tr[data-job-id="${id}"]`);

/** Fill and submit the create form; returns the new job's id from the confirmation link. */
export async function createFromForm(
  page: Page,
  type: string,
  { maxAttempts, payload, queue }: { maxAttempts?: number; payload?: object; queue?: string } = {},
): Promise<string> {
  await page.goto('/create');
  await page.getByLabel('Type').selectOption(type);
  if (maxAttempts !== undefined) await page.getByLabel('Max attempts').fill(String(maxAttempts));
  if (payload !== undefined) await page.getByLabel('Payload').fill(JSON.stringify(payload));
  if (queue !== undefined) await page.getByLabel('Queue (optional)').fill(queue);
  await page.getByRole('button', { name: 'Create job' }).click();
  const link = page.getByTestId('created-job-link');
  await expect(link).toBeVisible();
  const href = await link.getAttribute('href');
  const id = href?.split('/').pop();
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  return id!;
}

export async function createViaApi(request: APIRequestContext, body: object): Promise<string> {
  const res = await request.post(`${API}/jobs/`, { data: body });
  expect(res.status(), await res.text()).toBeLessThan(300);
  return ((await res.json()) as { id: string }).id;
}

export async function jobStatus(request: APIRequestContext, id: string): Promise<string> {
  const res = await request.get(`${API}/jobs/${id}/`);
  return ((await res.json()) as { status: string }).status;
}

export async function cancelViaApi(request: APIRequestContext, id: string): Promise<void> {
  await request.post(`${API}/jobs/${id}/cancel/`);
}

/** The pid of the worker run-e2e.sh started (every queue, the e2e settings). */
export function workerPid(): number {
  const pid = Number(process.env.E2E_WORKER_PID);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error('E2E_WORKER_PID is not set: run this spec through run-e2e.sh');
  return pid;
}

/**
 * Run `body` with the worker frozen (SIGSTOP: alive to the kernel, silent to the database,
 * as a process stuck in a debugger or a paused container), and thaw it afterwards whatever
 * happens.
 */
export async function whileWorkerFrozen<T>(body: () => Promise<T>): Promise<T> {
  const pid = workerPid();
  process.kill(pid, 'SIGSTOP');
  try {
    return await body();
  } finally {
    process.kill(pid, 'SIGCONT');
  }
}
