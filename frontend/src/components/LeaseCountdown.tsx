import { useNow } from '../hooks/useNow';
import { formatDuration, formatExact } from '../lib/time';

/** Seconds left on a running job's lease, or how long ago it expired. */
export function LeaseCountdown({ lockedUntil }: { lockedUntil: string }) {
  const now = useNow();
  const remaining = Date.parse(lockedUntil) - now;
  const expired = remaining <= 0;
  return (
    <span className={expired ? 'lease lease--expired' : 'lease'} title={formatExact(lockedUntil)}>
      {expired ? `expired ${formatDuration(remaining)} ago` : `${formatDuration(remaining)} left`}
    </span>
  );
}
