import '@testing-library/jest-dom/vitest';
import { cleanup, configure } from '@testing-library/react';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { forgetServerClock } from '../api/serverClock';
import { server } from './server';

// jsdom has <dialog> and its `open` attribute but not the modal methods; these do what the
// tests can observe (open, closed, the close event). Focus trapping is the browser's,
// covered by the Playwright run.
if (typeof HTMLDialogElement.prototype.showModal !== 'function') {
  HTMLDialogElement.prototype.showModal = function showModal(this: HTMLDialogElement) {
    this.open = true;
  };
  HTMLDialogElement.prototype.close = function close(this: HTMLDialogElement) {
    if (!this.open) return;
    this.open = false;
    this.dispatchEvent(new Event('close'));
  };
}

// findBy…/waitFor wait up to 3 s, not 1 s: on a loaded shared machine a first render of the
// whole app (router, session, page) can take longer than a second.
configure({ asyncUtilTimeout: 3000 });

beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
afterEach(() => {
  cleanup();
  server.resetHandlers();
  window.localStorage.clear();
  window.sessionStorage.clear();
  window.history.replaceState(null, '', '/');
  forgetServerClock();
});
afterAll(() => server.close());
