import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { createBrowserRouter, RouterProvider } from 'react-router';
import { PollingProvider } from './polling/PollingContext';
import { routes } from './routes';

export function App({ queryClient, pollIntervalMs }: { queryClient: QueryClient; pollIntervalMs: number }) {
  const [router] = useState(() => createBrowserRouter(routes));
  return (
    <QueryClientProvider client={queryClient}>
      <PollingProvider defaultIntervalMs={pollIntervalMs}>
        <RouterProvider router={router} />
      </PollingProvider>
    </QueryClientProvider>
  );
}
