import { useState } from 'react';
import { Link } from 'react-router';
import { useCanChange, useSchedules, useSetSchedulePaused, useTriggerSchedule } from '../api/hooks';
import type { Job, Schedule } from '../api/types';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { RelativeTime } from '../components/RelativeTime';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { StatusBadge } from '../components/StatusBadge';
import { errorMessage } from '../lib/errors';
import { describeCadence } from '../lib/flowControl';

type ScheduleAction = 'pause' | 'resume' | 'trigger';

const NO_CHANGE_NOTE =
  'Your account can look at schedules but not change them (that needs the permission to change jobs).';

const ACTION_TEXT: Record<ScheduleAction, { title: string; confirm: string; pending: string }> = {
  pause: { title: 'Pause schedule', confirm: 'Pause schedule', pending: 'Pausing…' },
  resume: { title: 'Resume schedule', confirm: 'Resume schedule', pending: 'Resuming…' },
  trigger: { title: 'Run schedule', confirm: 'Trigger now', pending: 'Enqueueing…' },
};

function ScheduleRow({
  schedule,
  canChange,
  onAction,
}: {
  schedule: Schedule;
  canChange: boolean;
  onAction: (schedule: Schedule, action: ScheduleAction) => void;
}) {
  const last = schedule.last_job;
  return (
    <tr data-schedule={schedule.name}>
      <th scope="row">
        <span className="mono queue-name">{schedule.name}</span>{' '}
        {schedule.error && (
          <span
            className="badge badge--danger state-badge"
            data-failing="true"
            title={schedule.error_at ? `failing since ${schedule.error_at}` : undefined}
          >
            {schedule.runnable ? 'failing' : 'cannot run'}
          </span>
        )}{' '}
        {schedule.paused ? (
          <>
            <span className="badge badge--warning state-badge" data-paused="true">
              paused
            </span>
            {schedule.paused_at && (
              <span className="cell-detail">
                since <RelativeTime value={schedule.paused_at} />
              </span>
            )}
          </>
        ) : (
          <span className="badge badge--success state-badge" data-paused="false">
            active
          </span>
        )}
      </th>
      <td>
        {schedule.error && <p className="cell-error break-anywhere">{schedule.error}</p>}
        <span className="mono break-anywhere">{schedule.target}</span>
        <span className="cell-detail cell-detail--wrap">
          {schedule.kind === 'task' ? 'task' : 'job type'} · queue {schedule.queue} · priority {schedule.priority}
        </span>
      </td>
      <td>
        <span className="mono">{describeCadence(schedule)}</span>
        <span className="cell-detail cell-detail--wrap">
          {/* A zone only places a cron's hours; an interval counts seconds in any zone. */}
          {schedule.cron && schedule.timezone ? `${schedule.timezone} · ` : ''}missed ticks:{' '}
          {schedule.missed === 'latest' ? 'run the latest once' : 'skipped'}
        </span>
      </td>
      <td data-next-run={schedule.next_run_at ?? ''}>
        <RelativeTime value={schedule.next_run_at} empty={schedule.paused ? 'paused' : '—'} />
      </td>
      <td data-last-job={last?.id ?? ''}>
        {last ? (
          <>
            <Link to={`/jobs/${last.id}`} className="mono" title={last.id} aria-label={`Last job ${last.id.slice(0, 8)}, ${last.status}`}>
              {last.id.slice(0, 8)}
            </Link>{' '}
            <StatusBadge status={last.status} />
            <span className="cell-detail">
              created <RelativeTime value={last.created_at} />
            </span>
          </>
        ) : (
          <span className="muted">none yet</span>
        )}
      </td>
      {canChange && (
        <td>
          <div className="row-actions">
            <button
              type="button"
              className="button button--small"
              aria-label={`${schedule.paused ? 'Resume' : 'Pause'} schedule ${schedule.name}`}
              onClick={() => onAction(schedule, schedule.paused ? 'resume' : 'pause')}
            >
              {schedule.paused ? 'Resume' : 'Pause'}
            </button>
            <button
              type="button"
              className="button button--small button--primary"
              aria-label={`Trigger now: schedule ${schedule.name}`}
              onClick={() => onAction(schedule, 'trigger')}
            >
              Trigger now
            </button>
          </div>
        </td>
      )}
    </tr>
  );
}

