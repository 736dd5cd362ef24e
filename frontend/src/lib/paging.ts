import type { PageLimits } from '../api/types';

export interface PageInfo {
  /** 1-based index of the first row shown, 0 when there are none. */
  from: number;
  /** 1-based index of the last row shown. */
  to: number;
  page: number;
  pages: number;
  prevOffset: number | null;
  nextOffset: number | null;
}

/** Where a limit-offset window sits within `count` rows. */
export function pageInfo(count: number, limit: number, offset: number): PageInfo {
  const safeLimit = Math.max(1, limit);
  const safeOffset = Math.max(0, offset);
  const pages = Math.max(1, Math.ceil(count / safeLimit));
  const page = Math.min(pages, Math.floor(safeOffset / safeLimit) + 1);
  const from = count === 0 || safeOffset >= count ? 0 : safeOffset + 1;
  const to = from === 0 ? 0 : Math.min(count, safeOffset + safeLimit);
  return {
    from,
    to,
    page,
    pages,
    prevOffset: safeOffset > 0 ? Math.max(0, safeOffset - safeLimit) : null,
    nextOffset: safeOffset + safeLimit < count ? safeOffset + safeLimit : null,
  };
}

/** Round page sizes to offer; the API's limits decide which of them apply. */
const PAGE_SIZE_LADDER = [10, 25, 50, 100, 250, 500, 1000];

/**
 * The page sizes a list offers, ascending: the ladder's sizes up to the API's maximum,
 * plus its default, its maximum and the size in use (so the select always shows it).
 */
export function pageSizeChoices(limits: PageLimits, current?: number): number[] {
  const sizes = new Set(PAGE_SIZE_LADDER.filter((n) => n <= limits.max_limit));
  sizes.add(limits.default_limit).add(limits.max_limit);
  if (current !== undefined) sizes.add(current);
  return [...sizes].sort((a, b) => a - b);
}

/**
 * The `limit` URL parameter: undefined when missing or malformed (the API then uses its
 * default), otherwise at least 1 and, once the API's maximum is known, at most that.
 */
export function parsePageSize(raw: string | null, max?: number): number | undefined {
  if (raw === null || raw.trim() === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n)) return undefined;
  return Math.min(max ?? Number.MAX_SAFE_INTEGER, Math.max(1, n));
}
