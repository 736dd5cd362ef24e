import type { ReactNode } from 'react';
import { Link } from 'react-router';
import type { Tone } from '../lib/tones';

export function StatCard({
  label,
  value,
  hint,
  tone = 'neutral',
  to,
}: {
  label: string;
  value: ReactNode;
  hint?: ReactNode;
  tone?: Tone;
  to?: string;
}) {
  const body = (
    <>
      <span className="stat__label">{label}</span>
      <span className="stat__value">{value}</span>
      {hint !== undefined && <span className="stat__hint">{hint}</span>}
    </>
  );
  return (
    <li className={`stat stat--${tone}`}>
      {to ? (
        <Link className="stat__link" to={to}>
          {body}
        </Link>
      ) : (
        body
      )}
    </li>
  );
}
