import { useNow } from '../hooks/useNow';
import { formatExact, formatRelative } from '../lib/time';

/** "3m ago", with the exact local time in a tooltip and machine-readable `dateTime`. */
export function RelativeTime({ value, empty = '—' }: { value: string | null | undefined; empty?: string }) {
  const now = useNow();
  if (!value) return <span className="muted">{empty}</span>;
  const exact = formatExact(value);
  return (
    <time dateTime={value} title={exact} aria-label={`${formatRelative(value, now)} (${exact})`}>
      {formatRelative(value, now)}
    </time>
  );
}
