import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../api/client';
import { recheckSessionOn401 } from '../api/queryClient';
import type { Session } from '../api/types';
import { API, jobsPage } from '../test/fixtures';
import { renderApp, testQueryClient } from '../test/render';
import { server } from '../test/server';

const signedOut: Session = {
  login_required: true,
  authenticated: false,
  username: null,
  permissions: { view: false, add: false, change: false },
};
const signedIn: Session = {
  login_required: true,
  authenticated: true,
  username: 'ops',
  permissions: { view: true, add: true, change: true },
};

/** A production API: the session endpoint and a protected jobs list. */
function serveProduction() {
  const state = { session: signedOut, logins: [] as { body: unknown; csrf: string | null }[], logouts: 0 };
  server.use(
    http.get(`${API}/auth/session/`, () => HttpResponse.json(state.session)),
    http.post(`${API}/auth/login/`, async ({ request }) => {
      const body = (await request.json()) as { username: string; password: string };
      state.logins.push({ body, csrf: request.headers.get('x-csrftoken') });
      if (body.password !== 'right') {
        return HttpResponse.json({ non_field_errors: ['Wrong username or password.'] }, { status: 400 });
      }
      state.session = signedIn;
      return HttpResponse.json(signedIn);
    }),
    http.post(`${API}/auth/logout/`, ({ request }) => {
      state.logouts += request.headers.get('x-csrftoken') === 'c5rf' ? 1 : 0;
      state.session = signedOut;
      return new HttpResponse(null, { status: 204 });
    }),
    http.get(`${API}/jobs/`, () =>
      state.session.authenticated
        ? HttpResponse.json(jobsPage([]))
        : HttpResponse.json({ detail: 'Authentication credentials were not provided.' }, { status: 401 }),
    ),
  );
  return state;
}

describe('signing in with a session', () => {
  afterEach(() => {
    document.cookie = 'csrftoken=; expires=Thu, 01 Jan 1970 00:00:00 GMT';
  });

  it('shows the form instead of the pages until signed in, sending the CSRF token', async () => {
    document.cookie = 'csrftoken=c5rf';
    const state = serveProduction();
    renderApp('/jobs');
    expect(await screen.findByRole('heading', { name: 'Sign in' })).toBeInTheDocument();
    expect(screen.queryByRole('heading', { name: 'Jobs' })).not.toBeInTheDocument();

    await userEvent.type(screen.getByLabelText('Username'), 'ops');
    await userEvent.type(screen.getByLabelText('Password'), 'wrong');
    await userEvent.click(screen.getByRole('button', { name: 'Sign in' }));
    expect(await screen.findByRole('alert')).toHaveTextContent('Wrong username or password.');

    await userEvent.clear(screen.getByLabelText('Password'));
    await userEvent.type(screen.getByLabelText('Password'), 'right');
    await userEvent.click(screen.getByRole('button', { name: 'Sign in' }));
    expect(await screen.findByRole('heading', { name: 'Jobs' })).toBeInTheDocument();
    expect(screen.getByText('ops')).toBeInTheDocument();
    expect(state.logins).toEqual([
      { body: { username: 'ops', password: 'wrong' }, csrf: 'c5rf' },
      { body: { username: 'ops', password: 'right' }, csrf: 'c5rf' },
    ]);
  });

  it('signs out back to the form', async () => {
    document.cookie = 'csrftoken=c5rf';
    const state = serveProduction();
    state.session = signedIn;
    renderApp('/jobs');
    await userEvent.click(await screen.findByRole('button', { name: 'Sign out' }));
    expect(await screen.findByRole('heading', { name: 'Sign in' })).toBeInTheDocument();
    expect(state.logouts).toBe(1);
  });

  it('needs no sign-in on the open local demo', async () => {
    server.use(http.get(`${API}/jobs/`, () => HttpResponse.json(jobsPage([]))));
    renderApp('/jobs');
    expect(await screen.findByRole('heading', { name: 'Jobs' })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Sign out' })).not.toBeInTheDocument();
  });

  it('asks the session API again when any other query answers 401', () => {
    const queryClient = testQueryClient();
    const invalidate = vi.spyOn(queryClient, 'invalidateQueries').mockResolvedValue();
    const onError = recheckSessionOn401(queryClient);
    onError(new ApiError('http', 403, 'Forbidden'), { queryKey: ['jobs', 'list'] });
    onError(new ApiError('http', 401, 'Unauthorized'), { queryKey: ['session'] });
    expect(invalidate).not.toHaveBeenCalled();
    onError(new ApiError('http', 401, 'Unauthorized'), { queryKey: ['jobs', 'list'] });
    expect(invalidate).toHaveBeenCalledWith({ queryKey: ['session'] });
  });
});
