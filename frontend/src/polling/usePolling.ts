import { useContext } from 'react';
import { PollingContext, type PollingState } from './context';

export function usePolling(): PollingState {
  const ctx = useContext(PollingContext);
  if (!ctx) throw new Error('usePolling must be used inside <PollingProvider>');
  return ctx;
}

/**
 * The single place live queries get their timer from: the interval chosen in
 * the header, or `false` while paused. Pair with `refetchIntervalInBackground:
 * false` (the default in hooks.ts) so a hidden tab stops polling.
 */
export function useRefetchInterval(): number | false {
  const { intervalMs, paused } = usePolling();
  return paused ? false : intervalMs;
}
