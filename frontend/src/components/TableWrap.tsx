import { useEffect, useRef, useState, type ReactNode } from 'react';

/**
 * A table that may be wider than the page: it scrolls sideways inside its box, and says so
 * while columns lie past its edge (a narrow window otherwise hides them with no cue).
 */
export function TableWrap({ children, label }: { children: ReactNode; label: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const [hidden, setHidden] = useState(false);

  useEffect(() => {
    const box = ref.current;
    if (!box) return;
    const measure = () => setHidden(box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
    measure();
    if (typeof ResizeObserver === 'undefined') return;
    const observer = new ResizeObserver(measure);
    observer.observe(box);
    const table = box.firstElementChild;
    if (table) observer.observe(table);
    box.addEventListener('scroll', measure, { passive: true });
    return () => {
      observer.disconnect();
      box.removeEventListener('scroll', measure);
    };
  }, []);

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
