import { describe, expect, it } from 'vitest';
import { makeThroughput } from '../test/fixtures';
import { niceStep, shapeThroughput, yAxis } from './throughput';

describe('yAxis', () => {
  it('never collapses to zero height when nothing finished', () => {
    expect(yAxis(0)).toEqual({ yMax: 1, yTicks: [0, 1] });
  });

  it('rounds the top up to a 1-2-5 step', () => {
    expect(yAxis(7)).toEqual({ yMax: 8, yTicks: [0, 2, 4, 6, 8] });
    expect(yAxis(37)).toEqual({ yMax: 40, yTicks: [0, 10, 20, 30, 40] });
    expect(yAxis(100)).toEqual({ yMax: 100, yTicks: [0, 50, 100] });
  });

  it('picks 1, 2, 5 times a power of ten', () => {
    expect([0.3, 1, 1.5, 3, 7, 12, 45, 120].map(niceStep)).toEqual([1, 1, 2, 5, 10, 20, 50, 200]);
  });
});

describe('shapeThroughput', () => {
  it('scales heights to the tallest stacked bucket', () => {
    const model = shapeThroughput(makeThroughput([[2, 0], [3, 1], [0, 0], [6, 2]]), 400, 100);
    expect(model.yMax).toBe(8);
    expect(model.bars.map((b) => [b.succeededHeight, b.failedHeight])).toEqual([
      [25, 0],
      [37.5, 12.5],
      [0, 0],
      [75, 25],
    ]);
    expect(model.bars.map((b) => b.total)).toEqual([2, 4, 0, 8]);
    expect(model.totals).toEqual({ succeeded: 11, failed: 3, cancelled: 0 });
  });

  it('stacks cancelled jobs on top and counts them towards the axis', () => {
    const model = shapeThroughput(makeThroughput([[1, 1, 2], [0, 0, 8]]), 200, 100);
    expect(model.yMax).toBe(8);
    expect(model.bars.map((b) => [b.succeededHeight, b.failedHeight, b.cancelledHeight])).toEqual([
      [12.5, 12.5, 25],
      [0, 0, 100],
    ]);
    expect(model.bars.map((b) => b.total)).toEqual([4, 8]);
    expect(model.totals).toEqual({ succeeded: 1, failed: 1, cancelled: 10 });
  });

  it('lays bars out left to right in equal slots with a gap', () => {
    const model = shapeThroughput(makeThroughput([[1, 0], [1, 0], [1, 0], [1, 0]]), 400, 100, 0.2);
    expect(model.bars.map((b) => b.x)).toEqual([10, 110, 210, 310]);
    expect(model.bars.every((b) => b.width === 80)).toBe(true);
  });

  it('orders buckets oldest first even if the response is not', () => {
    const data = makeThroughput([[1, 0], [2, 0], [3, 0]]);
    data.buckets.reverse();
    const model = shapeThroughput(data, 300, 100);
    expect(model.bars.map((b) => b.succeeded)).toEqual([1, 2, 3]);
  });

  it('keeps a zero-filled window flat, with a non-zero axis', () => {
    const model = shapeThroughput(makeThroughput(Array.from({ length: 15 }, () => [0, 0] as [number, number])), 600, 100);
    expect(model.bars).toHaveLength(15);
    expect(model.bars.every((b) => b.succeededHeight === 0 && b.failedHeight === 0)).toBe(true);
    expect(model.yMax).toBe(1);
  });

  it('labels at most six buckets, always including the newest', () => {
    const model = shapeThroughput(makeThroughput(Array.from({ length: 15 }, () => [1, 0] as [number, number])), 600, 100);
    expect(model.labelledIndices).toEqual([2, 5, 8, 11, 14]);
    const few = shapeThroughput(makeThroughput([[1, 0], [1, 0], [1, 0]]), 600, 100);
    expect(few.labelledIndices).toEqual([0, 1, 2]);
  });

  it('handles an empty bucket list', () => {
    const model = shapeThroughput({ bucket_seconds: 60, start: '', end: '', buckets: [] }, 600, 100);
    expect(model.bars).toEqual([]);
    expect(model.totals).toEqual({ succeeded: 0, failed: 0, cancelled: 0 });
  });
});
