import type { ReactNode } from 'react';
import { useHiddenRight } from '../hooks/useHiddenRight';

/**
 * A table that may be wider than the page: it scrolls sideways inside its box, and says so
 * while columns lie past its edge (a narrow window otherwise hides them with no cue).
 */
export function TableWrap({ children, label }: { children: ReactNode; label: string }) {
  const [ref, hidden] = useHiddenRight<HTMLDivElement>();

  return (
    <>
      {hidden && (
        <p className="table-cue" data-table-cue="">
          More columns of {label} to the right: scroll the table sideways →
        </p>
      )}
      <div ref={ref} className={`table-wrap${hidden ? ' table-wrap--more' : ''}`}>
        {children}
      </div>
    </>
  );
}
