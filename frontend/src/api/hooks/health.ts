/** Whether the API and its database answer: the connection banner's data. */
import { useQuery } from '@tanstack/react-query';
import { useRefetchInterval } from '../../polling/usePolling';
import { api, ApiError } from '../client';
import type { Health } from '../types';
import { queryKeys } from './keys';

/** How often health is re-checked while the API is down, even with polling paused. */
export const OFFLINE_RECHECK_MS = 3000;

export function useHealth() {
  const interval = useRefetchInterval();
  return useQuery({
    queryKey: queryKeys.health,
    queryFn: ({ signal }) => api.getHealth(signal),
    refetchInterval: (query) => {
      const down = query.state.status === 'error' || query.state.data?.ok === false;
      if (down) return interval === false ? OFFLINE_RECHECK_MS : Math.min(interval, OFFLINE_RECHECK_MS);
      return interval;
    },
    refetchIntervalInBackground: false,
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

export function useConnection() {
  const health = useHealth();
  return connectionFromHealth(health.data, health.error);
}
