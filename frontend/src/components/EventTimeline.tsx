import type { JobEvent } from '../api/types';
import { actorOf, describeActor } from '../lib/actor';
import { JsonView } from './JsonView';
import { RelativeTime } from './RelativeTime';
import { EventTypeBadge } from './StatusBadge';

function hasData(data: JobEvent['data']): boolean {
  if (data === null || data === undefined) return false;
  if (typeof data === 'object') return Object.keys(data).length > 0;
  return true;
}

/** A job's events in time order, as an ordered list (oldest first). */
export function EventTimeline({ events }: { events: JobEvent[] }) {
  return (
    <ol className="timeline" aria-label="Event timeline">
      {events.map((event) => {
        const actor = actorOf(event);
        return (
        <li key={event.id} className={`timeline__item timeline__item--${event.type}`} data-event-type={event.type}>
          <div className="timeline__head">
            <EventTypeBadge type={event.type} />
            <span className="timeline__meta">
              attempt {event.attempt}
              {event.worker_id && (
                <>
                  {' · '}
                  <span className="mono" title="worker id">
                    {event.worker_id}
                  </span>
                </>
              )}
              {actor && (
                <>
                  {' · '}
                  <span className="timeline__actor" data-actor={actor.user ?? ''}>
                    {describeActor(actor)}
                  </span>
                </>
              )}
            </span>
            <RelativeTime value={event.created_at} />
          </div>
          {event.message && <p className="timeline__message">{event.message}</p>}
          {hasData(event.data) && (
            <details className="timeline__data">
              <summary>Data</summary>
              <JsonView value={event.data} label={`Data of event ${event.id}`} localTimes />
            </details>
          )}
        </li>
        );
      })}
    </ol>
  );
}
