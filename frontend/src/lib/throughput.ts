import type { Throughput } from '../api/types';
import { formatClock } from './time';

export interface ChartBar {
  start: string;
  label: string;
  succeeded: number;
  failed: number;
  cancelled: number;
  total: number;
  /** Left edge and width in chart units (0..plotWidth). */
  x: number;
  width: number;
  /** Heights in chart units (0..plotHeight): failed stacked on succeeded, cancelled on top. */
  succeededHeight: number;
  failedHeight: number;
  cancelledHeight: number;
}

export interface ChartModel {
  bars: ChartBar[];
  /** Top of the y axis (a "nice" number >= the tallest bar, at least 1). */
  yMax: number;
  yTicks: number[];
  totals: { succeeded: number; failed: number; cancelled: number };
  /** Indices of bars whose time label is shown on the x axis. */
  labelledIndices: number[];
  plotWidth: number;
  plotHeight: number;
}

/** The smallest of 1, 2, 5 x 10^k that is >= value. */
export function niceStep(value: number): number {
  if (value <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 5, 10]) {
    if (m * magnitude >= value) return m * magnitude;
  }
  return 10 * magnitude;
}

/** Axis top and ticks for a maximum count, aiming at about four intervals. */
export function yAxis(max: number, intervals = 4): { yMax: number; yTicks: number[] } {
  const step = niceStep(Math.max(max, 1) / intervals);
  const yMax = Math.max(step, Math.ceil(max / step) * step);
  const yTicks: number[] = [];
  for (let t = 0; t <= yMax; t += step) yTicks.push(t);
  return { yMax, yTicks };
}

/**
 * Turn the throughput endpoint's buckets (oldest first) into bar geometry for
 * a stacked succeeded/failed/cancelled chart of `plotWidth` x `plotHeight` units.
 */
export function shapeThroughput(
  data: Throughput,
  plotWidth: number,
  plotHeight: number,
  gapRatio = 0.2,
  maxLabels = 6,
): ChartModel {
  const buckets = [...data.buckets].sort((a, b) => Date.parse(a.start) - Date.parse(b.start));
  const n = buckets.length;
  const slot = n > 0 ? plotWidth / n : plotWidth;
  const barWidth = slot * (1 - gapRatio);
  const max = buckets.reduce((m, b) => Math.max(m, b.succeeded + b.failed + b.cancelled), 0);
  const { yMax, yTicks } = yAxis(max);
  const scale = plotHeight / yMax;

  const bars = buckets.map<ChartBar>((b, i) => ({
    start: b.start,
    label: formatClock(b.start),
    succeeded: b.succeeded,
    failed: b.failed,
    cancelled: b.cancelled,
    total: b.succeeded + b.failed + b.cancelled,
    x: i * slot + (slot - barWidth) / 2,
    width: barWidth,
    succeededHeight: b.succeeded * scale,
    failedHeight: b.failed * scale,
    cancelledHeight: b.cancelled * scale,
  }));

  const every = Math.max(1, Math.ceil(n / maxLabels));
  const labelledIndices: number[] = [];
  for (let i = n - 1; i >= 0; i -= every) labelledIndices.unshift(i);

  return {
    bars,
    yMax,
    yTicks,
    totals: {
      succeeded: buckets.reduce((s, b) => s + b.succeeded, 0),
      failed: buckets.reduce((s, b) => s + b.failed, 0),
      cancelled: buckets.reduce((s, b) => s + b.cancelled, 0),
    },
    labelledIndices,
    plotWidth,
    plotHeight,
  };
}
