import { useEffect, useRef, useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useCanChange, useQueues, useSetQueuePaused, useUpdateQueueLimits } from '../api/hooks';
import { JOB_STATUSES, type Queue } from '../api/types';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { NumberField } from '../components/FormField';
import { RelativeTime } from '../components/RelativeTime';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { useNow } from '../hooks/useNow';
import { errorMessage } from '../lib/errors';
import {
  buildLimitsRequest,
  describeConcurrency,
  describeRateLimit,
  limitsFormValues,
  oldestWait,
  saturationTone,
  splitLimitErrors,
  type LimitErrors,
  type LimitField,
  type LimitsFormValues,
} from '../lib/flowControl';

const NO_CHANGE_NOTE = 'Your account can look at queues but not change them (that needs the permission to change jobs).';

/** Running against the limit: a bar (decoration) and the same in words. */
function Saturation({ queue }: { queue: Queue }) {
  const tone = saturationTone(queue.saturation);
  const share = Math.min(1, queue.saturation ?? 0);
  return (
    <div className="saturation" data-saturation={queue.saturation ?? ''}>
      {queue.concurrency_limit !== null && (
        <span className={`saturation__bar saturation__bar--${tone}`} aria-hidden="true">
          <span style={{ width: `${share * 100}%` }} />
        </span>
      )}
      <span className="saturation__text">{describeConcurrency(queue)}</span>
    </div>
  );
}

function PausedState({ queue }: { queue: Queue }) {
  const now = useNow();
  const wait = oldestWait(queue, now);
  return (
    <>
      {queue.paused ? (
        <span className="badge badge--warning state-badge" data-paused="true">
          paused
        </span>
      ) : (
        <span className="badge badge--success state-badge" data-paused="false">
          active
        </span>
      )}
      {queue.paused && queue.paused_at && (
        <span className="cell-detail">
          since <RelativeTime value={queue.paused_at} />
        </span>
      )}
      {wait && (
        <span className="cell-detail" data-backlog-age="">
          oldest due job waited {wait}
        </span>
      )}
    </>
  );
}

/** The limits of one queue, edited in place; the API's field errors show under each field. */
function LimitsEditor({ queue, onDone }: { queue: Queue; onDone: (message: string) => void }) {
  const [values, setValues] = useState<LimitsFormValues>(() => limitsFormValues(queue));
  const [clientErrors, setClientErrors] = useState<LimitErrors>({});
  const update = useUpdateQueueLimits();
  const firstField = useRef<HTMLInputElement>(null);
  const server = update.error ? splitLimitErrors(update.error.fieldErrors) : { fields: {}, general: [] };
  const errorsFor = (field: LimitField) => [...(clientErrors[field] ?? []), ...(server.fields[field] ?? [])];
  const headingId = `limits-${queue.name.replace(/[^A-Za-z0-9_-]/g, '-')}`;

  useEffect(() => firstField.current?.focus(), []);

  function set(key: keyof LimitsFormValues, value: string) {
    setValues((prev) => ({ ...prev, [key]: value }));
  }

  function onSubmit(e: FormEvent) {
    e.preventDefault();
    const built = buildLimitsRequest(values);
    if (!built.ok) {
      setClientErrors(built.errors);
      return;
    }
    setClientErrors({});
    update.mutate(
      { name: queue.name, limits: built.input },
      { onSuccess: (q) => onDone(`Limits of ${q.name} saved: ${describeConcurrency(q)}; rate ${describeRateLimit(q)}.`) },
    );
  }

  return (
    <section className="panel" aria-labelledby={headingId}>
      <h2 id={headingId}>
        Limits of <span className="mono">{queue.name}</span>
      </h2>
      <form
        className="form"
        noValidate
        onSubmit={onSubmit}
        aria-labelledby={headingId}
        onKeyDown={(e) => {
          if (e.key === 'Escape' && !update.isPending) onDone('');
        }}
      >
        {(server.general.length > 0 || update.error?.unreachable) && (
          <div className="form-error" role="alert">
            {update.error?.unreachable ? errorMessage(update.error) : server.general.map((m) => <p key={m}>{m}</p>)}
          </div>
        )}
        <div className="form__grid">
          <NumberField
            ref={firstField}
            id={`${headingId}-concurrency`}
            label="Concurrency limit"
            errors={errorsFor('concurrency_limit')}
            hint="At most this many running at once across all workers. Blank: no limit."
            min={1}
            value={values.concurrencyLimit}
            onChange={(v) => set('concurrencyLimit', v)}
          />
          <NumberField
            id={`${headingId}-rate`}
            label="Rate limit"
            errors={errorsFor('rate_limit')}
            hint="At most this many started per period across all workers. Blank: no limit."
            min={1}
            value={values.rateLimit}
            onChange={(v) => set('rateLimit', v)}
          />
          <NumberField
            id={`${headingId}-period`}
            label="Rate period in seconds"
            errors={errorsFor('rate_period_seconds')}
            hint="The window of the rate limit."
            min={1}
            value={values.ratePeriodSeconds}
            onChange={(v) => set('ratePeriodSeconds', v)}
          />
        </div>
        <div className="actions">
          <button type="submit" className="button button--primary" disabled={update.isPending}>
            {update.isPending ? 'Saving…' : 'Save limits'}
          </button>
          <button type="button" className="button" disabled={update.isPending} onClick={() => onDone('')}>
            Cancel
          </button>
        </div>
      </form>
    </section>
  );
}

