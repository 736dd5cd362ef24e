import { focusManager } from '@tanstack/react-query';
import { act, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { renderHookWithClient } from '../test/render';
import { sleep } from '../test/sleep';
import { usePolledQuery, usePollOptions } from './usePolledQuery';
import { usePolling } from './usePolling';

/** A query function that records when it ran and returns how many times it has. */
function counter() {
  const at: number[] = [];
  return {
    at,
    get n() {
      return at.length;
    },
    fn: () => {
      at.push(performance.now());
      return Promise.resolve(at.length);
    },
  };
}

function renderPolled(calls: ReturnType<typeof counter>, pollIntervalMs: number) {
  return renderHookWithClient(
    () => ({ query: usePolledQuery({ queryKey: ['polled'], queryFn: calls.fn }), polling: usePolling() }),
    { pollIntervalMs },
  );
}

afterEach(() => {
  focusManager.setFocused(undefined);
});

describe('usePollOptions', () => {
  it("is the header's interval, never in a hidden tab", () => {
    const { result } = renderHookWithClient(() => usePollOptions(), { pollIntervalMs: 5000 });
    expect(result.current).toEqual({ refetchInterval: 5000, refetchIntervalInBackground: false });
  });

  it('follows the interval and the pause chosen in the header', () => {
    const { result } = renderHookWithClient(() => ({ poll: usePollOptions(), polling: usePolling() }), {
      pollIntervalMs: 5000,
    });
    act(() => result.current.polling.setIntervalMs(1000));
    expect(result.current.poll.refetchInterval).toBe(1000);
    act(() => result.current.polling.setPaused(true));
    expect(result.current.poll.refetchInterval).toBe(false);
    act(() => result.current.polling.setPaused(false));
    expect(result.current.poll.refetchInterval).toBe(1000);
  });

  it('has no timer for a query that is not live, paused or not', () => {
    const { result } = renderHookWithClient(() => usePollOptions(false), { pollIntervalMs: 1000 });
    expect(result.current).toEqual({ refetchInterval: false, refetchIntervalInBackground: false });
  });
});

describe('usePolledQuery', () => {
  it('refetches on the interval, never sooner', async () => {
    const calls = counter();
    renderPolled(calls, 100);
    await waitFor(() => expect(calls.n).toBeGreaterThanOrEqual(4), { timeout: 3000 });
    const gaps = calls.at.slice(1).map((t, i) => t - calls.at[i]!);
    // A timer never fires early; allow a millisecond for the clocks' rounding.
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(99);
  });

  it('takes up a new interval chosen in the header', async () => {
    const calls = counter();
    const { result } = renderPolled(calls, 60_000);
    await waitFor(() => expect(result.current.query.data).toBe(1));
    await sleep(150);
    expect(calls.n).toBe(1);
    act(() => result.current.polling.setIntervalMs(40));
    await waitFor(() => expect(calls.n).toBeGreaterThanOrEqual(3), { timeout: 2000 });
  });

  it('stops while paused, still refetches on demand, and resumes', async () => {
    const calls = counter();
    const { result } = renderPolled(calls, 40);
    await waitFor(() => expect(calls.n).toBeGreaterThanOrEqual(2), { timeout: 2000 });
    act(() => result.current.polling.setPaused(true));
    await sleep(60); // let an in-flight refetch land
    const atPause = calls.n;
    await sleep(250);
    expect(calls.n).toBe(atPause);
    await act(() => result.current.query.refetch());
    expect(calls.n).toBe(atPause + 1);
    await sleep(250);
    expect(calls.n).toBe(atPause + 1);
    act(() => result.current.polling.setPaused(false));
    await waitFor(() => expect(calls.n).toBeGreaterThan(atPause + 2), { timeout: 2000 });
  });

  it('does not poll while the tab is hidden, and refetches when it is shown', async () => {
    const calls = counter();
    renderPolled(calls, 40);
    await waitFor(() => expect(calls.n).toBeGreaterThanOrEqual(2), { timeout: 2000 });
    act(() => focusManager.setFocused(false));
    await sleep(60);
    const hiddenAt = calls.n;
    await sleep(250);
    expect(calls.n).toBe(hiddenAt);
    act(() => focusManager.setFocused(true));
    await waitFor(() => expect(calls.n).toBeGreaterThan(hiddenAt), { timeout: 2000 });
  });

  it('passes every other option through', async () => {
    const calls = counter();
    const { result } = renderHookWithClient(
      () => ({
        selected: usePolledQuery({ queryKey: ['selected'], queryFn: calls.fn, select: (n) => `call ${n}` }),
        disabled: usePolledQuery({ queryKey: ['disabled'], queryFn: calls.fn, enabled: false }),
      }),
      { pollIntervalMs: 40 },
    );
    await waitFor(() => expect(result.current.selected.data).toMatch(/^call \d+$/));
    await sleep(150);
    expect(result.current.disabled.fetchStatus).toBe('idle'); // not enabled: no first fetch, no timer
    expect(result.current.disabled.data).toBeUndefined();
  });
});
