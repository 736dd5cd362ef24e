/**
 * The Job types table as plain data: which columns sort, in which order, and how the
 * API's numbers read. The page renders these.
 */
import type { JobTypeHealth } from '../api/types';

export type TypeColumn =
  | 'type'
  | 'attempts'
  | 'succeeded'
  | 'failures'
  | 'failure_rate'
  | 'run_ms'
  | 'wait_ms'
  | 'last_error';
export type SortDirection = 'asc' | 'desc';
export interface TypeSort {
  column: TypeColumn;
  direction: SortDirection;
}

export const TYPE_COLUMNS: readonly TypeColumn[] = [
  'type',
  'attempts',
  'succeeded',
  'failures',
  'failure_rate',
  'run_ms',
  'wait_ms',
  'last_error',
];

/** Worst first: what an operator opens the page for. */
export const DEFAULT_TYPE_SORT: TypeSort = { column: 'failure_rate', direction: 'desc' };

/** Attempts that ended without success: retried, failed for good, or lease expired. */
export function failuresOf(type: JobTypeHealth): number {
  return type.counts.retry_scheduled + type.counts.failed + type.counts.timed_out + type.counts.timeout_requeued;
}

/** The value a column sorts by; null (no sample, no error) sorts last either way. */
function sortValue(type: JobTypeHealth, column: TypeColumn): string | number | null {
  switch (column) {
    case 'type':
      return type.type;
    case 'attempts':
      return type.attempts;
    case 'succeeded':
      return type.counts.succeeded;
    case 'failures':
      return failuresOf(type);
    case 'failure_rate':
      return type.failure_rate;
    // The tail is what hurts: percentile columns sort by p95.
    case 'run_ms':
      return type.run_ms.p95;
    case 'wait_ms':
      return type.wait_ms.p95;
    case 'last_error':
      return type.last_error ? Date.parse(type.last_error.at) : null;
  }
}

/** A sorted copy; ties (and nulls among themselves) stay in name order. */
export function sortTypes(types: readonly JobTypeHealth[], sort: TypeSort): JobTypeHealth[] {
  const sign = sort.direction === 'asc' ? 1 : -1;
  return [...types].sort((a, b) => {
    const x = sortValue(a, sort.column);
    const y = sortValue(b, sort.column);
    if (x === null || y === null) {
      if (x !== y) return x === null ? 1 : -1;
    } else if (x !== y) {
      const order = typeof x === 'string' ? x.localeCompare(String(y)) : x - (y as number);
      return sign * order;
    }
    return a.type.localeCompare(b.type);
  });
}

/** Clicking a header: the same column flips, another starts at its natural order. */
export function nextSort(current: TypeSort, column: TypeColumn): TypeSort {
  if (current.column === column) return { column, direction: current.direction === 'asc' ? 'desc' : 'asc' };
  return { column, direction: column === 'type' ? 'asc' : 'desc' };
}

/** `?sort=` as the URL keeps it: `failure_rate` ascending, `-failure_rate` descending. */
export function parseTypeSort(raw: string | null): TypeSort {
  if (!raw) return DEFAULT_TYPE_SORT;
  const direction: SortDirection = raw.startsWith('-') ? 'desc' : 'asc';
  const column = TYPE_COLUMNS.find((c) => c === raw.replace(/^-/, ''));
  return column ? { column, direction } : DEFAULT_TYPE_SORT;
}

export function formatTypeSort(sort: TypeSort): string {
  return sort.direction === 'desc' ? `-${sort.column}` : sort.column;
}

/** "—", "850 ms", "1.2 s", "2m 05s". */
export function formatMs(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, '0')}s`;
}

/** "—" without attempts, else a percentage with at most one decimal: "12.5%", "100%". */
export function formatRate(rate: number | null): string {
  if (rate === null) return '—';
  return `${Number((rate * 100).toFixed(1))}%`;
}
