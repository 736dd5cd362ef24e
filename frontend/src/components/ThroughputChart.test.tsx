import { render, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { makeThroughput } from '../test/fixtures';
import { ThroughputChart } from './ThroughputChart';

describe('ThroughputChart', () => {
  it('draws one group per bucket with stacked rects only where there is data', () => {
    render(<ThroughputChart data={makeThroughput([[3, 0], [0, 0], [2, 2], [0, 0, 1]])} />);
    const bars = screen.getAllByTestId('throughput-bar');
    expect(bars).toHaveLength(4);
    expect(bars.map((b) => b.querySelectorAll('rect').length)).toEqual([1, 0, 2, 1]);
    expect(bars[2]?.querySelector('.chart__bar--failed')).not.toBeNull();
    expect(bars[3]?.querySelector('.chart__bar--cancelled')).not.toBeNull();
    expect(bars[3]).toHaveAttribute('data-cancelled', '1');
  });

  it('describes the totals for screen readers and offers a data table', () => {
    render(<ThroughputChart data={makeThroughput([[3, 1], [2, 0, 4]])} />);
    expect(screen.getByRole('img', { name: /jobs finished per interval/i })).toBeInTheDocument();
    expect(
      screen.getByText('5 succeeded, 1 failed and 4 cancelled in the last 2 minutes, in 60-second buckets.'),
    ).toBeInTheDocument();
    expect(screen.getByText('Cancelled 4')).toBeInTheDocument();
    expect(screen.getAllByRole('row')).toHaveLength(3); // header + 2 buckets
  });
});
