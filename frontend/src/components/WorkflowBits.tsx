import type { WorkflowState } from '../api/types';
import { COUNT_ORDER, describeCounts, type StatusCounts } from '../lib/workflowGraph';

const STATE_TONE: Record<WorkflowState, string> = {
  active: 'running',
  succeeded: 'success',
  failed: 'danger',
  cancelled: 'muted',
};

const STATE_ICON: Record<WorkflowState, string> = {
  active: '◐',
  succeeded: '✓',
  failed: '✕',
  cancelled: '⊘',
};

/** A workflow's state as a badge, in the job statuses' colours; icon and word read without colour. */
export function WorkflowStateBadge({ state }: { state: WorkflowState }) {
  return (
    <span className={`badge badge--${STATE_TONE[state] ?? 'neutral'}`} data-state={state}>
      <span aria-hidden="true" className="badge__icon">
        {STATE_ICON[state] ?? '?'}
      </span>
      {state}
    </span>
  );
}

/**
 * The members by status as one stacked bar, its words beside it (or, `compact`, in its
 * name only): how far a workflow got at a glance, exact on reading.
 */
export function StatusCountsBar({ counts, compact = false }: { counts: StatusCounts; compact?: boolean }) {
  const total = COUNT_ORDER.reduce((n, s) => n + counts[s], 0);
  const words = describeCounts(counts);
  return (
    <span className={`progress${compact ? ' progress--compact' : ''}`}>
      <span className="progress__bar" role="img" aria-label={`${total.toLocaleString()} jobs: ${words}`}>
        {total > 0 &&
          COUNT_ORDER.filter((s) => counts[s] > 0).map((s) => (
            <span
              key={s}
              className={`progress__part progress__part--${s}`}
              data-status={s}
              data-count={counts[s]}
              style={{ width: `${(counts[s] / total) * 100}%` }}
            />
          ))}
      </span>
      {!compact && (
        <span className="progress__text" aria-hidden="true">
          {words}
        </span>
      )}
    </span>
  );
}
