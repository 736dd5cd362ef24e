import { useSyncExternalStore } from 'react';

import { serverNow } from '../api/serverClock';

/**
 * One shared one-second ticker for every relative time and countdown on the
 * page, instead of a timer per table cell.
 */
const listeners = new Set<() => void>();
let current = serverNow();
let timer: ReturnType<typeof setInterval> | null = null;

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  if (timer === null) {
    current = serverNow();
    timer = setInterval(() => {
      current = serverNow();
      listeners.forEach((l) => l());
    }, 1000);
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  };
}

function getSnapshot(): number {
  return current;
}

/** The server's current time in ms, updated once a second while any component uses it. */
export function useNow(): number {
  return useSyncExternalStore(subscribe, getSnapshot, getSnapshot);
}
