import type { JobEventType, JobStatus } from '../api/types';
import { EVENT_TONE, STATUS_ICON, STATUS_TONE } from '../lib/tones';

/** A job status as a coloured badge; the icon and text keep it readable without colour. */
export function StatusBadge({ status }: { status: string }) {
  const known = status in STATUS_TONE;
  const tone = known ? STATUS_TONE[status as JobStatus] : 'neutral';
  const icon = known ? STATUS_ICON[status as JobStatus] : '?';
  return (
    <span className={`badge badge--${tone}`} data-status={status}>
      <span aria-hidden="true" className="badge__icon">
        {icon}
      </span>
      {status}
    </span>
  );
}

export function EventTypeBadge({ type }: { type: string }) {
  const tone = type in EVENT_TONE ? EVENT_TONE[type as JobEventType] : 'neutral';
  return (
    <span className={`badge badge--${tone} badge--event`} data-event-type={type}>
      {type}
    </span>
  );
}