function ConfirmText({ schedule, action }: { schedule: Schedule; action: ScheduleAction }) {
  if (action === 'pause')
    return <p>No worker enqueues its ticks until it is resumed. Jobs it already enqueued are left alone.</p>;
  if (action === 'resume')
    return (
      <p>
        Workers enqueue its ticks again ({describeCadence(schedule)}
        {schedule.cron && schedule.timezone ? `, ${schedule.timezone}` : ''}).
      </p>
    );
  return (
    <p>
      Enqueues one <span className="mono">{schedule.target}</span> job on queue{' '}
      <span className="mono">{schedule.queue}</span> now, besides its regular ticks.
    </p>
  );
}

export function SchedulesPage() {
  const schedules = useSchedules();
  const canChange = useCanChange();
  const setPaused = useSetSchedulePaused();
  const trigger = useTriggerSchedule();
  const [confirming, setConfirming] = useState<{ schedule: Schedule; action: ScheduleAction } | null>(null);
  const [result, setResult] = useState<{ text: string; job?: Job } | null>(null);
  const running = confirming?.action === 'trigger' ? trigger : setPaused;
  const text = confirming ? ACTION_TEXT[confirming.action] : null;

  function confirm() {
    if (!confirming) return;
    const { schedule, action } = confirming;
    if (action === 'trigger') {
      trigger.mutate(schedule.name, {
        onSuccess: ({ job }) => {
          setConfirming(null);
          setResult({ text: `Schedule ${schedule.name} triggered: `, job });
        },
      });
    } else {
      setPaused.mutate(
        { name: schedule.name, paused: action === 'pause' },
        {
          onSuccess: (s) => {
            setConfirming(null);
            setResult({ text: `Schedule ${s.name} ${s.paused ? 'paused' : 'resumed'}.` });
          },
        },
      );
    }
  }

  return (
    <div className="page">
      <h1>Schedules</h1>
      <p className="muted">
        Periodic jobs declared in the settings: when each runs next and how its last job went. Every worker may enqueue a
        due tick; the database keeps it to one job per tick.
      </p>
      {!canChange && <p className="muted small">{NO_CHANGE_NOTE}</p>}
      {result && (
        <p className="notice" role="status">
          {result.text}
          {result.job && (
            <Link to={`/jobs/${result.job.id}`} data-testid="triggered-job-link">
              open job <span className="mono">{result.job.id.slice(0, 8)}</span>
            </Link>
          )}
        </p>
      )}
      {schedules.isPending ? (
        <Loading label="Loading schedules…" />
      ) : schedules.isError && !schedules.data ? (
        <ErrorState error={schedules.error} onRetry={() => void schedules.refetch()} />
      ) : schedules.data ? (
        <section className="panel" aria-label="Schedule list">
          {schedules.isError && <StaleNote error={schedules.error} />}
          {schedules.data.length === 0 ? (
            <Empty>No schedule is declared. Add one to the JOB_SCHEDULES setting.</Empty>
          ) : (
            <div className="table-wrap">
              <table className="table table--schedules">
                <caption className="sr-only">Schedules</caption>
                <thead>
                  <tr>
                    <th scope="col">Schedule</th>
                    <th scope="col">Target</th>
                    <th scope="col">When</th>
                    <th scope="col">Next run</th>
                    <th scope="col">Last job</th>
                    {canChange && <th scope="col">Actions</th>}
                  </tr>
                </thead>
                <tbody>
                  {schedules.data.map((schedule) => (
                    <ScheduleRow
                      key={schedule.name}
                      schedule={schedule}
                      canChange={canChange}
                      onAction={(s, action) => {
                        setPaused.reset();
                        trigger.reset();
                        setResult(null);
                        setConfirming({ schedule: s, action });
                      }}
                    />
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>
      ) : null}

      <ConfirmDialog
        open={confirming !== null}
        title={confirming && text ? `${text.title} ${confirming.schedule.name}?` : ''}
        confirmLabel={text?.confirm ?? ''}
        pendingLabel={text?.pending}
        dismissLabel="Go back"
        danger={confirming?.action === 'pause'}
        pending={running.isPending}
        error={running.isError ? errorMessage(running.error) : null}
        onConfirm={confirm}
        onDismiss={() => setConfirming(null)}
      >
        {confirming && <ConfirmText schedule={confirming.schedule} action={confirming.action} />}
      </ConfirmDialog>
    </div>
  );
}
