import { Link } from 'react-router';
import { useJobTypes, useQueues, useSchedules, useStats, useThroughput, useWorkers } from '../api/hooks';
import type { JobStats, JobTypeHealth } from '../api/types';
import { StatCard } from '../components/StatCard';
import { Empty, ErrorState, Loading, StaleNote } from '../components/States';
import { ThroughputChart } from '../components/ThroughputChart';
import { useNow } from '../hooks/useNow';
import { ATTENTION_WINDOW_MINUTES, attentionItems, type FlowState } from '../lib/attention';
import { errorMessage } from '../lib/errors';
import { formatDuration, formatExact } from '../lib/time';

const THROUGHPUT_WINDOW = { minutes: 15, bucketSeconds: 60 };

/**
 * How long the oldest due job has waited (since its `available_at`). Jobs scheduled for
 * later are not a backlog, so `oldest_due_at`, not `oldest_queued_at`.
 */
function BacklogAge({ stats }: { stats: JobStats }) {
  const now = useNow();
  if (!stats.oldest_due_at) return <>—</>;
  return (
    <time dateTime={stats.oldest_due_at} title={formatExact(stats.oldest_due_at)}>
      {formatDuration(now - Date.parse(stats.oldest_due_at))}
    </time>
  );
}

/** Failing types, expired leases and an old backlog, or "Nothing needs attention". */
function NeedsAttention({
  stats,
  types,
  typesFailed,
  flow,
}: {
  stats: JobStats;
  types: readonly JobTypeHealth[] | undefined;
  typesFailed: boolean;
  flow: FlowState;
}) {
  const now = useNow();
  const items = attentionItems(stats, types, now, flow);
  if (items.length === 0) {
    // Without the types, failing types are unknown: do not claim all is fine.
    if (types === undefined) return typesFailed ? null : <Loading label="Checking job types…" />;
    return <p className="all-clear">Nothing needs attention.</p>;
  }
  return (
    <ul className="attention" aria-label="Needs attention">
      {items.map((item) => (
        <li key={item.key} className={`attention__item attention__item--${item.kind}`} data-kind={item.kind}>
          <strong className="attention__title">{item.title}</strong>
          <span className="attention__detail">{item.detail}</span>
          <Link to={item.to}>{item.linkLabel}</Link>
        </li>
      ))}
    </ul>
  );
}

