import { describe, expect, it } from 'vitest';
import { makeProcess, makeQueue, makeSchedule, makeThread, makeTypeHealth, stats } from '../test/fixtures';
import {
  attentionItems,
  BACKLOG_AGE_THRESHOLD_MS,
  FAILING_TYPE_MIN_ATTEMPTS,
  FAILING_TYPE_RATE,
  hasPausedBacklog,
  isFailing,
  lastRunFailed,
} from './attention';

const NOW = Date.parse('2026-06-21T11:00:00Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();

describe('isFailing', () => {
  it('needs the failure rate at the threshold over enough attempts', () => {
    const failures = Math.ceil(FAILING_TYPE_RATE * 10);
    expect(isFailing(makeTypeHealth('t', { counts: { failed: failures, succeeded: 10 - failures } }))).toBe(true);
    expect(isFailing(makeTypeHealth('t', { counts: { failed: failures - 1, succeeded: 11 - failures } }))).toBe(false);
    // Every attempt failed, but too few of them to call it a trend.
    expect(isFailing(makeTypeHealth('t', { counts: { failed: FAILING_TYPE_MIN_ATTEMPTS - 1 } }))).toBe(false);
    expect(isFailing(makeTypeHealth('t', { counts: { failed: FAILING_TYPE_MIN_ATTEMPTS } }))).toBe(true);
    expect(isFailing(makeTypeHealth('idle'))).toBe(false);
  });

  it('counts retried, timed-out and lease-expired attempts as failures', () => {
    expect(isFailing(makeTypeHealth('t', { counts: { retry_scheduled: 2, timeout_requeued: 1, succeeded: 1 } }))).toBe(
      true,
    );
    expect(isFailing(makeTypeHealth('t', { counts: { timed_out: 3, succeeded: 1 } }))).toBe(true);
  });
});

describe('attentionItems', () => {
  it('is empty when all is fine', () => {
    const types = [makeTypeHealth('ok', { counts: { succeeded: 50, retry_scheduled: 1 } })];
    expect(attentionItems({ ...stats, oldest_due_at: ago(60_000) }, types, NOW)).toEqual([]);
  });

  it('lists failing types worst first, then overdue leases, then the backlog', () => {
    const types = [
      makeTypeHealth('half', { counts: { failed: 2, succeeded: 2 } }),
      makeTypeHealth('broken', {
        counts: { failed: 3 },
        last_error: { message: 'Intentional demo failure', at: ago(1000), job_id: 'j' },
      }),
      makeTypeHealth('fine', { counts: { succeeded: 9 } }),
    ];
    const items = attentionItems(
      { ...stats, overdue_running: 2, oldest_due_at: ago(BACKLOG_AGE_THRESHOLD_MS + 60_000), queues: ['emails'] },
      types,
      NOW,
    );
    expect(items.map((i) => i.key)).toEqual(['type:broken', 'type:half', 'overdue', 'backlog']);
    const [broken, half, overdue, backlog] = items;
    expect(broken!.title).toBe('broken is failing: 100% of attempts');
    expect(broken!.detail).toBe('3 of 3 attempts failed in the last 15 minutes. Last error: Intentional demo failure');
    expect(broken!.to).toBe('/jobs?type=broken');
    expect(half!.title).toContain('50%');
    expect(overdue!.title).toBe('2 running jobs have an expired lease');
    expect(overdue!.to).toBe('/jobs?status=running&lease_expired=true');
    expect(backlog!.title).toBe('The backlog is growing: the oldest due job has waited 6m 00s');
    expect(backlog!.detail).toContain('queues with jobs: emails');
  });

  it('leaves a backlog younger than the threshold alone', () => {
    const young = { ...stats, oldest_due_at: ago(BACKLOG_AGE_THRESHOLD_MS - 1000) };
    expect(attentionItems(young, [], NOW)).toEqual([]);
    expect(attentionItems({ ...stats, oldest_due_at: ago(BACKLOG_AGE_THRESHOLD_MS + 1000) }, [], NOW)).toHaveLength(1);
  });

  it('still reports the stats rules while the types load', () => {
    expect(attentionItems({ ...stats, overdue_running: 1 }, undefined, NOW).map((i) => i.title)).toEqual([
      '1 running job has an expired lease',
    ]);
  });

  it('lists schedules whose last job failed, linking to that job', () => {
    const failed = makeSchedule({
      name: 'nightly-report',
      target: 'demo.fail',
      last_job: { id: 'abcdef12-0000-4000-8000-000000000000', status: 'failed', created_at: ago(120_000) },
    });
    const fine = makeSchedule({
      name: 'fine',
      last_job: { id: 'fedcba21-0000-4000-8000-000000000000', status: 'succeeded', created_at: ago(60_000) },
    });
    const items = attentionItems(stats, [], NOW, { schedules: [fine, failed, makeSchedule({ name: 'never-ran' })] });
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      kind: 'failed_schedule',
      key: 'schedule:nightly-report',
      title: 'Schedule nightly-report: its last job failed',
      to: '/jobs/abcdef12-0000-4000-8000-000000000000',
      linkLabel: 'Job abcdef12',
    });
    expect(items[0]!.detail).toBe('Job abcdef12 (demo.fail), created 2m 00s ago, failed after its last attempt.');
  });

  it('lists paused queues holding queued jobs, largest backlog first, aged from the oldest due job', () => {
    const counts = (queued: number) => ({ queued, waiting: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 });
    const queues = [
      makeQueue({ name: 'small', paused: true, paused_at: ago(60_000), counts: counts(2), due: 2 }),
      makeQueue({
        name: 'big',
        paused: true,
        paused_at: ago(600_000),
        counts: counts(40),
        due: 30,
        scheduled: 10,
        // Created long ago but scheduled: not what the backlog's age is read from.
        oldest_queued_at: ago(3_600_000),
        oldest_due_at: ago(900_000),
      }),
      makeQueue({ name: 'paused-empty', paused: true, paused_at: ago(60_000) }),
      makeQueue({ name: 'busy-but-active', counts: counts(500), due: 500 }),
    ];
    const items = attentionItems(stats, [], NOW, { queues });
    expect(items.map((i) => i.key)).toEqual(['queue:big', 'queue:small']);
    expect(items[0]).toMatchObject({
      kind: 'paused_queue',
      title: 'Queue big is paused with 30 due jobs waiting (and 10 scheduled for later)',
      detail:
        'No worker claims from it, paused 10m 00s ago, so every new job adds to its backlog until it is resumed. ' +
        'The oldest has waited 15m 00s.',
      to: '/jobs?status=queued&queue=big',
    });
    expect(items[1]!.title).toBe('Queue small is paused with 2 due jobs waiting');
  });

  it('says at once when no worker is live, linking to the jobs waiting for one', () => {
    const items = attentionItems({ ...stats, due: 128, oldest_due_at: ago(30_000) }, [], NOW, { workers: [] });
    expect(items[0]).toMatchObject({
      kind: 'no_worker',
      title: 'No live worker',
      to: '/jobs?status=queued&due=true',
    });
    expect(items[0]!.detail).toContain('128 due jobs wait');
    expect(items[0]!.detail).toContain('The oldest has waited 30s');
    // Unknown (loading or failed) is not "none".
    expect(attentionItems(stats, [], NOW, {}).map((i) => i.kind)).toEqual([]);
  });

  it('names a queue with due jobs that no live worker serves', () => {
    const workers = [makeProcess([makeThread(1)], { queues: ['default', 'emails'] })];
    const queues = [
      makeQueue({ name: 'default', due: 3 }),
      makeQueue({ name: 'reports', due: 5, oldest_due_at: ago(120_000) }),
      makeQueue({ name: 'later', scheduled: 4 }),
      makeQueue({ name: 'held', paused: true, due: 2 }),
    ];
    const items = attentionItems(stats, [], NOW, { workers, queues }).filter((i) => i.kind === 'unserved_queue');
    expect(items).toEqual([
      expect.objectContaining({
        title: 'Queue reports has 5 due jobs and no worker serving it',
        to: '/jobs?status=queued&due=true&queue=reports',
      }),
    ]);
    const everyQueue = [makeProcess([makeThread(1)], { queues: ['*'] })];
    expect(attentionItems(stats, [], NOW, { workers: everyQueue, queues }).map((i) => i.kind)).not.toContain(
      'unserved_queue',
    );
  });

  it('puts failed schedules after failing types and paused queues before the backlog', () => {
    const items = attentionItems(
      { ...stats, overdue_running: 1, oldest_due_at: ago(BACKLOG_AGE_THRESHOLD_MS + 60_000) },
      [makeTypeHealth('broken', { counts: { failed: 3 } })],
      NOW,
      {
        queues: [makeQueue({ name: 'q', paused: true, counts: { queued: 1, waiting: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 }, due: 1 })],
        schedules: [makeSchedule({ name: 's', last_job: { id: 'j', status: 'failed', created_at: ago(1000) } })],
      },
    );
    expect(items.map((i) => i.kind)).toEqual(['failing_type', 'failed_schedule', 'overdue_leases', 'paused_queue', 'backlog']);
  });
});

describe('hasPausedBacklog and lastRunFailed', () => {
  it('need a paused queue with due jobs, and a last job that failed', () => {
    const one = { queued: 1, waiting: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
    expect(hasPausedBacklog(makeQueue({ paused: true, counts: one, due: 1 }))).toBe(true);
    expect(hasPausedBacklog(makeQueue({ paused: false, counts: one, due: 1 }))).toBe(false);
    expect(hasPausedBacklog(makeQueue({ paused: true }))).toBe(false);
    // Only scheduled for later: nothing waits on the pause yet.
    expect(hasPausedBacklog(makeQueue({ paused: true, counts: one, scheduled: 1 }))).toBe(false);
    expect(lastRunFailed(makeSchedule({ last_job: { id: 'j', status: 'failed', created_at: ago(0) } }))).toBe(true);
    expect(lastRunFailed(makeSchedule({ last_job: { id: 'j', status: 'queued', created_at: ago(0) } }))).toBe(false);
    expect(lastRunFailed(makeSchedule())).toBe(false);
  });
});
