import { useState, type FormEvent, type ReactNode } from 'react';
import { useLogin, useLogout, useSession } from '../api/hooks';
import { FormField } from './FormField';
import { Loading } from './States';

/**
 * The pages, or the sign-in form while the API wants a session and has none. The open
 * local demo (DEBUG=true) needs no sign-in; an unreachable API shows the pages, whose
 * connection banner explains.
 */
export function SessionGate({ children }: { children: ReactNode }) {
  const session = useSession();
  if (session.isPending) return <Loading label="Checking sign-in…" />;
  if (session.data?.login_required && !session.data.authenticated) return <SignInForm />;
  return <>{children}</>;
}

/** Username and password, posted to the session API (CSRF token included by the client). */
export function SignInForm() {
  const login = useLogin();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');

  function onSubmit(event: FormEvent) {
    event.preventDefault();
    login.mutate({ username, password });
  }

  return (
    <div className="page">
      <h1 id="sign-in-heading">Sign in</h1>
      <p className="muted">Your Job Queue account, the same as the admin&apos;s.</p>
      <form className="form sign-in" onSubmit={onSubmit} aria-labelledby="sign-in-heading">
        {login.error && (
          <div className="form-error" role="alert">
            {login.error.message}
          </div>
        )}
        <FormField id="sign-in-username" label="Username">
          {(props) => (
            <input
              {...props}
              autoComplete="username"
              required
              value={username}
              onChange={(e) => setUsername(e.target.value)}
            />
          )}
        </FormField>
        <FormField id="sign-in-password" label="Password">
          {(props) => (
            <input
              {...props}
              type="password"
              autoComplete="current-password"
              required
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
          )}
        </FormField>
        <button type="submit" className="button" disabled={login.isPending}>
          {login.isPending ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </div>
  );
}

/** The signed-in user and a sign-out button, for the top bar; nothing on the open demo. */
export function SessionControl() {
  const session = useSession();
  const logout = useLogout();
  if (!session.data?.authenticated) return null;
  return (
    <div className="session-control">
      <span className="muted">{session.data.username}</span>
      <button
        type="button"
        className="button button--small"
        disabled={logout.isPending}
        onClick={() => logout.mutate()}
      >
        Sign out
      </button>
    </div>
  );
}
