import { describe, expect, it } from 'vitest';
import { DEFAULT_API_BASE_URL, DEFAULT_POLL_INTERVAL_MS, normaliseBaseUrl, parsePollInterval } from './config';

describe('settings parsing', () => {
  it('defaults the API base URL and strips trailing slashes', () => {
    expect(normaliseBaseUrl(undefined)).toBe(DEFAULT_API_BASE_URL);
    expect(normaliseBaseUrl('  ')).toBe(DEFAULT_API_BASE_URL);
    expect(normaliseBaseUrl('https://queue.example/api//')).toBe('https://queue.example/api');
  });

  it('accepts a sane poll interval and falls back otherwise', () => {
    expect(parsePollInterval('5000')).toBe(5000);
    expect(parsePollInterval(undefined)).toBe(DEFAULT_POLL_INTERVAL_MS);
    expect(parsePollInterval('fast')).toBe(DEFAULT_POLL_INTERVAL_MS);
    expect(parsePollInterval('10')).toBe(DEFAULT_POLL_INTERVAL_MS);
  });
});
