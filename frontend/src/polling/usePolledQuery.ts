/**
 * The one polling helper: how a query follows the header's polling control. Every live
 * hook in api/hooks gets its timer from here, so the interval, the pause button and a
 * hidden tab apply to all of them alike.
 */
import {
  useQuery,
  type DefaultError,
  type QueryKey,
  type UseQueryOptions,
  type UseQueryResult,
} from '@tanstack/react-query';
import { usePolling } from './usePolling';

/** The timer options of a live query; spread them into any TanStack query's options. */
export interface PollOptions {
  /** The interval chosen in the header, or `false` while paused (or not live). */
  refetchInterval: number | false;
  /** A hidden tab does not poll; it refetches when it is shown again (focus). */
  refetchIntervalInBackground: false;
}

/**
 * Refetch every interval chosen in the header; nothing on a timer while polling is
 * paused, the API is unreachable or the tab is hidden (manual refresh, focus and invalidation still work).
 * `live: false` stops this query's timer alone, for data that can no longer change.
 * For `useQueries` and `useInfiniteQuery`; `usePolledQuery` is `useQuery` with these.
 */
export function usePollOptions(live = true): PollOptions {
  const { intervalMs, paused, offline } = usePolling();
  // While the API is unreachable only the health check polls (useHealth): a tab with ten
  // panels would otherwise send ten failing requests every interval.
  return { refetchInterval: live && !paused && !offline ? intervalMs : false, refetchIntervalInBackground: false };
}

/** `useQuery`, polled with `usePollOptions()`; every other option is passed as given. */
export function usePolledQuery<
  TQueryFnData = unknown,
  TError = DefaultError,
  TData = TQueryFnData,
  TQueryKey extends QueryKey = QueryKey,
>(
  options: Omit<UseQueryOptions<TQueryFnData, TError, TData, TQueryKey>, keyof PollOptions>,
): UseQueryResult<TData, TError> {
  const poll = usePollOptions();
  return useQuery({ ...options, ...poll });
}
