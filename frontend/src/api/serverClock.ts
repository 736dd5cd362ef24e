/**
 * The API server's clock as seen from the browser. Whether a job is due, and every
 * relative time, compare the server's timestamps with "now": a browser clock minutes off
 * would offer Run now for a job already due, or count ages wrong. Each response's `Date`
 * header (whole seconds) gives the server's time; offsets within its resolution are noise.
 */
const RESOLUTION_MS = 2000;
let offsetMs = 0;

/** Records the server's time from a response sent at `sentAt` and received at `receivedAt`. */
export function noteServerDate(dateHeader: string | null, sentAt: number, receivedAt: number): void {
  if (!dateHeader) return;
  const serverSecond = Date.parse(dateHeader);
  if (Number.isNaN(serverSecond)) return;
  // The header truncates to the second: the server's clock was within [D, D + 1 s).
  const estimate = serverSecond + 500 - (sentAt + receivedAt) / 2;
  offsetMs = Math.abs(estimate) > RESOLUTION_MS ? estimate : 0;
}

/** Milliseconds to add to the browser's clock to read the server's. */
export function serverOffsetMs(): number {
  return offsetMs;
}

/** The server's current time, in ms since the epoch. */
export function serverNow(): number {
  return Date.now() + offsetMs;
}

/** Forgets what responses said (tests start each case with the browser's clock). */
export function forgetServerClock(): void {
  offsetMs = 0;
}
