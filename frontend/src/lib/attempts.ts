/** The job page's reading of its attempts (`GET /api/jobs/{id}/attempts/`). */
import type { AttemptOutcome, JobAttempt, TimeoutSource } from '../api/types';
import type { Tone } from './tones';

export interface AttemptRound {
  round: number;
  attempts: JobAttempt[];
}

/** Attempts by manual-retry round, oldest round first, each in attempt order. */
export function groupByRound(attempts: readonly JobAttempt[]): AttemptRound[] {
  const rounds = new Map<number, JobAttempt[]>();
  for (const attempt of [...attempts].sort((a, b) => a.number - b.number)) {
    const list = rounds.get(attempt.round) ?? [];
    list.push(attempt);
    rounds.set(attempt.round, list);
  }
  return [...rounds.entries()].sort(([a], [b]) => a - b).map(([round, list]) => ({ round, attempts: list }));
}

const OUTCOME_LABELS: Record<AttemptOutcome, string> = {
  running: 'running',
  succeeded: 'succeeded',
  retried: 'failed, retried',
  failed: 'failed',
  timed_out: 'timed out',
  cancelled: 'cancelled',
  lease_expired: 'lease expired',
};

export function outcomeLabel(outcome: AttemptOutcome): string {
  return OUTCOME_LABELS[outcome];
}

/** The badge tone of an outcome. */
export const OUTCOME_TONE: Record<AttemptOutcome, Tone> = {
  running: 'running',
  succeeded: 'success',
  retried: 'warning',
  failed: 'danger',
  timed_out: 'danger',
  cancelled: 'muted',
  lease_expired: 'warning',
};

/** "840 ms", "12.4 s", "3m 05s"; "—" when unknown. */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const total = Math.round(ms / 1000);
  return `${Math.floor(total / 60)}m ${String(total % 60).padStart(2, '0')}s`;
}

const SOURCE_LABELS: Record<TimeoutSource, string> = {
  job: 'set on the job',
  type: 'the job type’s default',
  worker: 'the worker’s default',
};

/** "10 s (the job type’s default)", "no limit (the worker’s default)", or null when the API does not say. */
export function describeTimeout(seconds: number | null | undefined, source: TimeoutSource | null | undefined): string | null {
  if (seconds === undefined && source === undefined) return null;
  if (!source) return 'no limit (none set on the job, its type or the worker)';
  const value = seconds === null || seconds === undefined || seconds <= 0 ? 'no limit' : `${seconds} s`;
  return `${value} (${SOURCE_LABELS[source]})`;
}
