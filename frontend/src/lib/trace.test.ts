import { describe, expect, it } from 'vitest';
import { traceIdOf } from './trace';

describe('traceIdOf', () => {
  it('reads the trace id of a W3C traceparent', () => {
    expect(traceIdOf('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')).toBe(
      '0af7651916cd43dd8448eb211c80319c',
    );
  });

  it('is null without one, for a malformed one and for the all-zero invalid id', () => {
    expect(traceIdOf(undefined)).toBeNull();
    expect(traceIdOf('not a traceparent')).toBeNull();
    expect(traceIdOf('00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01')).toBeNull();
    expect(traceIdOf(`00-${'0'.repeat(32)}-b7ad6b7169203331-01`)).toBeNull();
  });
});
