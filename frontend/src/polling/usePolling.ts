import { useContext } from 'react';
import { PollingContext, type PollingState } from './context';

/** The header's polling control. Queries get their timer from `usePollOptions` (./usePolledQuery.ts). */
export function usePolling(): PollingState {
  const ctx = useContext(PollingContext);
  if (!ctx) throw new Error('usePolling must be used inside <PollingProvider>');
  return ctx;
}
