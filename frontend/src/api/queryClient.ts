import { QueryCache, QueryClient } from '@tanstack/react-query';
import { ApiError } from './client';
import { queryKeys } from './hooks/keys';

/** Retry once on transport errors and 5xx; never on 4xx, which will not change by retrying. */
export function shouldRetry(failureCount: number, error: unknown): boolean {
  if (error instanceof ApiError && error.kind === 'http' && error.status < 500) return false;
  return failureCount < 1;
}

/**
 * A 401 from any query means the session ended (expired, signed out elsewhere): ask the
 * session API again, so the sign-in form replaces the pages.
 */
export function recheckSessionOn401(queryClient: QueryClient) {
  return (error: unknown, query: { queryKey: readonly unknown[] }) => {
    if (error instanceof ApiError && error.status === 401 && query.queryKey[0] !== queryKeys.session[0]) {
      void queryClient.invalidateQueries({ queryKey: queryKeys.session });
    }
  };
}

export function createQueryClient(): QueryClient {
  const queryCache = new QueryCache({ onError: (error, query) => recheckSessionOn401(client)(error, query) });
  const client: QueryClient = new QueryClient({
    queryCache,
    defaultOptions: {
      queries: {
        retry: shouldRetry,
        retryDelay: 500,
        refetchOnWindowFocus: true,
        refetchIntervalInBackground: false,
      },
      mutations: { retry: false },
    },
  });
  return client;
}
