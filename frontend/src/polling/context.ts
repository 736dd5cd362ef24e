import { createContext } from 'react';

export interface PollingState {
  /** Milliseconds between refetches of live data. */
  intervalMs: number;
  /** When true, nothing refetches on a timer (manual refresh still works). */
  paused: boolean;
  setIntervalMs: (ms: number) => void;
  setPaused: (paused: boolean) => void;
}

export const PollingContext = createContext<PollingState | null>(null);
