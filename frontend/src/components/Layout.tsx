import { useIsFetching, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { NavLink, Outlet, useLocation } from 'react-router';
import { api } from '../api/client';
import { useConnection } from '../api/hooks';
import { usePolling } from '../polling/usePolling';
import { ConnectionBanner } from './ConnectionBanner';
import { HeaderSearch } from './HeaderSearch';
import { PollControl } from './PollControl';
import { SessionControl, SessionGate } from './SignIn';

const NAV = [
  { to: '/', label: 'Overview', end: true },
  { to: '/jobs', label: 'Jobs', end: false },
  { to: '/workflows', label: 'Workflows', end: false },
  { to: '/job-types', label: 'Job types', end: false },
  { to: '/workers', label: 'Workers', end: false },
  { to: '/queues', label: 'Queues', end: false },
  { to: '/schedules', label: 'Schedules', end: false },
  { to: '/events', label: 'Events', end: false },
  { to: '/create', label: 'Create', end: false },
];

/**
 * "Jobs · Job Queue", "Job 8421aca2 · Job Queue", "Workflow 5c0ffee1 · Job Queue": each
 * page's own title, for tabs and history.
 */
function pageTitle(pathname: string): string {
  const job = /^\/jobs\/([^/]+)/.exec(pathname);
  if (job) return `Job ${decodeURIComponent(job[1]!).slice(0, 8)} · Job Queue`;
  const workflow = /^\/workflows\/([^/]+)/.exec(pathname);
  if (workflow) return `Workflow ${decodeURIComponent(workflow[1]!).slice(0, 8)} · Job Queue`;
  const item = NAV.find((nav) => (nav.end ? pathname === nav.to : pathname.startsWith(nav.to)));
  return item ? `${item.label} · Job Queue` : 'Not found · Job Queue';
}

/**
 * After a navigation (a new path, not a filter change), the page title follows and focus
 * moves to the page's heading, so a keyboard or screen reader user starts on the new page
 * instead of on the link they left.
 */
function useNavigationFocus() {
  const { pathname } = useLocation();
  const first = useRef(true);
  useEffect(() => {
    document.title = pageTitle(pathname);
    if (first.current) {
      first.current = false;
      return;
    }
    const heading = document.querySelector<HTMLElement>('#main h1');
    const target = heading ?? document.getElementById('main');
    if (target) {
      if (!target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
      target.focus({ preventScroll: false });
    }
  }, [pathname]);
}

export function Layout() {
  useNavigationFocus();
  const polling = usePolling();
  const queryClient = useQueryClient();
  const fetching = useIsFetching() > 0;
  const connection = useConnection();
  const down = connection.state === 'unreachable' || connection.state === 'degraded';
  const { setOffline } = polling;
  useEffect(() => {
    setOffline(down);
    // Back: every panel catches up at once instead of at its next tick.
    if (!down) void queryClient.invalidateQueries({ predicate: (query) => query.state.status === 'error' });
  }, [down, setOffline, queryClient]);

  return (
    <div className="app">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <div className="topbar__brand">
          <span className="logo" aria-hidden="true" />
          <span>Job Queue</span>
        </div>
        <nav aria-label="Main" className="topbar__nav">
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <NavLink to={item.to} end={item.end}>
                  {item.label}
                </NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <HeaderSearch />
        <PollControl
          intervalMs={polling.intervalMs}
          paused={polling.paused}
          fetching={fetching}
          offline={down}
          lastGoodAt={connection.lastGoodAt}
          onIntervalChange={polling.setIntervalMs}
          onPausedChange={polling.setPaused}
          onRefresh={() => void queryClient.refetchQueries({ type: 'active' })}
        />
        <SessionControl />
      </header>
      <ConnectionBanner
        state={connection.state}
        baseUrl={api.baseUrl}
        detail={connection.detail}
        retryingEveryMs={connection.retryingEveryMs}
      />
      <main id="main" className="main" tabIndex={-1}>
        <SessionGate>
          <Outlet />
        </SessionGate>
      </main>
    </div>
  );
}
