/** Build-time settings, read once from Vite's environment. */

export const DEFAULT_API_BASE_URL = 'http://localhost:8000/api';
export const DEFAULT_POLL_INTERVAL_MS = 2000;

/** Strip trailing slashes so paths can always be joined with a leading one. */
export function normaliseBaseUrl(raw: string | undefined): string {
  const value = (raw ?? '').trim();
  return (value === '' ? DEFAULT_API_BASE_URL : value).replace(/\/+$/, '');
}

/** A positive integer number of milliseconds, or the default when unset or invalid. */
export function parsePollInterval(raw: string | undefined): number {
  const n = Number(raw);
  return Number.isFinite(n) && n >= 250 ? Math.round(n) : DEFAULT_POLL_INTERVAL_MS;
}

export interface AppSettings {
  apiBaseUrl: string;
  pollIntervalMs: number;
}

// No credentials here: whatever Vite inlines is public. With DEBUG=false the dashboard
// signs in with a Django session (the sign-in form); API tokens are for scripts.
export const settings: AppSettings = {
  apiBaseUrl: normaliseBaseUrl(import.meta.env.VITE_API_BASE_URL),
  pollIntervalMs: parsePollInterval(import.meta.env.VITE_POLL_INTERVAL_MS),
};
