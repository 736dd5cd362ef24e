import { describe, expect, it } from 'vitest';
import { config } from '../test/fixtures';
import {
  buildCreateRequest,
  bulkFieldErrors,
  bulkFromTemplate,
  initialValues,
  KEY_MAX_LENGTH,
  parseCount,
  splitServerErrors,
  type CreateFormValues,
} from './createForm';

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

function values(overrides: Partial<CreateFormValues> = {}): CreateFormValues {
  return { ...initialValues(config), ...overrides };
}

describe('initialValues', () => {
  it('starts from the first job type, its example payload and the configured default attempts', () => {
    const v = initialValues(config);
    expect(v.type).toBe('demo.success');
    expect(JSON.parse(v.payload)).toEqual({ sleep_seconds: 1 });
    expect(v.maxAttempts).toBe('3');
    expect(v.priority).toBe('50');
    expect(v.schedule).toBe('now');
  });
});

describe('buildCreateRequest', () => {
  it('builds the request body for an immediate job', () => {
    const result = buildCreateRequest(values({ idempotencyKey: '  key-1 ' }), config.limits, NOW);
    expect(result).toEqual({
      ok: true,
      input: {
        type: 'demo.success',
        payload: { sleep_seconds: 1 },
        priority: 50,
        available_at: null,
        max_attempts: 3,
        idempotency_key: 'key-1',
        timeout_seconds: null,
      },
    });
  });

  it('sends a queue and a timeout when given, and leaves the queue to the API when blank', () => {
    const given = buildCreateRequest(values({ queue: ' emails ', timeoutSeconds: '90' }), config.limits, NOW);
    expect(given.ok && given.input).toMatchObject({ queue: 'emails', timeout_seconds: 90 });
    const blank = buildCreateRequest(values({ queue: '  ', timeoutSeconds: ' ' }), config.limits, NOW);
    expect(blank.ok && 'queue' in blank.input).toBe(false);
    expect(blank.ok && blank.input.timeout_seconds).toBeNull();
  });

  it('bounds the queue name and the timeout by the published limits', () => {
    const limits = { ...config.limits, queue_name_max_length: 5, timeout_seconds_max: 60 };
    expect(buildCreateRequest(values({ queue: 'q'.repeat(5), timeoutSeconds: '60' }), limits, NOW).ok).toBe(true);
    expect(buildCreateRequest(values({ queue: 'q'.repeat(6), timeoutSeconds: '61' }), limits, NOW)).toEqual({
      ok: false,
      errors: { queue: ['At most 5 characters.'], timeout_seconds: ['Timeout must be between 1 and 60 seconds.'] },
    });
  });

  it('turns a delay into an absolute available_at', () => {
    const result = buildCreateRequest(values({ schedule: 'delay', delaySeconds: '90' }), config.limits, NOW);
    expect(result.ok && result.input.available_at).toBe('2026-01-01T12:01:30.000Z');
  });

  it('converts a picked local time to ISO 8601', () => {
    const result = buildCreateRequest(values({ schedule: 'at', availableAt: '2026-03-04T05:06' }), config.limits, NOW);
    expect(result.ok && result.input.available_at).toBe(new Date('2026-03-04T05:06').toISOString());
  });

  it('sends the unique and concurrency keys trimmed when given, and leaves them out when blank', () => {
    const given = buildCreateRequest(values({ uniqueKey: ' rebuild ', concurrencyKey: 'customer:7' }), config.limits, NOW);
    expect(given.ok && given.input).toMatchObject({ unique_key: 'rebuild', concurrency_key: 'customer:7' });
    const blank = buildCreateRequest(values({ uniqueKey: '  ', concurrencyKey: '' }), config.limits, NOW);
    expect(blank.ok && blank.input).not.toHaveProperty('unique_key');
    expect(blank.ok && blank.input).not.toHaveProperty('concurrency_key');
  });

  it('bounds the unique and concurrency keys by their column length', () => {
    const long = 'k'.repeat(KEY_MAX_LENGTH + 1);
    expect(buildCreateRequest(values({ uniqueKey: long, concurrencyKey: long }), config.limits, NOW)).toEqual({
      ok: false,
      errors: {
        unique_key: [`At most ${KEY_MAX_LENGTH} characters.`],
        concurrency_key: [`At most ${KEY_MAX_LENGTH} characters.`],
      },
    });
  });

  it('sends a blank idempotency key as null', () => {
    const result = buildCreateRequest(values({ idempotencyKey: '   ' }), config.limits, NOW);
    expect(result.ok && result.input.idempotency_key).toBeNull();
  });

  it('collects every field error at once', () => {
    const result = buildCreateRequest(
      values({
        type: '',
        payload: '[1]',
        priority: '40000',
        maxAttempts: '0',
        schedule: 'delay',
        delaySeconds: '-5',
        idempotencyKey: 'k'.repeat(256),
        queue: 'no spaces',
        timeoutSeconds: '0',
      }),
      config.limits,
      NOW,
    );
    expect(result).toEqual({
      ok: false,
      errors: {
        type: ['Choose a job type.'],
        payload: ['Payload must be a JSON object, not an array.'],
        priority: ['Priority must be between -32768 and 32767.'],
        max_attempts: ['Max attempts must be between 1 and 100.'],
        available_at: ['Delay must be zero or more seconds.'],
        idempotency_key: ['At most 255 characters.'],
        queue: ['Letters, digits and . _ : - only, starting with a letter or digit.'],
        timeout_seconds: ['Timeout must be between 1 and 604800 seconds.'],
      },
    });
  });

  it('rejects non-integer numbers', () => {
    const result = buildCreateRequest(
      values({ priority: '1.5', maxAttempts: 'abc', timeoutSeconds: '2.5' }),
      config.limits,
      NOW,
    );
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.errors.priority).toEqual(['Priority must be a whole number.']);
      expect(result.errors.max_attempts).toEqual(['Max attempts must be a whole number.']);
      expect(result.errors.timeout_seconds).toEqual(['Timeout must be a whole number of seconds.']);
    }
  });

  it('requires a time when scheduling at a time', () => {
    const result = buildCreateRequest(values({ schedule: 'at', availableAt: '' }), config.limits, NOW);
    expect(!result.ok && result.errors.available_at).toEqual(['Pick a date and time.']);
  });
});

