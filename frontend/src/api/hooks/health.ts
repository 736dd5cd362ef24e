/** Whether the API and its database answer: the connection banner's data. */
import { useQuery } from '@tanstack/react-query';
import { usePollOptions } from '../../polling/usePolledQuery';
import { usePolling } from '../../polling/usePolling';
import { api, ApiError } from '../client';
import type { Health } from '../types';
import { queryKeys } from './keys';

/** The first re-check after the API stops answering; each next one waits twice as long… */
export const OFFLINE_RECHECK_MS = 1000;
/** …up to this. */
export const OFFLINE_RECHECK_MAX_MS = 30_000;

/** The wait before re-checking health after `failures` checks in a row failed (at least 1). */
export function offlineRecheckMs(failures: number): number {
  return Math.min(OFFLINE_RECHECK_MS * 2 ** Math.max(failures - 1, 0), OFFLINE_RECHECK_MAX_MS);
}

/** Failed health checks in a row: the back-off's step (one health query per page). */
let failuresInARow = 0;
/** When the API last answered that all is well (ms since the epoch), or null. */
let lastOkAt: number | null = null;

/**
 * Polled like every live view while the API answers; while it does not (or its database
 * does not), the only query that polls, backing off from 1 s to 30 s, also when polling is
 * paused, so the banner clears by itself.
 */
export function useHealth() {
  const poll = usePollOptions();
  const { intervalMs, paused } = usePolling();
  return useQuery({
    queryKey: queryKeys.health,
    queryFn: async () => {
      try {
        const health = await api.getHealth();
        failuresInARow = health.ok ? 0 : failuresInARow + 1;
        if (health.ok) lastOkAt = Date.now();
        return health;
      } catch (error) {
        failuresInARow += 1;
        throw error;
      }
    },
    ...poll,
    refetchInterval: (query) => {
      const down = query.state.status === 'error' || query.state.data?.ok === false;
      if (down) return offlineRecheckMs(failuresInARow);
      return paused ? false : intervalMs;
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

/**
 * The banner's state, when the next check is due while the API is down, and when data
 * last came back (the health check's last answer: every panel's data is at most that old).
 */
export function useConnection() {
  const health = useHealth();
  return {
    ...connectionFromHealth(health.data, health.error),
    retryingEveryMs: offlineRecheckMs(Math.max(failuresInARow, 1)),
    lastGoodAt: lastOkAt,
  };
}
