import { zoneName } from '../lib/time';

/** "14:03:07" in the browser's zone (named beside it, as every clock time shown). */
function formatClock(ms: number): string {
  return new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
}

const POLL_CHOICES_MS = [1000, 2000, 5000, 10_000, 30_000] as const;

function label(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${ms / 1000} s`;
}

/** Visible control over live refresh: interval, pause/resume and refresh now. */
export function PollControl({
  intervalMs,
  paused,
  fetching,
  offline = false,
  lastGoodAt = null,
  onIntervalChange,
  onPausedChange,
  onRefresh,
}: {
  intervalMs: number;
  paused: boolean;
  fetching: boolean;
  /** The API does not answer: nothing but the health check polls. */
  offline?: boolean;
  /** When the API last answered that all is well. */
  lastGoodAt?: number | null;
  onIntervalChange: (ms: number) => void;
  onPausedChange: (paused: boolean) => void;
  onRefresh: () => void;
}) {
  const choices = POLL_CHOICES_MS.includes(intervalMs as (typeof POLL_CHOICES_MS)[number])
    ? [...POLL_CHOICES_MS]
    : [...POLL_CHOICES_MS, intervalMs].sort((a, b) => a - b);
  return (
    <div className="poll" role="group" aria-label="Live refresh">
      <span
        className={`poll__dot ${offline ? 'poll__dot--offline' : paused ? 'poll__dot--paused' : fetching ? 'poll__dot--busy' : ''}`}
        aria-hidden="true"
      />
      {offline && (
        <span className="poll__offline" role="status" data-offline="">
          Offline
          {lastGoodAt !== null && (
            <>
              {' · data from '}
              <time dateTime={new Date(lastGoodAt).toISOString()}>
                {formatClock(lastGoodAt)} {zoneName(new Date(lastGoodAt).toISOString())}
              </time>
            </>
          )}
        </span>
      )}
      <label className="inline-field">
        <span>Refresh every</span>
        <select value={intervalMs} onChange={(e) => onIntervalChange(Number(e.target.value))} disabled={paused}>
          {choices.map((ms) => (
            <option key={ms} value={ms}>
              {label(ms)}
            </option>
          ))}
        </select>
      </label>
      <button
        type="button"
        className="button button--small"
        aria-pressed={paused}
        onClick={() => onPausedChange(!paused)}
      >
        {paused ? '▶ Resume' : '❚❚ Pause'}
      </button>
      <button type="button" className="button button--small button--ghost" onClick={onRefresh} aria-label="Refresh now">
        ↻
      </button>
    </div>
  );
}
