import { useEffect, useRef, useState } from 'react';

/**
 * Whether the box the returned ref is attached to hides content past its right edge (it
 * scrolls sideways and is not scrolled to the end): a narrow window otherwise hides the
 * rest with no cue. Measured again when the box, its first child or its scroll change.
 */
export function useHiddenRight<T extends HTMLElement>() {
  const ref = useRef<T>(null);
  const [hidden, setHidden] = useState(false);

  useEffect(() => {
    const box = ref.current;
    if (!box) return;
    const measure = () => setHidden(box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
    measure();
    if (typeof ResizeObserver === 'undefined') return;
    const observer = new ResizeObserver(measure);
    observer.observe(box);
    const content = box.firstElementChild;
    if (content) observer.observe(content);
    box.addEventListener('scroll', measure, { passive: true });
    return () => {
      observer.disconnect();
      box.removeEventListener('scroll', measure);
    };
  }, []);

  return [ref, hidden] as const;
}
