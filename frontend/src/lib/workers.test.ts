import { describe, expect, it } from 'vitest';
import { makeProcess, makeThread } from '../test/fixtures';
import { describeQueues, describeThreads, orderThreads, processTitle, threadLabel } from './workers';

const job = { type: 'demo.slow' };

describe('a live worker process', () => {
  it('orders threads by number (10 after 2)', () => {
    expect(orderThreads([makeThread(10), makeThread(1), makeThread(2)]).map(threadLabel)).toEqual([
      'thread 1',
      'thread 2',
      'thread 10',
    ]);
  });

  it('says how many threads are busy, and when some configured ones are not live', () => {
    const process = makeProcess([makeThread(1, job), makeThread(2)]);
    expect(describeThreads(process)).toBe('1 of 2 threads busy');
    expect(describeThreads({ ...process, threads_configured: 4 })).toBe(
      '1 of 2 threads busy · 2 of 4 configured threads live',
    );
  });

  it('names a process by host and pid, and its queues', () => {
    expect(processTitle(makeProcess([]))).toBe('box · pid 4242');
    expect(describeQueues(['*'])).toBe('all queues');
    expect(describeQueues(['emails', 'reports'])).toBe('queues emails, reports');
  });
});
