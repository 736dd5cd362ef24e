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
    // Tests talk to MSW at the default URL, whatever a developer's .env.local says.
    env: { VITE_API_BASE_URL: 'http://localhost:8000/api', VITE_POLL_INTERVAL_MS: '2000' },
  },
});