describe('splitServerErrors', () => {
  it('puts known fields next to their inputs and everything else at the top', () => {
    expect(
      splitServerErrors({
        priority: ['Ensure this value is less than or equal to 32767.'],
        type: ['Unknown job type "x".'],
        non_field_errors: ['Something is off.'],
        detail: ['Body too large.'],
        surprise: ['Unexpected.'],
      }),
    ).toEqual({
      fields: { priority: ['Ensure this value is less than or equal to 32767.'], type: ['Unknown job type "x".'] },
      general: ['Something is off.', 'Body too large.', 'surprise: Unexpected.'],
    });
  });
});

describe('bulk create from the form', () => {
  it('takes a count from 1 to the published maximum', () => {
    expect(parseCount(' 25 ', 1000)).toEqual({ ok: true, count: 25 });
    expect(parseCount('0', 1000)).toEqual({ ok: false, error: 'A whole number from 1 to 1000.' });
    expect(parseCount('1001', 1000).ok).toBe(false);
    expect(parseCount('2.5', 1000).ok).toBe(false);
  });

  it('copies the template, numbering its idempotency key', () => {
    const jobs = bulkFromTemplate({ type: 'demo.success', payload: {}, idempotency_key: 'batch' }, 3);
    expect(jobs.map((j) => j.idempotency_key)).toEqual(['batch-1', 'batch-2', 'batch-3']);
    expect(bulkFromTemplate({ type: 'demo.success', payload: {} }, 2)).toEqual([
      { type: 'demo.success', payload: {} },
      { type: 'demo.success', payload: {} },
    ]);
  });

  it("reads the bulk API's per-item errors as the form's fields", () => {
    expect(
      bulkFieldErrors({ 'jobs[0].payload': ['Bad.'], 'jobs[1].payload': ['Bad.'], detail: ['Refused.'] }),
    ).toEqual({ payload: ['Bad.'], detail: ['Refused.'] });
  });
});
