import { describe, expect, it } from 'vitest';
import { makeJob } from '../test/fixtures';
import {
  actionStatuses,
  describeFilters,
  describeOutcome,
  EMPTY_FILTER_REASON,
  filterSelection,
  planForFilters,
  planForSelection,
  planLabel,
} from './bulk';

describe('actionStatuses', () => {
  it('is every status the action takes without a status filter', () => {
    expect(actionStatuses('retry', undefined)).toEqual(['failed', 'cancelled']);
    expect(actionStatuses('cancel', undefined)).toEqual(['waiting', 'queued', 'running']);
  });

  it('is the filtered status when the action takes it, else nothing', () => {
    expect(actionStatuses('retry', 'cancelled')).toEqual(['cancelled']);
    expect(actionStatuses('cancel', 'cancelled')).toEqual([]);
    expect(actionStatuses('retry', 'succeeded')).toEqual([]);
  });
});

describe('filterSelection and describeFilters', () => {
  it('leave blank filters out', () => {
    expect(filterSelection({ status: undefined, type: '', queue: 'emails' })).toEqual({ queue: 'emails' });
    expect(describeFilters({ status: 'failed', type: 'demo', queue: 'emails' })).toBe(
      'status failed · type contains “demo” · queue emails',
    );
  });
});

describe('planForFilters', () => {
  it('refuses an empty filter, like the API', () => {
    const plan = planForFilters('retry', {}, { failed: 3, cancelled: 0 });
    expect(plan).toMatchObject({ selection: null, disabledReason: EMPTY_FILTER_REASON, count: undefined });
    expect(planLabel(plan)).toBe('Retry failed/cancelled');
  });

  it('waits for every count it needs', () => {
    const plan = planForFilters('cancel', { type: 'demo' }, { queued: 2 });
    expect(plan).toMatchObject({ count: undefined, selection: null });
  });

  it('adds up the counts and sends the filters', () => {
    const plan = planForFilters('cancel', { type: 'demo', queue: 'emails' }, { waiting: 1, queued: 2, running: 3 });
    expect(plan).toMatchObject({ count: 6, selection: { type: 'demo', queue: 'emails' }, disabledReason: null });
    expect(planLabel(plan)).toBe('Cancel 6 waiting/queued/running');
  });

  it('is disabled when nothing would change', () => {
    const plan = planForFilters('retry', { status: 'failed' }, { failed: 0 });
    expect(plan).toMatchObject({ count: 0, selection: null, disabledReason: 'No failed job matches.' });
  });
});

describe('planForSelection', () => {
  const rows = [
    makeJob({ id: 'a', status: 'failed' }),
    makeJob({ id: 'b', status: 'queued' }),
    makeJob({ id: 'c', status: 'cancelled' }),
  ];

  it('sends the ids of the selected rows the action applies to', () => {
    expect(planForSelection('retry', rows, new Set(['a', 'b', 'c']), 1000)).toMatchObject({
      count: 2,
      selection: { ids: ['a', 'c'] },
    });
    expect(planForSelection('cancel', rows, new Set(['a']), 1000)).toMatchObject({
      count: 0,
      selection: null,
      disabledReason: 'None of the selected jobs is waiting, queued or running.',
    });
  });

  it('stays within the ids one request may name', () => {
    expect(planForSelection('retry', rows, new Set(['a', 'c']), 1)).toMatchObject({
      selection: null,
      disabledReason: 'One action names at most 1 ids; select fewer.',
    });
  });
});

describe('describeOutcome', () => {
  it('says what a retry did', () => {
    expect(describeOutcome({ action: 'retry', outcome: { retried: 1, held: 0, held_jobs: [] } })).toBe(
      'Retried 1 job: queued again.',
    );
    expect(describeOutcome({ action: 'retry', outcome: { retried: 0, held: 0, held_jobs: [] } })).toBe(
      'No job was retried: none matched any more.',
    );
  });

  it('says which jobs a retry left alone for their unique key', () => {
    const held = { id: 'a', unique_key: 'nightly', held_by: 'b' };
    expect(describeOutcome({ action: 'retry', outcome: { retried: 2, held: 1, held_jobs: [held] } })).toBe(
      'Retried 2 jobs: queued again. Left 1 job alone: another job holds its unique key (retry once those finish).',
    );
    expect(describeOutcome({ action: 'retry', outcome: { retried: 0, held: 3, held_jobs: [held] } })).toBe(
      'No job was retried. Left 3 jobs alone: other jobs hold their unique keys (retry once those finish).',
    );
  });

  it('tells cancelled queued jobs from running ones asked to stop', () => {
    expect(describeOutcome({ action: 'cancel', outcome: { cancelled: 2, cancel_requested: 0 } })).toBe(
      'Cancelled 2 waiting or queued jobs.',
    );
    expect(describeOutcome({ action: 'cancel', outcome: { cancelled: 0, cancel_requested: 3 } }, 3)).toBe(
      'Asked 3 running jobs to stop: they end as cancelled within a heartbeat (3 s), when the handler next checks in.',
    );
    expect(describeOutcome({ action: 'cancel', outcome: { cancelled: 0, cancel_requested: 0 } })).toBe(
      'No job was cancelled: none matched any more.',
    );
  });
});
