import { useEffect, useId, useRef, type ReactNode } from 'react';

/**
 * A modal confirmation on the native <dialog>: showModal() traps focus, makes the page
 * behind it inert and puts focus on the first button (the safe one); Escape and the
 * dismiss button both call `onDismiss`. While `pending`, neither closes it, so the
 * outcome or the error is shown where the question was asked.
 */
export function ConfirmDialog({
  open,
  title,
  children,
  confirmLabel,
  pendingLabel = 'Working…',
  dismissLabel = 'Go back',
  danger = false,
  pending = false,
  error,
  onConfirm,
  onDismiss,
}: {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  pendingLabel?: string;
  dismissLabel?: string;
  danger?: boolean;
  pending?: boolean;
  error?: string | null | undefined;
  onConfirm: () => void;
  onDismiss: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const bodyId = useId();

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    else if (!open && dialog.open) dialog.close(); // close() gives focus back to the opener
  }, [open]);

  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      aria-describedby={bodyId}
      onCancel={(e) => {
        e.preventDefault(); // Escape: let the parent's state decide, like the button does
        if (!pending) onDismiss();
      }}
    >
      {open && (
        <>
          <h2 id={titleId} className="dialog__title">
            {title}
          </h2>
          <div id={bodyId} className="dialog__body">
            {children}
          </div>
          {error && (
            <p className="form-error" role="alert">
              {error}
            </p>
          )}
          <div className="actions dialog__actions">
            <button type="button" className="button" disabled={pending} onClick={onDismiss}>
              {dismissLabel}
            </button>
            <button
              type="button"
              className={danger ? 'button button--danger' : 'button button--primary'}
              disabled={pending}
              onClick={onConfirm}
            >
              {pending ? pendingLabel : confirmLabel}
            </button>
          </div>
        </>
      )}
    </dialog>
  );
}
