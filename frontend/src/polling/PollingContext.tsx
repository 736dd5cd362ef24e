import { useCallback, useMemo, useState, type ReactNode } from 'react';
import { PollingContext, type PollingState } from './context';

const STORAGE_KEY = 'job-queue.polling';

function readStored(defaultMs: number): { intervalMs: number; paused: boolean } {
  try {
    const raw = window.localStorage.getItem(STORAGE_KEY);
    if (raw) {
      const parsed = JSON.parse(raw) as { intervalMs?: unknown; paused?: unknown };
      const ms = typeof parsed.intervalMs === 'number' && parsed.intervalMs >= 250 ? parsed.intervalMs : defaultMs;
      return { intervalMs: ms, paused: parsed.paused === true };
    }
  } catch {
    // storage unavailable or corrupt: fall back to defaults
  }
  return { intervalMs: defaultMs, paused: false };
}

export function PollingProvider({
  defaultIntervalMs,
  persist = true,
  children,
}: {
  defaultIntervalMs: number;
  persist?: boolean;
  children: ReactNode;
}) {
  const [state, setState] = useState(() =>
    persist ? readStored(defaultIntervalMs) : { intervalMs: defaultIntervalMs, paused: false },
  );

  const update = useCallback(
    (next: Partial<{ intervalMs: number; paused: boolean }>) => {
      setState((prev) => {
        const merged = { ...prev, ...next };
        if (persist) {
          try {
            window.localStorage.setItem(STORAGE_KEY, JSON.stringify(merged));
          } catch {
            // ignore
          }
        }
        return merged;
      });
    },
    [persist],
  );

  // Not stored: whether the API answers is learned afresh by each page load.
  const [offline, setOffline] = useState(false);

  const value = useMemo<PollingState>(
    () => ({
      intervalMs: state.intervalMs,
      paused: state.paused,
      offline,
      setIntervalMs: (ms) => update({ intervalMs: ms }),
      setPaused: (paused) => update({ paused }),
      setOffline,
    }),
    [state, update, offline],
  );

  return <PollingContext.Provider value={value}>{children}</PollingContext.Provider>;
}
