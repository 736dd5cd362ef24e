import { describe, expect, it } from 'vitest';
import { config } from '../test/fixtures';
import { pageSizeChoices, parsePageSize } from './paging';

describe('pageSizeChoices', () => {
  it('offers the round sizes the API allows, for both lists of the config', () => {
    expect(pageSizeChoices(config.pagination.jobs)).toEqual([10, 25, 50, 100]);
    expect(pageSizeChoices(config.pagination.job_events)).toEqual([10, 25, 50, 100, 200]);
  });

  it('always offers the default and the maximum, and never more than the maximum', () => {
    expect(pageSizeChoices({ default_limit: 30, max_limit: 40 })).toEqual([10, 25, 30, 40]);
    expect(pageSizeChoices({ default_limit: 5, max_limit: 8 })).toEqual([5, 8]);
  });

  it('keeps the size in use so the select can show it', () => {
    expect(pageSizeChoices({ default_limit: 25, max_limit: 100 }, 33)).toEqual([10, 25, 33, 50, 100]);
  });
});

describe('parsePageSize', () => {
  it('leaves a missing or malformed limit to the API default', () => {
    expect(parsePageSize(null, 100)).toBeUndefined();
    expect(parsePageSize(' ', 100)).toBeUndefined();
    expect(parsePageSize('abc', 100)).toBeUndefined();
    expect(parsePageSize('2.5', 100)).toBeUndefined();
  });

  it('clamps to at least 1 and, once known, to the API maximum', () => {
    expect(parsePageSize('10', 100)).toBe(10);
    expect(parsePageSize('0', 100)).toBe(1);
    expect(parsePageSize('500', 100)).toBe(100);
    expect(parsePageSize('500')).toBe(500);
  });
});
