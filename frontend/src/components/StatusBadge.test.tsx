import { render, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { EventTypeBadge, StatusBadge } from './StatusBadge';

describe('StatusBadge', () => {
  it.each([
    ['queued', 'badge--neutral', '○'],
    ['running', 'badge--running', '◐'],
    ['succeeded', 'badge--success', '✓'],
    ['failed', 'badge--danger', '✕'],
    ['cancelled', 'badge--muted', '⊘'],
  ])('shows %s with its colour and icon', (status, tone, icon) => {
    render(<StatusBadge status={status} />);
    const badge = screen.getByText(status);
    expect(badge).toHaveClass('badge', tone);
    expect(badge).toHaveAttribute('data-status', status);
    expect(badge.querySelector('[aria-hidden="true"]')).toHaveTextContent(icon);
  });

  it('falls back to neutral for a status it does not know', () => {
    render(<StatusBadge status="paused" />);
    expect(screen.getByText('paused')).toHaveClass('badge--neutral');
  });
});

describe('EventTypeBadge', () => {
  it.each([
    ['succeeded', 'badge--success'],
    ['failed', 'badge--danger'],
    ['retry_scheduled', 'badge--warning'],
    ['timeout_requeued', 'badge--warning'],
    ['manual_retry', 'badge--accent'],
    ['claimed', 'badge--running'],
    ['cancel_requested', 'badge--warning'],
    ['cancelled', 'badge--muted'],
    ['released', 'badge--neutral'],
    ['snoozed', 'badge--neutral'],
  ])('colours %s as %s', (type, tone) => {
    render(<EventTypeBadge type={type} />);
    expect(screen.getByText(type)).toHaveClass(tone);
  });
});
