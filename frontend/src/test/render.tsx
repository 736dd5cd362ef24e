import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { render, renderHook } from '@testing-library/react';
import type { ReactNode } from 'react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { routes } from '../routes';
import { PollingProvider } from '../polling/PollingContext';

export function testQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: { retry: false, refetchIntervalInBackground: false, gcTime: Infinity },
      mutations: { retry: false },
    },
  });
}

/** Render the whole app (layout, routes, providers) at `path`. */
export function renderApp(path: string, { pollIntervalMs = 60_000 }: { pollIntervalMs?: number } = {}) {
  const queryClient = testQueryClient();
  const router = createMemoryRouter(routes, { initialEntries: [path] });
  const utils = render(
    <QueryClientProvider client={queryClient}>
      <PollingProvider defaultIntervalMs={pollIntervalMs} persist={false}>
        <RouterProvider router={router} />
      </PollingProvider>
    </QueryClientProvider>,
  );
  return { ...utils, router, queryClient };
}

export function wrapperFor(queryClient: QueryClient, pollIntervalMs = 60_000) {
  return function Wrapper({ children }: { children: ReactNode }) {
    return (
      <QueryClientProvider client={queryClient}>
        <PollingProvider defaultIntervalMs={pollIntervalMs} persist={false}>
          {children}
        </PollingProvider>
      </QueryClientProvider>
    );
  };
}

export function renderHookWithClient<T>(hook: () => T, { pollIntervalMs = 60_000 }: { pollIntervalMs?: number } = {}) {
  const queryClient = testQueryClient();
  return { ...renderHook(hook, { wrapper: wrapperFor(queryClient, pollIntervalMs) }), queryClient };
}
