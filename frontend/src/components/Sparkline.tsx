/**
 * A tiny bar chart of counts per bucket (a type's failures), oldest first. Its accessible
 * name says what it shows in words; the bars are decoration for sighted readers.
 */
export function Sparkline({ values, label }: { values: readonly number[]; label: string }) {
  const max = Math.max(0, ...values);
  const width = 80;
  const height = 20;
  const step = values.length > 0 ? width / values.length : width;
  return (
    <svg
      className="sparkline"
      role="img"
      aria-label={label}
      viewBox={`0 0 ${width} ${height}`}
      width={width}
      height={height}
      preserveAspectRatio="none"
      data-total={values.reduce((n, v) => n + v, 0)}
    >
      <line className="sparkline__base" x1={0} y1={height - 0.5} x2={width} y2={height - 0.5} />
      {max > 0 &&
        values.map((value, i) =>
          value > 0 ? (
            <rect
              key={i}
              className="sparkline__bar"
              x={i * step}
              width={Math.max(step - 0.5, 0.5)}
              // At least 2 px, so a single failure among hundreds still shows.
              y={height - Math.max((value / max) * height, 2)}
              height={Math.max((value / max) * height, 2)}
            />
          ) : null,
        )}
    </svg>
  );
}
