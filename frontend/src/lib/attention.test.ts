import { describe, expect, it } from 'vitest';
import { makeTypeHealth, stats } from '../test/fixtures';
import {
  attentionItems,
  BACKLOG_AGE_THRESHOLD_MS,
  FAILING_TYPE_MIN_ATTEMPTS,
  FAILING_TYPE_RATE,
  isFailing,
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
    expect(overdue!.to).toBe('/workers');
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
});
