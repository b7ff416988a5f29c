import { useId } from 'preact/hooks';
import { areaPath, axisTicks, isolatedPoints, linePath, scaleY, type Point } from '../../state/chart.ts';
import { formatTime } from '../../state/format.ts';

export interface ChartSeries {
  name: string;
  values: (number | null)[];
  /** `area` fills under the line. */
  kind: 'area' | 'line';
  /** The class that colours it (and dashes it: lines differ by pattern too, not colour alone). */
  className: string;
}

const W = 640;
const H = 200;
const M = { top: 12, right: 12, bottom: 28, left: 56 };

/**
 * A hand-drawn SVG chart of values over time: y axis with ticks, x axis with times, a legend,
 * and the same figures as a table for assistive technology (the drawing itself is an image
 * named by its caption).
 */
export function TimeChart({ title, summary, times, series, format }: { title: string; summary: string; times: string[]; series: ChartSeries[]; format(v: number): string }) {
  const id = useId();
  const yTicks = axisTicks(Math.max(0, ...series.flatMap((s) => s.values.filter((v): v is number => v !== null))));
  const max = yTicks.at(-1)!;
  const n = times.length;
  const x = (i: number) => M.left + (n <= 1 ? 0 : (i / (n - 1)) * (W - M.left - M.right));
  const y = (v: number) => scaleY(v, max, M.top, H - M.bottom);
  const xTicks = n <= 1 ? [0] : [0, Math.round((n - 1) / 3), Math.round((2 * (n - 1)) / 3), n - 1];

  return (
    <figure class="chart">
      <figcaption id={`${id}-cap`}>
        <strong>{title}</strong>
        <span class="legend" aria-hidden="true">
          {series.map((s) => (
            <span key={s.name} class={`legend-key ${s.className}`}>
              <svg width="22" height="10" viewBox="0 0 22 10">
                <line x1="1" y1="5" x2="21" y2="5" class="legend-line" />
              </svg>
              {s.name}
            </span>
          ))}
        </span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${id}-cap ${id}-sum`} class="chart-svg" preserveAspectRatio="xMidYMid meet">
        {yTicks.map((t) => (
          <g key={t} class="grid">
            <line x1={M.left} x2={W - M.right} y1={y(t)} y2={y(t)} />
            <text x={M.left - 6} y={y(t) + 4} text-anchor="end">
              {format(t)}
            </text>
          </g>
        ))}
        {n > 0
          ? xTicks.map((i) => (
              <text key={i} class="axis-label" x={x(i)} y={H - 8} text-anchor={i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle'}>
                {formatTime(times[i]!).slice(0, 5)}
              </text>
            ))
          : null}
        {series.map((s) => {
          const points: Point[] = s.values.map((v, i) => ({ x: x(i), y: v === null ? null : y(v) }));
          return (
            <g key={s.name} class={s.className}>
              {s.kind === 'area' ? <path class="area" d={areaPath(points, y(0))} /> : null}
              <path class="line" d={linePath(points)} />
              {isolatedPoints(points).map((p) => (
                <circle key={p.x} class="dot" cx={p.x} cy={p.y!} r={3} />
              ))}
            </g>
          );
        })}
        {series.every((s) => s.values.every((v) => v === null || v === 0)) ? (
          <text x={W / 2} y={H / 2} text-anchor="middle" class="axis-label">
            Nothing in this window
          </text>
        ) : null}
      </svg>
      <p id={`${id}-sum`} class="sr-only">
        {summary}
      </p>
      {/* A table cannot be shrunk to nothing itself; its wrapper can. */}
      <div class="sr-only">
      <table>
        <caption>{title}, by 10-second bucket (those with something in them)</caption>
        <thead>
          <tr>
            <th scope="col">Bucket start</th>
            {series.map((s) => (
              <th scope="col" key={s.name}>
                {s.name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {times.map((t, i) => series.some((s) => s.values[i] !== null && s.values[i] !== undefined && s.values[i] !== 0) ? (
            <tr key={t}>
              <th scope="row">{formatTime(t)}</th>
              {series.map((s) => (
                <td key={s.name}>{s.values[i] === null || s.values[i] === undefined ? '—' : format(s.values[i]!)}</td>
              ))}
            </tr>
          ) : null)}
        </tbody>
      </table>
      </div>
    </figure>
  );
}
