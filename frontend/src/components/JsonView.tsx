import type { JsonValue } from '../api/types';
import { formatJson } from '../lib/json';
import { localizeTimes } from '../lib/time';

/**
 * JSON as text. `localTimes`: the timestamps in it are the system's (an event's data), so
 * they are shown in the browser's zone like every other time on the page, not in the
 * API's; a payload or a result is the caller's and is shown as it is.
 */
export function JsonView({
  value,
  label,
  localTimes = false,
}: {
  value: JsonValue | undefined;
  label: string;
  localTimes?: boolean;
}) {
  return (
    <pre className="json" aria-label={label} tabIndex={0}>
      <code>{formatJson(localTimes && value !== undefined ? localizeTimes(value) : value)}</code>
    </pre>
  );
}
