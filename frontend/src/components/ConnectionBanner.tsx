export type Connection = 'ok' | 'checking' | 'unreachable' | 'degraded';

/** Shown across the top while the API or its database cannot be reached. */
export function ConnectionBanner({
  state,
  baseUrl,
  detail,
  retryingEveryMs,
}: {
  state: Connection;
  baseUrl: string;
  detail?: string | undefined;
  retryingEveryMs: number;
}) {
  if (state === 'ok' || state === 'checking') return null;
  const seconds = Math.max(1, Math.round(retryingEveryMs / 1000));
  return (
    <div className="banner banner--error" role="alert">
      <strong>{state === 'unreachable' ? 'API unreachable.' : 'API is up but its database is not.'}</strong>{' '}
      {state === 'unreachable' ? (
        <>
          Cannot connect to <code>{baseUrl}</code>.
        </>
      ) : (
        detail && <>{detail}.</>
      )}{' '}
      Checking again in {seconds}s, less often the longer it lasts; nothing else refreshes meanwhile. This message
      goes away when it is back. Figures below may be out of date.
    </div>
  );
}