function QueueTable({
  queues,
  canChange,
  editing,
  onPause,
  onEdit,
}: {
  queues: Queue[];
  canChange: boolean;
  /** The queue whose limits form is open. */
  editing: string | null;
  onPause: (queue: Queue) => void;
  onEdit: (queue: Queue) => void;
}) {
  return (
    <div className="table-wrap">
      <table className="table table--queues">
        <caption className="sr-only">Queues</caption>
        <thead>
          <tr>
            <th scope="col">Queue</th>
            <th scope="col">Jobs</th>
            <th scope="col">Concurrency</th>
            <th scope="col">Rate limit</th>
            {canChange && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {queues.map((queue) => (
            <tr key={queue.name} data-queue={queue.name}>
              <th scope="row">
                <span className="mono queue-name">{queue.name}</span>{' '}
                <PausedState queue={queue} />
              </th>
              <td>
                <ul className="queue-counts" aria-label={`Jobs in ${queue.name} by status`}>
                  {JOB_STATUSES.map((status) => (
                    <li key={status} className={queue.counts[status] > 0 ? undefined : 'muted'}>
                      {queue.counts[status] > 0 ? (
                        <Link
                          to={`/jobs?status=${status}&queue=${encodeURIComponent(queue.name)}`}
                          aria-label={`${queue.counts[status]} ${status} in ${queue.name}`}
                          data-count={status}
                        >
                          {queue.counts[status].toLocaleString()}
                        </Link>
                      ) : (
                        <span data-count={status}>0</span>
                      )}{' '}
                      {status}
                      {status === 'queued' && queue.counts.queued > 0 && (
                        <span className="muted" data-split="">
                          {' ('}
                          <Link
                            to={`/jobs?status=queued&due=true&queue=${encodeURIComponent(queue.name)}`}
                            data-count="due"
                          >
                            {queue.due.toLocaleString()}
                          </Link>{' '}
                          due,{' '}
                          <Link
                            to={`/jobs?status=queued&due=false&queue=${encodeURIComponent(queue.name)}`}
                            data-count="scheduled"
                          >
                            {queue.scheduled.toLocaleString()}
                          </Link>{' '}
                          scheduled)
                        </span>
                      )}
                    </li>
                  ))}
                </ul>
              </td>
              <td>
                <Saturation queue={queue} />
              </td>
              <td>{describeRateLimit(queue)}</td>
              {canChange && (
                <td>
                  <div className="row-actions">
                    <button
                      type="button"
                      className={queue.paused ? 'button button--small button--primary' : 'button button--small'}
                      aria-label={`${queue.paused ? 'Resume' : 'Pause'} queue ${queue.name}`}
                      onClick={() => onPause(queue)}
                    >
                      {queue.paused ? 'Resume' : 'Pause'}
                    </button>
                    <button
                      type="button"
                      className="button button--small"
                      aria-label={`Edit limits of queue ${queue.name}`}
                      aria-expanded={editing === queue.name}
                      data-edit-limits={queue.name}
                      onClick={() => onEdit(queue)}
                    >
                      Edit limits
                    </button>
                  </div>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function QueuesPage() {
  const queues = useQueues();
  const canChange = useCanChange();
  const setPaused = useSetQueuePaused();
  const [confirming, setConfirming] = useState<Queue | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [result, setResult] = useState<string | null>(null);
  const editingQueue = queues.data?.find((q) => q.name === editing);
  // Closing the limits form gives the focus back to the button that opened it.
  const returnFocusTo = useRef<string | null>(null);
  useEffect(() => {
    const name = returnFocusTo.current;
    if (editing !== null || name === null) return;
    returnFocusTo.current = null;
    document.querySelector<HTMLButtonElement>(`button[data-edit-limits="${CSS.escape(name)}"]`)?.focus();
  }, [editing]);

  function confirm() {
    if (!confirming) return;
    const pausing = !confirming.paused;
    setPaused.mutate(
      { name: confirming.name, paused: pausing },
      {
        onSuccess: (queue) => {
          setConfirming(null);
          setResult(
            queue.paused
              ? `Queue ${queue.name} paused: no worker claims from it; running jobs finish.`
              : `Queue ${queue.name} resumed: workers claim from it again.`,
          );
        },
      },
    );
  }

  return (
    <div className="page">
      <h1>Queues</h1>
      <p className="muted">
        Every queue with its jobs by status, whether workers claim from it, and its limits: running against the
        concurrency limit and jobs started per period, both enforced across all workers.
      </p>
      {!canChange && <p className="muted small">{NO_CHANGE_NOTE}</p>}
      {result && (
        <p className="notice" role="status">
          {result}
        </p>
      )}
      {queues.isPending ? (
        <Loading label="Loading queues…" />
      ) : queues.isError && !queues.data ? (
        <ErrorState error={queues.error} onRetry={() => void queues.refetch()} />
      ) : queues.data ? (
        <section className="panel" aria-label="Queue list">
          {queues.isError && <StaleNote error={queues.error} />}
          {queues.data.length === 0 ? (
            <Empty>No queue yet: one appears with its first job or its first limit.</Empty>
          ) : (
            <QueueTable
              queues={queues.data}
              canChange={canChange}
              editing={editing}
              onPause={(queue) => {
                setPaused.reset();
                setResult(null);
                setConfirming(queue);
              }}
              onEdit={(queue) => {
                setResult(null);
                setEditing(queue.name);
              }}
            />
          )}
        </section>
      ) : null}

      {canChange && editingQueue && (
        <LimitsEditor
          key={editingQueue.name}
          queue={editingQueue}
          onDone={(message) => {
            setEditing(null);
            returnFocusTo.current = editingQueue.name;
            if (message) setResult(message);
          }}
        />
      )}

      <ConfirmDialog
        open={confirming !== null}
        title={confirming?.paused ? `Resume queue ${confirming.name}?` : `Pause queue ${confirming?.name ?? ''}?`}
        confirmLabel={confirming?.paused ? 'Resume queue' : 'Pause queue'}
        pendingLabel={confirming?.paused ? 'Resuming…' : 'Pausing…'}
        dismissLabel="Go back"
        danger={confirming !== null && !confirming.paused}
        pending={setPaused.isPending}
        error={setPaused.isError ? errorMessage(setPaused.error) : null}
        onConfirm={confirm}
        onDismiss={() => setConfirming(null)}
      >
        {confirming?.paused ? (
          <p>
            Workers start claiming its {confirming.due.toLocaleString()} due {confirming.due === 1 ? 'job' : 'jobs'} again
            at once, within its limits
            {confirming.scheduled > 0
              ? `, and its ${confirming.scheduled.toLocaleString()} scheduled for later when they are due`
              : ''}
            .
          </p>
        ) : (
          <p>
            No worker claims from it until it is resumed, within one poll; its{' '}
            {confirming?.counts.running.toLocaleString() ?? 0} running jobs finish, and new jobs wait in the queue.
          </p>
        )}
      </ConfirmDialog>
    </div>
  );
}
