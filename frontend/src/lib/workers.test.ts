import { describe, expect, it } from 'vitest';
import { makeProcess, makeWorker } from '../test/fixtures';
import { orderThreads, processTitle, summarizeProcess, threadLabel } from './workers';

const job = (overdue = false) => ({
  id: '8421aca2-7d0c-484c-9c19-e7e324a39e21',
  type: 'demo.slow',
  queue: 'default',
  attempt: 1,
  since: '2026-06-21T10:59:00Z',
  locked_until: '2026-06-21T11:00:30Z',
  lease_overdue: overdue,
});

describe('a worker process', () => {
  const maintenance = makeWorker({ worker_id: 'box:4242:thread-0:aa', thread: 0, role: 'maintenance' });
  const busy = makeWorker({ worker_id: 'box:4242:thread-2:bb', thread: 2, current_job: job() });
  const stuck = makeWorker({ worker_id: 'box:4242:thread-10:cc', thread: 10, current_job: job(true) });
  const idle = makeWorker({ worker_id: 'box:4242:thread-1:dd', thread: 1 });

  it('counts busy and idle job threads, leaving the maintenance thread out', () => {
    expect(summarizeProcess(makeProcess([maintenance, busy, stuck, idle]))).toEqual({
      threads: 3,
      busy: 2,
      idle: 1,
      overdue: 1,
    });
  });

  it('orders threads by number (10 after 2) with the maintenance thread last', () => {
    expect(orderThreads([stuck, maintenance, busy, idle]).map(threadLabel)).toEqual([
      'thread 1',
      'thread 2',
      'thread 10',
      'maintenance',
    ]);
  });

  it('names a process by host and pid, or by its raw id when the worker id had another form', () => {
    expect(processTitle(makeProcess([idle]))).toBe('box · pid 4242');
    const odd = makeWorker({ worker_id: 'custom-worker', host: null, pid: null, thread: null });
    expect(processTitle(makeProcess([odd], { process: 'custom-worker', host: null, pid: null }))).toBe('custom-worker');
    expect(threadLabel(odd)).toBe('custom-worker');
  });
});
