import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { KeyField, NumberField } from './FormField';

describe('NumberField', () => {
  it('labels a numeric input, ties its hint and errors to it and reports what is typed', async () => {
    const onChange = vi.fn();
    render(
      <NumberField
        id="n"
        label="Priority"
        hint="Higher runs first."
        errors={['Too big.']}
        min={0}
        max={9}
        value=""
        onChange={onChange}
      />,
    );
    const input = screen.getByLabelText('Priority');
    expect(input).toHaveAttribute('type', 'number');
    expect(input).toHaveAttribute('inputmode', 'numeric');
    expect(input).toHaveAttribute('min', '0');
    expect(input).toHaveAttribute('max', '9');
    expect(input).toHaveAttribute('aria-invalid', 'true');
    expect(input).toHaveAccessibleDescription('Too big. Higher runs first.');
    await userEvent.type(input, '7');
    expect(onChange).toHaveBeenCalledWith('7');
  });
});

describe('KeyField', () => {
  it('types a key exactly: monospace, no completion or spell check, at most maxLength', () => {
    render(<KeyField id="k" label="Unique key" maxLength={255} value="a" onChange={() => {}} />);
    const input = screen.getByLabelText('Unique key');
    expect(input).toHaveClass('mono');
    expect(input).toHaveAttribute('autocomplete', 'off');
    expect(input).toHaveAttribute('spellcheck', 'false');
    expect(input).toHaveAttribute('maxlength', '255');
    expect(input).not.toHaveAttribute('list');
    expect(input).toHaveAttribute('aria-invalid', 'false');
  });

  it('offers its suggestions as a datalist', () => {
    render(
      <KeyField id="q" label="Queue" maxLength={64} suggestions={['emails', 'reports']} value="" onChange={() => {}} />,
    );
    const input = screen.getByLabelText('Queue');
    expect(input).toHaveAttribute('list', 'q-names');
    const options = [...document.querySelectorAll('#q-names option')].map((o) => o.getAttribute('value'));
    expect(options).toEqual(['emails', 'reports']);
  });
});
