import { describe, expect, it } from 'vitest';
import { makeTypeHealth } from '../test/fixtures';
import { formatMs, formatRate, formatTypeSort, nextSort, parseTypeSort, sortTypes } from './jobTypes';

const names = (types: { type: string }[]) => types.map((t) => t.type);

describe('sortTypes', () => {
  const types = [
    makeTypeHealth('b.idle'),
    makeTypeHealth('a.flaky', { counts: { succeeded: 3, retry_scheduled: 1 } }),
    makeTypeHealth('c.broken', { counts: { failed: 2 } }),
    makeTypeHealth('d.fine', { counts: { succeeded: 5 } }),
  ];

  it('orders by failure rate, worst first, with types without attempts last', () => {
    expect(names(sortTypes(types, { column: 'failure_rate', direction: 'desc' }))).toEqual([
      'c.broken',
      'a.flaky',
      'd.fine',
      'b.idle',
    ]);
  });

  it('keeps types without a value last when ascending too', () => {
    expect(names(sortTypes(types, { column: 'failure_rate', direction: 'asc' }))).toEqual([
      'd.fine',
      'a.flaky',
      'c.broken',
      'b.idle',
    ]);
  });

  it('breaks ties by name and sorts names alphabetically', () => {
    expect(names(sortTypes(types, { column: 'failures', direction: 'desc' }))).toEqual([
      'c.broken',
      'a.flaky',
      'b.idle',
      'd.fine',
    ]);
    expect(names(sortTypes(types, { column: 'type', direction: 'desc' }))).toEqual([
      'd.fine',
      'c.broken',
      'b.idle',
      'a.flaky',
    ]);
  });

  it('sorts percentile columns by p95 and the last error by its time', () => {
    const timed = [
      makeTypeHealth('fast', { run_ms: { p50: 900, p95: 1000 } }),
      makeTypeHealth('tail', { run_ms: { p50: 10, p95: 5000 } }),
      makeTypeHealth('none'),
    ];
    expect(names(sortTypes(timed, { column: 'run_ms', direction: 'desc' }))).toEqual(['tail', 'fast', 'none']);
    const errors = [
      makeTypeHealth('old', { last_error: { message: 'x', at: '2026-06-21T10:00:00Z', job_id: 'a' } }),
      makeTypeHealth('new', { last_error: { message: 'y', at: '2026-06-21T10:05:00Z', job_id: 'b' } }),
      makeTypeHealth('clean'),
    ];
    expect(names(sortTypes(errors, { column: 'last_error', direction: 'desc' }))).toEqual(['new', 'old', 'clean']);
  });

  it('returns a copy and leaves its input alone', () => {
    const before = names(types);
    sortTypes(types, { column: 'type', direction: 'asc' });
    expect(names(types)).toEqual(before);
  });
});

describe('sort state', () => {
  it('flips the same column and starts another at its natural order', () => {
    expect(nextSort({ column: 'attempts', direction: 'desc' }, 'attempts')).toEqual({
      column: 'attempts',
      direction: 'asc',
    });
    expect(nextSort({ column: 'attempts', direction: 'desc' }, 'type')).toEqual({ column: 'type', direction: 'asc' });
    expect(nextSort({ column: 'type', direction: 'asc' }, 'run_ms')).toEqual({ column: 'run_ms', direction: 'desc' });
  });

  it('round-trips through the URL and falls back on anything unknown', () => {
    expect(parseTypeSort(formatTypeSort({ column: 'wait_ms', direction: 'desc' }))).toEqual({
      column: 'wait_ms',
      direction: 'desc',
    });
    expect(parseTypeSort('type')).toEqual({ column: 'type', direction: 'asc' });
    expect(parseTypeSort('-nonsense')).toEqual({ column: 'failure_rate', direction: 'desc' });
    expect(parseTypeSort(null)).toEqual({ column: 'failure_rate', direction: 'desc' });
  });
});

describe('formatting', () => {
  it('reads milliseconds at the right scale', () => {
    expect(formatMs(null)).toBe('—');
    expect(formatMs(850)).toBe('850 ms');
    expect(formatMs(1234)).toBe('1.2 s');
    expect(formatMs(125_000)).toBe('2m 05s');
  });

  it('reads failure rates as percentages', () => {
    expect(formatRate(null)).toBe('—');
    expect(formatRate(1)).toBe('100%');
    expect(formatRate(0.125)).toBe('12.5%');
    expect(formatRate(0.3333)).toBe('33.3%');
  });
});
