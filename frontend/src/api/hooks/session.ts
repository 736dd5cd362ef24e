/** Who is signed in, and signing in and out. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, type ApiError } from '../client';
import type { LoginInput, Session } from '../types';
import { queryKeys } from './keys';

/** Who is signed in (and whether the API needs anyone to be). */
export function useSession() {
  return useQuery({
    queryKey: queryKeys.session,
    queryFn: () => api.getSession(),
    staleTime: 60_000,
    retry: false,
  });
}

/**
 * Whether the signed-in user may change jobs, queues and schedules (`change_job`): the
 * pages hide their write buttons otherwise. False while the session is unknown.
 */
export function useCanChange(): boolean {
  return useSession().data?.permissions.change === true;
}

const notSession = (query: { queryKey: readonly unknown[] }) => query.queryKey[0] !== queryKeys.session[0];

/** Sign in with a session; every query is reloaded as the new user. */
export function useLogin() {
  const queryClient = useQueryClient();
  return useMutation<Session, ApiError, LoginInput>({
    mutationFn: (credentials) => api.login(credentials),
    onSuccess: (session) => {
      queryClient.setQueryData(queryKeys.session, session);
      void queryClient.invalidateQueries({ predicate: notSession });
    },
  });
}

/** End the session; the previous user's data leaves the cache. */
export function useLogout() {
  const queryClient = useQueryClient();
  return useMutation<void, ApiError, void>({
    mutationFn: () => api.logout(),
    onSuccess: () => {
      queryClient.removeQueries({ predicate: notSession });
      void queryClient.invalidateQueries({ queryKey: queryKeys.session });
    },
  });
}
