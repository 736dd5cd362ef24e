/** Whether the API and its database answer: the connection banner's data. */
import { useQuery } from '@tanstack/react-query';
import { usePollOptions } from '../../polling/usePolledQuery';
import { api, ApiError } from '../client';
import type { Health } from '../types';
import { queryKeys } from './keys';

/** How often health is re-checked while the API is down, even with polling paused. */
export const OFFLINE_RECHECK_MS = 3000;

/** The re-check interval while the API is down: the polling interval, at most OFFLINE_RECHECK_MS. */
export function offlineRecheckMs(interval: number | false): number {
  return interval === false ? OFFLINE_RECHECK_MS : Math.min(interval, OFFLINE_RECHECK_MS);
}

/** Polled like every live view; while the API is down, also when paused, so the banner clears by itself. */
export function useHealth() {
  const poll = usePollOptions();
  return useQuery({
    queryKey: queryKeys.health,
    queryFn: () => api.getHealth(),
    ...poll,
    refetchInterval: (query) => {
      const down = query.state.status === 'error' || query.state.data?.ok === false;
      return down ? offlineRecheckMs(poll.refetchInterval) : poll.refetchInterval;
    },
    retry: false,
  });
}

export type ConnectionState = 'checking' | 'ok' | 'unreachable' | 'degraded';

/** Reduce the health check to what the banner needs to say. */
export function connectionFromHealth(data: Health | undefined, error: unknown): {
  state: ConnectionState;
  detail?: string | undefined;
} {
  if (error) {
    // A 5xx from /health/ with its own JSON body means the API runs but the database does not.
    if (error instanceof ApiError && error.kind === 'http') {
      const body = error.body as Partial<Health> | null;
      if (body && body.ok === false) return { state: 'degraded', detail: body.detail ?? error.message };
      return { state: 'degraded', detail: error.message };
    }
    return { state: 'unreachable' };
  }
  if (!data) return { state: 'checking' };
  return data.ok ? { state: 'ok' } : { state: 'degraded', detail: data.detail };
}

/** The banner's state, and how often it checks again while the API is down. */
export function useConnection() {
  const health = useHealth();
  const { refetchInterval } = usePollOptions();
  return { ...connectionFromHealth(health.data, health.error), retryingEveryMs: offlineRecheckMs(refetchInterval) };
}
