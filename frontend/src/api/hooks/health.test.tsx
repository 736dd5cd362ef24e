import { act, waitFor } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { usePolling } from '../../polling/usePolling';
import { API } from '../../test/fixtures';
import { renderHookWithClient } from '../../test/render';
import { server } from '../../test/server';
import { ApiError } from '../client';
import { OFFLINE_RECHECK_MS, connectionFromHealth, offlineRecheckMs, useConnection } from './health';

describe('connection state', () => {
  it('maps health results to banner states', () => {
    expect(connectionFromHealth(undefined, null)).toEqual({ state: 'checking' });
    expect(connectionFromHealth({ ok: true, database: 'ok' }, null)).toEqual({ state: 'ok' });
    expect(connectionFromHealth({ ok: false, database: 'error', detail: 'db down' }, null)).toEqual({
      state: 'degraded',
      detail: 'db down',
    });
    expect(connectionFromHealth(undefined, new ApiError('network', 0, 'x'))).toEqual({ state: 'unreachable' });
    const http503 = new ApiError('http', 503, 'x', { ok: false, database: 'error', detail: 'conn refused' });
    expect(connectionFromHealth(undefined, http503)).toEqual({ state: 'degraded', detail: 'conn refused' });
  });

  it('reports unreachable and recovers on its own when the API returns', async () => {
    server.use(http.get(`${API}/health/`, () => HttpResponse.error()));
    const { result } = renderHookWithClient(() => useConnection(), { pollIntervalMs: 40 });
    await waitFor(() => expect(result.current.state).toBe('unreachable'));
    server.use(http.get(`${API}/health/`, () => HttpResponse.json({ ok: true, database: 'ok' })));
    await waitFor(() => expect(result.current.state).toBe('ok'), { timeout: 2000 });
  });

  it('backs off while the API is down: 1 s, 2 s, 4 s… up to 30 s', () => {
    expect(OFFLINE_RECHECK_MS).toBe(1000);
    expect([1, 2, 3, 4, 5, 6, 7, 50].map(offlineRecheckMs)).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it('tells the banner how long until it checks again, and when data last came back', async () => {
    server.use(http.get(`${API}/health/`, () => HttpResponse.json({ ok: true, database: 'ok' })));
    const { result } = renderHookWithClient(() => ({ connection: useConnection(), polling: usePolling() }), {
      pollIntervalMs: 1000,
    });
    await waitFor(() => expect(result.current.connection.state).toBe('ok'));
    const lastGood = result.current.connection.lastGoodAt;
    expect(lastGood).not.toBeNull();
    server.use(http.get(`${API}/health/`, () => HttpResponse.error()));
    await waitFor(() => expect(result.current.connection.state).toBe('unreachable'), { timeout: 3000 });
    expect(result.current.connection.retryingEveryMs).toBe(1000);
    expect(result.current.connection.lastGoodAt).toBe(lastGood);
    act(() => result.current.polling.setPaused(true));
    expect(result.current.connection.state).toBe('unreachable');
  });
});
