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

export const PAGE_SIZES = [10, 25, 50, 100] as const;
