import type { Throughput } from '../api/types';
import { useElementWidth } from '../hooks/useElementWidth';
import { shapeThroughput } from '../lib/throughput';
import { formatExact, zoneName } from '../lib/time';

const HEIGHT = 240;
const MARGIN = { top: 12, right: 8, bottom: 28, left: 36 };

/** Stacked bars of jobs finished per bucket: succeeded (green), failed (red), cancelled (grey). */
export function ThroughputChart({ data }: { data: Throughput }) {
  // Drawn at the container's real pixel width so text stays legible on a phone.
  const [ref, width] = useElementWidth<HTMLElement>(640);
  const plotW = Math.max(100, width - MARGIN.left - MARGIN.right);
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const maxLabels = Math.max(2, Math.min(8, Math.floor(plotW / 70)));
  const model = shapeThroughput(data, plotW, plotH, 0.2, maxLabels);
  const minutes = Math.round((Date.parse(data.end) - Date.parse(data.start)) / 60_000);
  const summary =
    `${model.totals.succeeded} succeeded, ${model.totals.failed} failed and ${model.totals.cancelled} cancelled ` +
    `in the last ${minutes} minutes, ` +
    `in ${data.bucket_seconds}-second buckets.`;

  return (
    <figure className="chart" ref={ref}>
      <svg
        width={plotW + MARGIN.left + MARGIN.right}
        height={HEIGHT}
        viewBox={`0 0 ${plotW + MARGIN.left + MARGIN.right} ${HEIGHT}`}
        role="img"
        aria-labelledby="throughput-title throughput-desc"
        className="chart__svg"
      >
        <title id="throughput-title">Jobs finished per interval</title>
        <desc id="throughput-desc">{summary}</desc>
        <g transform={`translate(${MARGIN.left},${MARGIN.top})`}>
          {model.yTicks.map((t) => {
            const y = plotH - (t / model.yMax) * plotH;
            return (
              <g key={t} className="chart__tick">
                <line x1={0} x2={plotW} y1={y} y2={y} />
                <text x={-6} y={y} dy="0.32em" textAnchor="end">
                  {t}
                </text>
              </g>
            );
          })}
          {model.bars.map((bar) => (
            <g
              key={bar.start}
              data-testid="throughput-bar"
              data-succeeded={bar.succeeded}
              data-failed={bar.failed}
              data-cancelled={bar.cancelled}
            >
              <title>
                {`${formatExact(bar.start)}: ${bar.succeeded} succeeded, ${bar.failed} failed, ${bar.cancelled} cancelled`}
              </title>
              {bar.succeededHeight > 0 && (
                <rect
                  className="chart__bar chart__bar--succeeded"
                  x={bar.x}
                  width={bar.width}
                  y={plotH - bar.succeededHeight}
                  height={bar.succeededHeight}
                />
              )}
              {bar.failedHeight > 0 && (
                <rect
                  className="chart__bar chart__bar--failed"
                  x={bar.x}
                  width={bar.width}
                  y={plotH - bar.succeededHeight - bar.failedHeight}
                  height={bar.failedHeight}
                />
              )}
              {bar.cancelledHeight > 0 && (
                <rect
                  className="chart__bar chart__bar--cancelled"
                  x={bar.x}
                  width={bar.width}
                  y={plotH - bar.succeededHeight - bar.failedHeight - bar.cancelledHeight}
                  height={bar.cancelledHeight}
                />
              )}
            </g>
          ))}
          <line className="chart__axis" x1={0} x2={plotW} y1={plotH} y2={plotH} />
          {model.labelledIndices.map((i) => {
            const bar = model.bars[i];
            if (!bar) return null;
            return (
              <text
                key={bar.start}
                className="chart__label"
                x={bar.x + bar.width / 2}
                y={plotH + 18}
                textAnchor="middle"
              >
                {bar.label}
              </text>
            );
          })}
        </g>
      </svg>
      <figcaption className="chart__legend">
        <span className="legend legend--succeeded">Succeeded {model.totals.succeeded}</span>
        <span className="legend legend--failed">Failed {model.totals.failed}</span>
        <span className="legend legend--cancelled">Cancelled {model.totals.cancelled}</span>
        <span className="muted" data-zone>
          per {data.bucket_seconds}s · times in {zoneName(data.end)}
        </span>
      </figcaption>
      <details className="chart__table">
        <summary>Show as table</summary>
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Jobs finished per interval</caption>
            <thead>
              <tr>
                <th scope="col">Interval start</th>
                <th scope="col">Succeeded</th>
                <th scope="col">Failed</th>
                <th scope="col">Cancelled</th>
              </tr>
            </thead>
            <tbody>
              {model.bars.map((bar) => (
                <tr key={bar.start}>
                  <td>{formatExact(bar.start)}</td>
                  <td>{bar.succeeded}</td>
                  <td>{bar.failed}</td>
                  <td>{bar.cancelled}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
