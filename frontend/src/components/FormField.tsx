import type { ReactNode, Ref } from 'react';

/** Label, control, hint and error list wired together with ids for assistive tech. */
export function FormField({
  id,
  label,
  hint,
  errors = [],
  children,
}: {
  id: string;
  label: string;
  hint?: ReactNode;
  errors?: string[] | undefined;
  children: (props: { id: string; 'aria-invalid': boolean; 'aria-describedby': string | undefined }) => ReactNode;
}) {
  const hintId = hint ? `${id}-hint` : undefined;
  const errorId = errors.length > 0 ? `${id}-error` : undefined;
  const describedBy = [errorId, hintId].filter(Boolean).join(' ') || undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({ id, 'aria-invalid': errors.length > 0, 'aria-describedby': describedBy })}
      {hint && (
        <p id={hintId} className="field__hint">
          {hint}
        </p>
      )}
      {errors.length > 0 && (
        <ul id={errorId} className="field__errors">
          {errors.map((e) => (
            <li key={e}>{e}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** What every typed field takes: its FormField's parts, and its text and setter. */
interface InputFieldProps {
  id: string;
  label: string;
  hint?: ReactNode;
  errors?: string[] | undefined;
  value: string;
  onChange: (value: string) => void;
}

/** A whole number: the numeric keypad on phones, and the bounds the browser checks. */
export function NumberField({
  min,
  max,
  className,
  ref,
  value,
  onChange,
  ...field
}: InputFieldProps & { min?: number; max?: number; className?: string; ref?: Ref<HTMLInputElement> }) {
  return (
    <FormField {...field}>
      {(p) => (
        <input
          {...p}
          ref={ref}
          type="number"
          inputMode="numeric"
          min={min}
          max={max}
          className={className}
          value={value}
          onChange={(e) => onChange(e.target.value)}
        />
      )}
    </FormField>
  );
}

/**
 * A name or key the API compares to the letter: monospace, neither completed nor
 * spell-checked by the browser; `suggestions` become a datalist of known values.
 */
export function KeyField({
  maxLength,
  suggestions = [],
  value,
  onChange,
  ...field
}: InputFieldProps & { maxLength: number; suggestions?: string[] }) {
  const listId = suggestions.length > 0 ? `${field.id}-names` : undefined;
  return (
    <FormField {...field}>
      {(p) => (
        <>
          <input
            {...p}
            type="text"
            className="mono"
            autoComplete="off"
            spellCheck={false}
            maxLength={maxLength}
            list={listId}
            value={value}
            onChange={(e) => onChange(e.target.value)}
          />
          {listId && (
            <datalist id={listId}>
              {suggestions.map((s) => (
                <option key={s} value={s} />
              ))}
            </datalist>
          )}
        </>
      )}
    </FormField>
  );
}
