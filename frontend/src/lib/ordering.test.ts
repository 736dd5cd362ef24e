import { describe, expect, it } from 'vitest';
import { formatOrdering, nextOrdering, parseOrdering } from './ordering';

describe('the Jobs list ordering', () => {
  it('reads the URL, ignoring what the API does not sort on', () => {
    expect(parseOrdering('-started_at')).toEqual({ field: 'started_at', descending: true });
    expect(parseOrdering('type')).toEqual({ field: 'type', descending: false });
    expect(parseOrdering('payload')).toBeUndefined();
    expect(parseOrdering(null)).toBeUndefined();
  });

  it('starts times descending and the type ascending, and flips on a second click', () => {
    expect(formatOrdering(nextOrdering(undefined, 'finished_at'))).toBe('-finished_at');
    expect(formatOrdering(nextOrdering(undefined, 'type'))).toBe('type');
    expect(formatOrdering(nextOrdering({ field: 'priority', descending: true }, 'priority'))).toBe('priority');
  });
});
