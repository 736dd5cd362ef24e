import { pageInfo } from '../lib/paging';

export function Pagination({
  count,
  limit,
  offset,
  onOffsetChange,
  onLimitChange,
  pageSizes,
  label = 'Pagination',
}: {
  count: number;
  limit: number;
  offset: number;
  onOffsetChange: (offset: number) => void;
  onLimitChange?: (limit: number) => void;
  /** The sizes the "Rows" select offers (with `onLimitChange`). */
  pageSizes?: readonly number[];
  label?: string;
}) {
  const info = pageInfo(count, limit, offset);
  return (
    <nav className="pager" aria-label={label}>
      <span className="pager__summary" aria-live="polite">
        {info.from === 0 ? `0 of ${count}` : `${info.from}–${info.to} of ${count}`}
        <span className="muted"> · page {info.page} of {info.pages}</span>
      </span>
      <div className="pager__controls">
        {onLimitChange && pageSizes && (
          <label className="inline-field">
            <span>Rows</span>
            <select value={limit} onChange={(e) => onLimitChange(Number(e.target.value))}>
              {pageSizes.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
        )}
        <button
          type="button"
          className="button button--small"
          disabled={info.prevOffset === null}
          onClick={() => info.prevOffset !== null && onOffsetChange(info.prevOffset)}
        >
          ← Previous
        </button>
        <button
          type="button"
          className="button button--small"
          disabled={info.nextOffset === null}
          onClick={() => info.nextOffset !== null && onOffsetChange(info.nextOffset)}
        >
          Next →
        </button>
      </div>
    </nav>
  );
}

/** Newer/older buttons for the cursor-paginated event feed. */
export function CursorPager({
  hasNewer,
  hasOlder,
  onNewer,
  onOlder,
  onLatest,
  atLatest,
}: {
  hasNewer: boolean;
  hasOlder: boolean;
  onNewer: () => void;
  onOlder: () => void;
  onLatest: () => void;
  atLatest: boolean;
}) {
  return (
    <nav className="pager" aria-label="Event pages">
      <span className="pager__summary muted">{atLatest ? 'Newest events, updating live' : 'Older page'}</span>
      <div className="pager__controls">
        <button type="button" className="button button--small" disabled={atLatest} onClick={onLatest}>
          ⇤ Latest
        </button>
        <button type="button" className="button button--small" disabled={!hasNewer} onClick={onNewer}>
          ← Newer
        </button>
        <button type="button" className="button button--small" disabled={!hasOlder} onClick={onOlder}>
          Older →
        </button>
      </div>
    </nav>
  );
}
