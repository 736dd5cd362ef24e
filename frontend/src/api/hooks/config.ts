/** The API's settings for the dashboard (`/config/`): job types, limits, worker settings. */
import { useQuery } from '@tanstack/react-query';
import { api } from '../client';
import type { ApiConfig, PageLimits } from '../types';
import { queryKeys } from './keys';

export function useConfig() {
  return useQuery({
    queryKey: queryKeys.config,
    queryFn: () => api.getConfig(),
    staleTime: 5 * 60_000,
  });
}

/** A list's default and maximum page size, from /config/; undefined until it has loaded. */
export function usePageLimits(list: keyof ApiConfig['pagination']): PageLimits | undefined {
  return useConfig().data?.pagination[list];
}
