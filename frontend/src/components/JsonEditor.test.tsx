import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { useState } from 'react';
import { describe, expect, it } from 'vitest';
import { JsonEditor } from './JsonEditor';

function Harness({ initial, serverErrors }: { initial: string; serverErrors?: string[] }) {
  const [value, setValue] = useState(initial);
  return (
    <JsonEditor id="payload" label="Payload" value={value} onChange={setValue} serverErrors={serverErrors} maxBytes={64} />
  );
}

describe('JsonEditor', () => {
  it('is valid and unmarked for a JSON object', () => {
    render(<Harness initial='{"a": 1}' />);
    const box = screen.getByLabelText('Payload');
    expect(box).toHaveAttribute('aria-invalid', 'false');
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });

  it('flags invalid JSON as you type and links the message to the field', async () => {
    render(<Harness initial="" />);
    const box = screen.getByLabelText('Payload');
    await userEvent.type(box, '{{"a": 1');
    expect(box).toHaveAttribute('aria-invalid', 'true');
    const alert = screen.getByRole('alert');
    expect(alert).toHaveTextContent("Invalid JSON at line 1, column 8: expected ',' or '}', found end of input");
    expect(box.getAttribute('aria-describedby')).toContain(alert.id);
    expect(screen.getByRole('button', { name: 'Format' })).toBeDisabled();
  });

  it('clears the error once the JSON is fixed', async () => {
    render(<Harness initial='{"a": }' />);
    const box = screen.getByLabelText('Payload');
    expect(box).toHaveAttribute('aria-invalid', 'true');
    await userEvent.clear(box);
    await userEvent.type(box, '{{"a": 2}');
    expect(box).toHaveAttribute('aria-invalid', 'false');
  });

  it('rejects arrays and payloads over the size limit', async () => {
    const { unmount } = render(<Harness initial="[1, 2]" />);
    expect(screen.getByRole('alert')).toHaveTextContent('Payload must be a JSON object, not an array.');
    unmount();
    render(<Harness initial={JSON.stringify({ text: 'x'.repeat(80) })} />);
    expect(screen.getByRole('alert')).toHaveTextContent(/limit is 64/);
  });

  it('pretty-prints on Format', async () => {
    render(<Harness initial='{"a":1,"b":[true]}' />);
    await userEvent.click(screen.getByRole('button', { name: 'Format' }));
    expect(screen.getByLabelText('Payload')).toHaveValue('{\n  "a": 1,\n  "b": [\n    true\n  ]\n}');
  });

  it('shows errors from the API next to the editor', () => {
    render(<Harness initial="{}" serverErrors={['Unknown key "x".']} />);
    expect(screen.getByLabelText('Payload')).toHaveAttribute('aria-invalid', 'true');
    expect(screen.getByRole('alert')).toHaveTextContent('Unknown key "x".');
  });
});
