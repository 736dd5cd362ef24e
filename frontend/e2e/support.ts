/**
 * What the specs share: the API they drive, jobs created and read through it, and the
 * worker process run-e2e.sh started (to freeze and thaw it).
 */
import { expect, type APIRequestContext } from '@playwright/test';
import path from 'node:path';

export const API = process.env.E2E_API_URL ?? 'http://127.0.0.1:8000/api';
export const SCREENSHOTS =
  process.env.SCREENSHOT_DIR ?? path.resolve(import.meta.dirname, '../../assets/screenshots');
export const BACKEND = path.resolve(import.meta.dirname, '../../backend');

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
