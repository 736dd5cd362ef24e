import { useMemo } from 'react';
import { checkJsonObject } from '../lib/json';

/**
 * A textarea for a JSON object payload that validates as you type, marks
 * itself invalid for assistive tech and can pretty-print its content.
 */
export function JsonEditor({
  id,
  label,
  value,
  onChange,
  maxBytes,
  serverErrors = [],
  rows = 8,
}: {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  maxBytes?: number;
  serverErrors?: string[];
  rows?: number;
}) {
  const check = useMemo(() => checkJsonObject(value, maxBytes), [value, maxBytes]);
  const errors = [...(check.ok ? [] : [check.error]), ...serverErrors];
  const errorId = `${id}-error`;
  const hintId = `${id}-hint`;

  return (
    <div className="field">
      <div className="field__label-row">
        <label htmlFor={id}>{label}</label>
        <button
          type="button"
          className="button button--link"
          disabled={!check.ok}
          onClick={() => check.ok && onChange(JSON.stringify(check.value, null, 2))}
        >
          Format
        </button>
      </div>
      <textarea
        id={id}
        className="code-input"
        value={value}
        rows={rows}
        spellCheck={false}
        autoCapitalize="off"
        autoCorrect="off"
        aria-invalid={errors.length > 0}
        aria-describedby={errors.length > 0 ? `${errorId} ${hintId}` : hintId}
        onChange={(e) => onChange(e.target.value)}
      />
      <p id={hintId} className="field__hint">
        A JSON object. Leave blank for <code>{'{}'}</code>.
      </p>
      {errors.length > 0 && (
        <ul id={errorId} className="field__errors" role="alert">
          {errors.map((e) => (
            <li key={e}>{e}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