export function OverviewPage() {
  const stats = useStats();
  const throughput = useThroughput(THROUGHPUT_WINDOW);
  const types = useJobTypes(ATTENTION_WINDOW_MINUTES);
  const queues = useQueues();
  const schedules = useSchedules();
  const workers = useWorkers();

  return (
    <div className="page">
      <h1>Overview</h1>

      <section aria-labelledby="attention-heading" className="panel">
        <h2 id="attention-heading">Needs attention</h2>
        {stats.isPending ? (
          <Loading label="Loading queue stats…" />
        ) : stats.isError && !stats.data ? (
          // The queue state panel below shows the error and its retry button.
          <p className="muted">Cannot tell without the queue stats.</p>
        ) : stats.data ? (
          <>
            {types.isError &&
              (types.data ? (
                <StaleNote error={types.error} />
              ) : (
                <p className="stale-note" role="status">
                  Failing job types are unknown: {errorMessage(types.error)}
                </p>
              ))}
            {((queues.isError && !queues.data) ||
              (schedules.isError && !schedules.data) ||
              (workers.isError && !workers.data)) && (
              <p className="stale-note" role="status">
                {workers.isError && !workers.data ? `Live workers are unknown: ${errorMessage(workers.error)}. ` : ''}
                {queues.isError && !queues.data ? `Paused queues are unknown: ${errorMessage(queues.error)}. ` : ''}
                {schedules.isError && !schedules.data
                  ? `Failed schedules are unknown: ${errorMessage(schedules.error)}.`
                  : ''}
              </p>
            )}
            <NeedsAttention
              stats={stats.data}
              types={types.data?.types}
              typesFailed={types.isError}
              flow={{ queues: queues.data, schedules: schedules.data, workers: workers.data?.processes }}
            />
          </>
        ) : null}
      </section>

      <section aria-labelledby="stats-heading" className="panel">
        <h2 id="stats-heading">Queue state</h2>
        {stats.isPending ? (
          <Loading label="Loading queue stats…" />
        ) : stats.isError && !stats.data ? (
          <ErrorState error={stats.error} onRetry={() => void stats.refetch()} />
        ) : stats.data ? (
          <>
            {stats.isError && <StaleNote error={stats.error} />}
            <ul className="stats" aria-label="Queue statistics">
              <StatCard
                label="Total jobs"
                value={approximate(stats.data.total, stats.data.estimated)}
                hint={stats.data.estimated ? ESTIMATED_HINT : undefined}
                to="/jobs"
              />
              <StatCard
                label="Queued"
                value={stats.data.due}
                tone="neutral"
                hint="due now, waiting for a worker"
                to="/jobs?status=queued&due=true"
              />
              <StatCard
                label="Scheduled"
                value={stats.data.scheduled}
                tone="neutral"
                hint="queued to run later"
                to="/jobs?status=queued&due=false"
              />
              <StatCard label="Running" value={stats.data.by_status.running} tone="running" to="/jobs?status=running" />
              <StatCard
                label="Succeeded"
                value={approximate(stats.data.by_status.succeeded, stats.data.estimated)}
                tone="success"
                to="/jobs?status=succeeded"
              />
              <StatCard
                label="Failed"
                value={approximate(stats.data.by_status.failed, stats.data.estimated)}
                tone="danger"
                hint="jobs failed now, all time"
                to="/jobs?status=failed"
              />
              <StatCard
                label="Cancelled"
                value={approximate(stats.data.by_status.cancelled, stats.data.estimated)}
                tone="muted"
                to="/jobs?status=cancelled"
              />
              <StatCard
                label="Overdue running"
                value={stats.data.overdue_running}
                tone={stats.data.overdue_running > 0 ? 'warning' : 'neutral'}
                hint="lease expired, awaiting cleanup"
                to="/jobs?status=running&lease_expired=true"
              />
              <StatCard
                label="Retries pending"
                value={stats.data.retries_pending}
                tone={stats.data.retries_pending > 0 ? 'warning' : 'neutral'}
                hint="queued after a failed attempt"
              />
              <StatCard
                label="Backlog age"
                value={<BacklogAge stats={stats.data} />}
                hint="how long the oldest due job has waited"
              />
            </ul>
          </>
        ) : null}
      </section>

      <section aria-labelledby="throughput-heading" className="panel">
        <h2 id="throughput-heading">Job endings, last {THROUGHPUT_WINDOW.minutes} minutes</h2>
        <p className="muted small" data-counting-note="">
          Each time a job ended counts once: a job retried by hand that fails again counts twice here, and once (by its
          status now, all time) in the cards above.
        </p>
        {throughput.isPending ? (
          <Loading label="Loading throughput…" />
        ) : throughput.isError && !throughput.data ? (
          <ErrorState error={throughput.error} onRetry={() => void throughput.refetch()} />
        ) : throughput.data ? (
          <>
            {throughput.isError && <StaleNote error={throughput.error} />}
            {throughput.data.buckets.length === 0 ? (
              <Empty>No intervals in this window.</Empty>
            ) : (
              <ThroughputChart data={throughput.data} />
            )}
          </>
        ) : null}
      </section>
    </div>
  );
}

const ESTIMATED_HINT = "estimated from the database's statistics";

/** Finished counts of a very large table are estimates; say so with "≈". */
function approximate(value: number, estimated: boolean): string {
  return estimated ? `≈${value.toLocaleString()}` : value.toLocaleString();
}

