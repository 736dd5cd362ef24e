import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  plugins: [react()],
  server: { port: 5173 },
  preview: { port: 4173 },
  build: { sourcemap: true },
  test: {
    environment: 'jsdom',
    globals: true,
    setupFiles: ['./src/test/setup.ts'],
    include: ['src/**/*.test.{ts,tsx}'],
    restoreMocks: true,
    // One jsdom per worker for every file, not one per file: building the environment and
    // importing the app again for each of 44 files was two thirds of the run (87 s -> 33 s
    // on this machine). setup.ts resets what a test leaves behind: the DOM, MSW handlers,
    // storage, the URL and the server clock.
    isolate: false,
    // make test runs these beside the backend's PostgreSQL pass on two cores: a test's own
    // waits (asyncUtilTimeout in setup.ts) decide, not a 5 s cap on the whole test.
    testTimeout: 20_000,
    // Tests talk to MSW at the default URL, whatever a developer's .env.local says.
    env: { VITE_API_BASE_URL: 'http://localhost:8000/api', VITE_POLL_INTERVAL_MS: '2000' },
  },
});
