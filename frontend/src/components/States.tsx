import type { ReactNode } from 'react';
import { errorMessage } from '../lib/errors';

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div className="state state--loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      {label}
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="state state--empty">{children}</div>;
}


export function ErrorState({
  error,
  title = 'Could not load this data',
  onRetry,
}: {
  error: unknown;
  title?: string;
  onRetry?: () => void;
}) {
  return (
    <div className="state state--error" role="alert">
      <strong>{title}</strong>
      <span>{errorMessage(error)}</span>
      {onRetry && (
        <button type="button" className="button button--small" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** Small note shown above data that is still displayed after a failed refresh. */
export function StaleNote({ error }: { error: unknown }) {
  return (
    <p className="stale-note" role="status">
      Showing the last data received; refreshing failed ({errorMessage(error)}).
    </p>
  );
}
