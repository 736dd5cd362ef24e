import { describe, expect, it } from 'vitest';
import { namedQueues, queueChoices, queueNameProblem } from './queue';

describe('queueNameProblem', () => {
  it.each(['default', 'emails', 'a', 'tenant:42.reports_v2-eu', '9lives'])('accepts %s', (name) => {
    expect(queueNameProblem(name, 64)).toBeNull();
  });

  it.each(['', 'with space', 'émails', '-leading', '.hidden', 'a/b', 'a*'])('refuses %j', (name) => {
    expect(queueNameProblem(name, 64)).toBe('Letters, digits and . _ : - only, starting with a letter or digit.');
  });

  it('refuses a name longer than the published maximum', () => {
    expect(queueNameProblem('q'.repeat(8), 8)).toBeNull();
    expect(queueNameProblem('q'.repeat(9), 8)).toBe('At most 8 characters.');
  });
});

describe('namedQueues', () => {
  it('drops the "all queues" wildcard', () => {
    expect(namedQueues(['*'])).toEqual([]);
    expect(namedQueues(['default', 'emails'])).toEqual(['default', 'emails']);
  });
});

describe('queueChoices', () => {
  it('always offers default', () => {
    expect(queueChoices(['*'], [])).toEqual(['default']);
    expect(queueChoices(['default'], ['default'], 'default')).toEqual(['default']);
  });

  it('merges configured, active and filtered queues, sorted, once each', () => {
    expect(queueChoices(['*', 'reports', 'default'], ['emails', 'default', 'reports'])).toEqual([
      'default',
      'emails',
      'reports',
    ]);
    expect(queueChoices(['*'], [], 'drained')).toEqual(['default', 'drained']);
  });
});
