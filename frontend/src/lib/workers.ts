/** The Workers page's reading of one live worker process (`GET /api/workers/`). */
import type { LiveWorkerProcess, LiveWorkerThread } from '../api/types';

/** The thread number a worker id names (host:pid:thread-N:random), or null. */
export function threadNumber(thread: Pick<LiveWorkerThread, 'worker_id'>): number | null {
  const match = /:thread-(\d+)(?::|$)/.exec(thread.worker_id);
  return match ? Number(match[1]) : null;
}

/** "thread 3", or the worker id when it names no thread number. */
export function threadLabel(thread: Pick<LiveWorkerThread, 'worker_id'>): string {
  const n = threadNumber(thread);
  return n === null ? thread.worker_id : `thread ${n}`;
}

/** Threads by number (10 after 2). */
export function orderThreads(threads: readonly LiveWorkerThread[]): LiveWorkerThread[] {
  return [...threads].sort(
    (a, b) => (threadNumber(a) ?? Number.MAX_SAFE_INTEGER) - (threadNumber(b) ?? Number.MAX_SAFE_INTEGER),
  );
}

/** "box · pid 4242". */
export function processTitle(process: LiveWorkerProcess): string {
  return `${process.hostname} · pid ${process.pid}`;
}

/**
 * "1 of 4 threads busy", and "3 of 4 threads live" when some configured threads are gone
 * (a thread replaced after a timeout is not counted twice).
 */
export function describeThreads(process: LiveWorkerProcess): string {
  const busy = `${process.threads_busy} of ${process.threads_live} threads busy`;
  const abandoned = process.threads_abandoned.length;
  // Abandoned threads were replaced: without saying so, "6 of 6 busy" hides them and the
  // thread numbers seem to jump.
  const stuck = abandoned > 0 ? ` · ${abandoned} abandoned ${abandoned === 1 ? 'thread' : 'threads'} still in a handler` : '';
  return process.threads_live === process.threads_configured
    ? `${busy}${stuck}`
    : `${busy} · ${process.threads_live} of ${process.threads_configured} configured threads live${stuck}`;
}

/** "all queues" for `*`, else the names. */
export function describeQueues(queues: readonly string[]): string {
  if (queues.length === 0 || queues.includes('*')) return 'all queues';
  return `${queues.length === 1 ? 'queue' : 'queues'} ${queues.join(', ')}`;
}
