import { Fragment } from 'react';
import type { JobAttempt } from '../api/types';
import { formatMs, groupByRound, OUTCOME_TONE, outcomeLabel } from '../lib/attempts';
import { ClockTime } from './ClockTime';
import { Traceback } from './Traceback';

/**
 * One row per attempt, grouped by manual-retry round: its worker, how long it waited to be
 * claimed, when it started, how long it ran, how it ended, and its exception, with the
 * traceback under the row (expandable, copyable).
 */
export function AttemptsTable({ attempts }: { attempts: readonly JobAttempt[] }) {
  const rounds = groupByRound(attempts);
  const several = rounds.length > 1;
  return (
    <div className="table-wrap">
      <table className="table attempts">
        <caption className="sr-only">Attempts</caption>
        <thead>
          <tr>
            <th scope="col" className="num">
              #
            </th>
            <th scope="col">Worker</th>
            <th scope="col" className="num">
              Queued for
            </th>
            <th scope="col">Started</th>
            <th scope="col" className="num">
              Run time
            </th>
            <th scope="col">Outcome</th>
            <th scope="col">Exception</th>
          </tr>
        </thead>
        {rounds.map(({ round, attempts: list }) => (
          <tbody key={round} data-round={round}>
            {several && (
              <tr className="attempts__round">
                <th scope="rowgroup" colSpan={7}>
                  Round {round}
                  {round > 1 ? ' (after a manual retry)' : ''}
                </th>
              </tr>
            )}
            {list.map((a) => (
              <Fragment key={a.number}>
                <tr data-attempt={a.number} data-outcome={a.outcome}>
                  <td className="num" title={`attempt ${a.attempt} of round ${a.round}; ${a.number} overall`}>
                    {a.attempt}
                  </td>
                  <td className="mono">{a.worker_id ?? <span className="muted">—</span>}</td>
                  <td className="num">{formatMs(a.wait_ms)}</td>
                  <td>
                    <ClockTime value={a.started_at ?? a.claimed_at} />
                  </td>
                  <td className="num">{formatMs(a.run_ms)}</td>
                  <td>
                    <span className={`badge badge--${OUTCOME_TONE[a.outcome]}`}>{outcomeLabel(a.outcome)}</span>
                  </td>
                  <td>
                    {a.outcome === 'cancelled' ? (
                      <span className="muted">stopped as asked</span>
                    ) : (
                      <>
                        {a.exception_class ? <span className="mono">{a.exception_class}</span> : null}
                        {a.error && <span className="cell-detail">{a.error}</span>}
                        {!a.exception_class && !a.error && <span className="muted">—</span>}
                      </>
                    )}
                  </td>
                </tr>
                {a.traceback && a.outcome !== 'cancelled' && (
                  <tr className="attempts__traceback">
                    <td colSpan={7}>
                      <details>
                        <summary>Traceback of attempt {a.number}</summary>
                        <Traceback text={a.traceback} label={`Traceback of attempt ${a.number}`} />
                      </details>
                    </td>
                  </tr>
                )}
              </Fragment>
            ))}
          </tbody>
        ))}
      </table>
    </div>
  );
}
