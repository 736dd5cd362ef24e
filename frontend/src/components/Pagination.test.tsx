import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import { pageInfo } from '../lib/paging';
import { CursorPager, Pagination } from './Pagination';

describe('pageInfo', () => {
  it('describes the first, middle and last pages', () => {
    expect(pageInfo(53, 25, 0)).toEqual({ from: 1, to: 25, page: 1, pages: 3, prevOffset: null, nextOffset: 25 });
    expect(pageInfo(53, 25, 25)).toEqual({ from: 26, to: 50, page: 2, pages: 3, prevOffset: 0, nextOffset: 50 });
    expect(pageInfo(53, 25, 50)).toEqual({ from: 51, to: 53, page: 3, pages: 3, prevOffset: 25, nextOffset: null });
  });

  it('handles no rows and an exact fit', () => {
    expect(pageInfo(0, 25, 0)).toEqual({ from: 0, to: 0, page: 1, pages: 1, prevOffset: null, nextOffset: null });
    expect(pageInfo(50, 25, 25).nextOffset).toBeNull();
  });

  it('clamps an offset that is not on a page boundary or past the end', () => {
    expect(pageInfo(53, 25, 10).prevOffset).toBe(0);
    const past = pageInfo(10, 25, 100);
    expect(past.from).toBe(0);
    expect(past.page).toBe(1);
    expect(past.prevOffset).toBe(75);
  });
});

describe('Pagination', () => {
  it('shows the range and moves by one page', async () => {
    const onOffsetChange = vi.fn();
    render(<Pagination count={53} limit={25} offset={25} onOffsetChange={onOffsetChange} />);
    expect(screen.getByText(/26–50 of 53/)).toBeInTheDocument();
    await userEvent.click(screen.getByRole('button', { name: /next/i }));
    await userEvent.click(screen.getByRole('button', { name: /previous/i }));
    expect(onOffsetChange.mock.calls).toEqual([[50], [0]]);
  });

  it('disables the buttons at the ends', () => {
    render(<Pagination count={10} limit={25} offset={0} onOffsetChange={() => {}} />);
    expect(screen.getByRole('button', { name: /previous/i })).toBeDisabled();
    expect(screen.getByRole('button', { name: /next/i })).toBeDisabled();
  });

  it('changes the page size through a labelled select offering the given sizes', async () => {
    const onLimitChange = vi.fn();
    render(
      <Pagination
        count={100}
        limit={25}
        offset={0}
        onOffsetChange={() => {}}
        onLimitChange={onLimitChange}
        pageSizes={[10, 25, 40]}
      />,
    );
    const select = screen.getByLabelText('Rows');
    expect(within(select).getAllByRole('option').map((o) => o.textContent)).toEqual(['10', '25', '40']);
    expect(select).toHaveValue('25');
    await userEvent.selectOptions(select, '40');
    expect(onLimitChange).toHaveBeenCalledWith(40);
  });
});

describe('CursorPager', () => {
  it('enables only the directions that exist', async () => {
    const onOlder = vi.fn();
    const onNewer = vi.fn();
    render(
      <CursorPager atLatest hasNewer={false} hasOlder onNewer={onNewer} onOlder={onOlder} onLatest={() => {}} />,
    );
    expect(screen.getByRole('button', { name: /newer/i })).toBeDisabled();
    expect(screen.getByRole('button', { name: /latest/i })).toBeDisabled();
    await userEvent.click(screen.getByRole('button', { name: /older/i }));
    expect(onOlder).toHaveBeenCalledOnce();
    expect(onNewer).not.toHaveBeenCalled();
  });
});
