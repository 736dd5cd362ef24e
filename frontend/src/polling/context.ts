import { createContext } from 'react';

export interface PollingState {
  /** Milliseconds between refetches of live data. */
  intervalMs: number;
  /** When true, nothing refetches on a timer (manual refresh still works). */
  paused: boolean;
  /**
   * True while the API (or its database) cannot be reached: then only the health check
   * polls, backing off, and every other query waits for it to come back.
   */
  offline: boolean;
  setIntervalMs: (ms: number) => void;
  setPaused: (paused: boolean) => void;
  setOffline: (offline: boolean) => void;
}

export const PollingContext = createContext<PollingState | null>(null);
