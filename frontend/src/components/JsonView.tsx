import type { JsonValue } from '../api/types';
import { formatJson } from '../lib/json';

export function JsonView({ value, label }: { value: JsonValue | undefined; label: string }) {
  return (
    <pre className="json" aria-label={label} tabIndex={0}>
      <code>{formatJson(value)}</code>
    </pre>
  );
}
