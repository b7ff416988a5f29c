// The geometry of the operations chart: scales, ticks and SVG paths, kept apart from the markup.

/** The smallest "nice" number (1, 2, 2.5 or 5 times a power of ten) at or above `value`. */
export function niceCeiling(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

/**
 * The y axis's ticks for values up to `max`: from 0, at most `count` steps of a nice size that is a
 * whole number of `unit`s (the axis labels round to whole items and milliseconds, so a step of
 * 0.25 would print 0, 0, 1, 1, 1), up to the first tick at or above `max`.
 */
export function axisTicks(max: number, count = 4, unit = 1): number[] {
  let step = niceCeiling(Math.max(max / count, unit));
  // 2.5 units is not a whole number of them: 5 instead.
  if (!Number.isInteger(Math.round((step / unit) * 1e9) / 1e9)) step = niceCeiling(step * 1.5);
  const steps = Math.max(1, Math.ceil(max / step - 1e-9));
  return Array.from({ length: steps + 1 }, (_, i) => i * step);
}

export interface Point {
  x: number;
  y: number | null;
}

/** An SVG path through the points; a null value breaks the line (no data in that bucket). */
export function linePath(points: Point[]): string {
  let d = '';
  let pen = false;
  for (const p of points) {
    if (p.y === null) {
      pen = false;
      continue;
    }
    d += `${pen ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`;
    pen = true;
  }
  return d;
}

/** A closed area under the points down to `baseline` (nulls count as the baseline). */
export function areaPath(points: Point[], baseline: number): string {
  if (points.length === 0) return '';
  const first = points[0]!;
  const last = points[points.length - 1]!;
  let d = `M${first.x.toFixed(1)},${baseline.toFixed(1)}`;
  for (const p of points) d += `L${p.x.toFixed(1)},${(p.y ?? baseline).toFixed(1)}`;
  return `${d}L${last.x.toFixed(1)},${baseline.toFixed(1)}Z`;
}

/** Maps a value in [0, max] to a pixel row in [top, bottom] (0 at the bottom). */
export const scaleY = (value: number, max: number, top: number, bottom: number): number => bottom - (value / (max || 1)) * (bottom - top);

/** The points a line cannot show: a value with no value on either side (a bucket alone between gaps). */
export function isolatedPoints(points: Point[]): Point[] {
  return points.filter((p, i) => p.y !== null && (points[i - 1]?.y ?? null) === null && (points[i + 1]?.y ?? null) === null);
}
