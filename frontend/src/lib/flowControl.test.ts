import { describe, expect, it } from 'vitest';
import { makeQueue } from '../test/fixtures';
import {
  buildLimitsRequest,
  describeCadence,
  describeConcurrency,
  describeRateLimit,
  formatSeconds,
  limitsFormValues,
  saturationTone,
  splitLimitErrors,
} from './flowControl';

describe('describeConcurrency', () => {
  it('names running against the limit with the saturation', () => {
    expect(describeConcurrency(makeQueue({ running: 3, concurrency_limit: 5, saturation: 0.6 }))).toBe(
      '3 of 5 running (60 %)',
    );
  });

  it('says when there is no limit', () => {
    expect(describeConcurrency(makeQueue({ running: 4 }))).toBe('4 running, no limit');
  });
});

describe('saturationTone', () => {
  it('warns near the limit and alarms at it', () => {
    expect(saturationTone(null)).toBe('neutral');
    expect(saturationTone(0.5)).toBe('neutral');
    expect(saturationTone(0.8)).toBe('warning');
    expect(saturationTone(1)).toBe('danger');
  });
});

describe('describeRateLimit and formatSeconds', () => {
  it('names the count per period in its largest whole unit', () => {
    expect(describeRateLimit({ rate_limit: 10, rate_period_seconds: 1 })).toBe('10 per 1 s');
    expect(describeRateLimit({ rate_limit: 100, rate_period_seconds: 3600 })).toBe('100 per 1 h');
    expect(describeRateLimit({ rate_limit: null, rate_period_seconds: null })).toBe('no limit');
    expect(formatSeconds(90)).toBe('90 s');
    expect(formatSeconds(300)).toBe('5 min');
    expect(formatSeconds(172_800)).toBe('2 d');
  });
});

describe('describeCadence', () => {
  it('shows a cron expression as written and an interval in words', () => {
    expect(describeCadence({ cron: '0 3 * * *', interval_seconds: null })).toBe('0 3 * * *');
    expect(describeCadence({ cron: null, interval_seconds: 60 })).toBe('every 1 min');
  });
});

describe('buildLimitsRequest', () => {
  it('round-trips a queue’s limits', () => {
    const values = limitsFormValues(makeQueue({ concurrency_limit: 2, rate_limit: 10, rate_period_seconds: 60 }));
    expect(buildLimitsRequest(values)).toEqual({
      ok: true,
      input: { concurrency_limit: 2, rate_limit: 10, rate_period_seconds: 60 },
    });
  });

  it('turns blank into no limit and leaves the period out without a rate limit', () => {
    expect(buildLimitsRequest({ concurrencyLimit: ' ', rateLimit: '', ratePeriodSeconds: '1' })).toEqual({
      ok: true,
      input: { concurrency_limit: null, rate_limit: null },
    });
  });

  it('refuses zero, fractions and text, per field', () => {
    expect(buildLimitsRequest({ concurrencyLimit: '0', rateLimit: '1.5', ratePeriodSeconds: 'x' })).toEqual({
      ok: false,
      errors: {
        concurrency_limit: ['The concurrency limit must be a whole number of 1 or more.'],
        rate_limit: ['The rate limit must be a whole number of 1 or more.'],
        rate_period_seconds: ['The period must be a whole number of 1 or more.'],
      },
    });
  });

  it('needs a period with a rate limit', () => {
    expect(buildLimitsRequest({ concurrencyLimit: '', rateLimit: '5', ratePeriodSeconds: '' })).toEqual({
      ok: false,
      errors: { rate_period_seconds: ['A rate limit needs a period.'] },
    });
  });
});

describe('splitLimitErrors', () => {
  it('keeps the form’s fields and puts the rest at the top', () => {
    expect(splitLimitErrors({ rate_limit: ['Too big.'], detail: ['Nope.'], other: ['x'] })).toEqual({
      fields: { rate_limit: ['Too big.'] },
      general: ['Nope.', 'other: x'],
    });
  });
});
