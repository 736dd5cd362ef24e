import { formatExact, formatTimeWithZone } from '../lib/time';

/** "14:05:09 CET": a moment as a local clock time with its zone, the full date and offset in the tooltip. */
export function ClockTime({ value, empty = '—' }: { value: string | null | undefined; empty?: string }) {
  if (!value) return <span className="muted">{empty}</span>;
  const exact = formatExact(value);
  return (
    <time dateTime={value} title={exact}>
      {formatTimeWithZone(value)}
    </time>
  );
}
