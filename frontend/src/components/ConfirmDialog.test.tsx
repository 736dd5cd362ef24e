import { fireEvent, render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { ConfirmDialog } from './ConfirmDialog';

function renderDialog(props: Partial<Parameters<typeof ConfirmDialog>[0]> = {}) {
  const onConfirm = vi.fn();
  const onDismiss = vi.fn();
  const utils = render(
    <ConfirmDialog
      open
      title="Cancel job 8421aca2?"
      confirmLabel="Cancel job"
      dismissLabel="Keep it"
      danger
      onConfirm={onConfirm}
      onDismiss={onDismiss}
      {...props}
    >
      <p>It stops at its next check-in.</p>
    </ConfirmDialog>,
  );
  return { ...utils, onConfirm, onDismiss };
}

describe('ConfirmDialog', () => {
  it('is a dialog named by its title and described by its body', () => {
    renderDialog();
    const dialog = screen.getByRole('dialog', { name: 'Cancel job 8421aca2?' });
    expect(dialog).toHaveAccessibleDescription('It stops at its next check-in.');
    expect(screen.getByRole('button', { name: 'Cancel job' })).toHaveClass('button--danger');
  });

  it('confirms and dismisses through its buttons', async () => {
    const { onConfirm, onDismiss } = renderDialog();
    await userEvent.click(screen.getByRole('button', { name: 'Cancel job' }));
    expect(onConfirm).toHaveBeenCalledTimes(1);
    await userEvent.click(screen.getByRole('button', { name: 'Keep it' }));
    expect(onDismiss).toHaveBeenCalledTimes(1);
  });

  it('treats Escape as dismiss, except while the action runs', () => {
    const { onDismiss, rerender, onConfirm } = renderDialog();
    const escape = () => fireEvent(screen.getByRole('dialog'), new Event('cancel', { cancelable: true }));
    escape();
    expect(onDismiss).toHaveBeenCalledTimes(1);
    rerender(
      <ConfirmDialog open pending title="t" confirmLabel="Cancel job" onConfirm={onConfirm} onDismiss={onDismiss}>
        body
      </ConfirmDialog>,
    );
    escape();
    expect(onDismiss).toHaveBeenCalledTimes(1);
  });

  it('disables both buttons while pending and shows an error as an alert', () => {
    renderDialog({ pending: true, pendingLabel: 'Cancelling…', error: '409: Job is succeeded.' });
    expect(screen.getByRole('button', { name: 'Cancelling…' })).toBeDisabled();
    expect(screen.getByRole('button', { name: 'Keep it' })).toBeDisabled();
    expect(screen.getByRole('alert')).toHaveTextContent('409: Job is succeeded.');
  });

  it('closes when no longer open', () => {
    const { rerender, onConfirm, onDismiss } = renderDialog();
    rerender(
      <ConfirmDialog open={false} title="t" confirmLabel="c" onConfirm={onConfirm} onDismiss={onDismiss}>
        body
      </ConfirmDialog>,
    );
    expect(screen.queryByRole('dialog')).not.toBeInTheDocument();
  });
});
