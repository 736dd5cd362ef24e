/** The Workers page's reading of one process (the API groups threads by process). */
import type { WorkerProcess, WorkerThread } from '../api/types';

export interface ProcessSummary {
  /** Threads that claim jobs (the maintenance thread aside). */
  threads: number;
  busy: number;
  idle: number;
  /** Running jobs of this process whose lease has expired: it is gone or stuck. */
  overdue: number;
}

export function isMaintenance(worker: WorkerThread): boolean {
  return worker.role === 'maintenance';
}

export function summarizeProcess(process: WorkerProcess): ProcessSummary {
  const threads = process.workers.filter((w) => !isMaintenance(w));
  const busy = threads.filter((w) => w.current_job !== null).length;
  const overdue = process.workers.filter((w) => w.current_job?.lease_overdue).length;
  return { threads: threads.length, busy, idle: threads.length - busy, overdue };
}

/** "box · pid 4242", or the raw process name when the worker id was not host:pid:…. */
export function processTitle(process: WorkerProcess): string {
  return process.host !== null && process.pid !== null ? `${process.host} · pid ${process.pid}` : process.process;
}

/** "thread 3", "maintenance", or the worker id when it names no thread. */
export function threadLabel(worker: WorkerThread): string {
  if (isMaintenance(worker)) return 'maintenance';
  return worker.thread === null ? worker.worker_id : `thread ${worker.thread}`;
}

/** Worker threads first by number, the maintenance thread last: it runs no jobs. */
export function orderThreads(workers: readonly WorkerThread[]): WorkerThread[] {
  return [...workers].sort((a, b) => {
    if (isMaintenance(a) !== isMaintenance(b)) return isMaintenance(a) ? 1 : -1;
    return (a.thread ?? Number.MAX_SAFE_INTEGER) - (b.thread ?? Number.MAX_SAFE_INTEGER);
  });
}
