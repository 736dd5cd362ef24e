import { useId } from 'react';
import { either, jobs, planLabel, type BulkPlan } from '../lib/bulk';
import { ConfirmDialog } from './ConfirmDialog';

/**
 * The job list's bulk actions: on the selected rows when there are any, otherwise on
 * every job matching the filters. Disabled buttons say why in text next to them (a
 * disabled button cannot be focused to read a tooltip).
 */
export function BulkActions({
  plans,
  selectedCount,
  matching,
  onStart,
  onClearSelection,
  result,
  onDismissResult,
}: {
  /** The actions that apply to the current scope, in display order. */
  plans: readonly BulkPlan[];
  selectedCount: number;
  /** "All 57 jobs matching status failed"; shown when nothing is selected. */
  matching: string;
  onStart: (plan: BulkPlan) => void;
  onClearSelection: () => void;
  /** What the last action did, until dismissed. */
  result: string | null;
  onDismissResult: () => void;
}) {
  const hintId = useId();
  const reasons = [...new Set(plans.map((p) => p.disabledReason).filter((r): r is string => r !== null))];
  return (
    <div className="bulk">
      <div className="bulk__bar" role="group" aria-label="Bulk actions">
        <span className="bulk__scope">{selectedCount > 0 ? `${jobs(selectedCount)} selected` : matching}</span>
        {plans.map((plan) => (
          <button
            key={plan.action}
            type="button"
            className={plan.action === 'cancel' ? 'button button--small button--danger' : 'button button--small'}
            disabled={plan.selection === null}
            aria-describedby={plan.disabledReason ? hintId : undefined}
            onClick={() => onStart(plan)}
          >
            {planLabel(plan)}
          </button>
        ))}
        {selectedCount > 0 && (
          <button type="button" className="button button--link" onClick={onClearSelection}>
            Clear selection
          </button>
        )}
      </div>
      {reasons.length > 0 && (
        <p id={hintId} className="bulk__hint">
          {reasons.join(' ')}
        </p>
      )}
      <div role="status" className="bulk__result">
        {result && (
          <p className="notice">
            {result}{' '}
            <button type="button" className="button button--link" onClick={onDismissResult}>
              Dismiss
            </button>
          </p>
        )}
      </div>
    </div>
  );
}

/** The confirmation of one bulk action, naming how many jobs and which. */
export function BulkConfirm({
  plan,
  filters,
  heartbeatSeconds,
  pending,
  error,
  onConfirm,
  onDismiss,
}: {
  plan: BulkPlan | null;
  /** The filters in words, for the filter scope. */
  filters: string;
  heartbeatSeconds: number | undefined;
  pending: boolean;
  error: string | null;
  onConfirm: () => void;
  onDismiss: () => void;
}) {
  const verb = plan?.action === 'cancel' ? 'Cancel' : 'Retry';
  const count = plan?.count ?? 0;
  const title =
    plan?.scope === 'selection'
      ? `${verb} ${jobs(count, 'selected')}?`
      : `${verb} ${jobs(count, plan?.statuses.join('/') ?? '')}?`;
  const heartbeat = heartbeatSeconds === undefined ? '' : ` (${heartbeatSeconds} s)`;
  return (
    <ConfirmDialog
      open={plan !== null}
      title={title}
      confirmLabel={`${verb} ${jobs(count)}`}
      pendingLabel={verb === 'Cancel' ? 'Cancelling…' : 'Retrying…'}
      dismissLabel="Go back"
      danger={plan?.action === 'cancel'}
      pending={pending}
      error={error}
      onConfirm={onConfirm}
      onDismiss={onDismiss}
    >
      {plan?.scope === 'filter' ? (
        <p>
          This applies to <strong>every job matching the filters</strong> ({filters}), not just the ones on this page:{' '}
          {jobs(count, plan.statuses.join(' or '))} right now.
        </p>
      ) : (
        <p>
          Only the selected jobs that are {plan ? either(plan.statuses) : ''}:{' '}
          {plan?.ids.map((id, i) => (
            <span key={id}>
              {i > 0 && ', '}
              <span className="mono">{id.slice(0, 8)}</span>
            </span>
          ))}
          .
        </p>
      )}
      <p>
        {plan?.action === 'cancel'
          ? `Queued jobs are cancelled at once; running ones get a cancel request that their worker sees within ` +
            `one heartbeat${heartbeat}, and end as cancelled when their handler next checks in.`
          : 'Each goes back to the queue with a fresh attempt budget.'}
      </p>
      <p className="muted small">
        Jobs that change state before this runs are left alone; the result says how many changed.
      </p>
    </ConfirmDialog>
  );
}
