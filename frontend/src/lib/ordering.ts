/** The Jobs list's sort: the API's `ordering` (a field, `-` first for descending), kept in the URL. */
import { JOB_ORDERINGS, type JobOrdering, type JobOrderingField } from '../api/types';

export interface JobSort {
  field: JobOrderingField;
  descending: boolean;
}

/** `ordering` from the URL, or undefined (the API's default: newest first) when absent or unknown. */
export function parseOrdering(raw: string | null): JobSort | undefined {
  if (!raw) return undefined;
  const descending = raw.startsWith('-');
  const field = (descending ? raw.slice(1) : raw) as JobOrderingField;
  return JOB_ORDERINGS.includes(field) ? { field, descending } : undefined;
}

export function formatOrdering(sort: JobSort): JobOrdering {
  return sort.descending ? `-${sort.field}` : sort.field;
}

/**
 * The sort after a click on `field`'s header: times and priority start descending (newest,
 * highest first), the type ascending; a second click flips it.
 */
export function nextOrdering(current: JobSort | undefined, field: JobOrderingField): JobSort {
  if (current?.field === field) return { field, descending: !current.descending };
  return { field, descending: field !== 'type' };
}
