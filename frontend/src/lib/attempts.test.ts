import { describe, expect, it } from 'vitest';
import { makeAttempt } from '../test/fixtures';
import { describeTimeout, formatMs, groupByRound } from './attempts';

describe('groupByRound', () => {
  it('groups attempts by manual-retry round, in order', () => {
    const rounds = groupByRound([
      makeAttempt({ number: 3, round: 2, attempt: 1 }),
      makeAttempt({ number: 1, round: 1, attempt: 1 }),
      makeAttempt({ number: 2, round: 1, attempt: 2 }),
    ]);
    expect(rounds.map((r) => [r.round, r.attempts.map((a) => a.number)])).toEqual([
      [1, [1, 2]],
      [2, [3]],
    ]);
  });
});

describe('formatMs', () => {
  it('reads milliseconds, seconds and minutes', () => {
    expect(formatMs(840)).toBe('840 ms');
    expect(formatMs(12_400)).toBe('12.4 s');
    expect(formatMs(185_000)).toBe('3m 05s');
    expect(formatMs(null)).toBe('—');
  });
});

describe('describeTimeout', () => {
  it('says the timeout in force and where it came from', () => {
    expect(describeTimeout(10, 'type')).toBe('10 s (the job type’s default)');
    expect(describeTimeout(null, 'worker')).toBe('no limit (the worker’s default)');
    expect(describeTimeout(30, 'job')).toBe('30 s (set on the job)');
    expect(describeTimeout(null, null)).toBe('no limit (none set on the job, its type or the worker)');
  });

  it('is null when the API does not say', () => {
    expect(describeTimeout(undefined, undefined)).toBeNull();
  });
});
