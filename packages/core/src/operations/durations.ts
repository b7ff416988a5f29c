/**
 * Upper bounds (ms) of the item-duration histogram every process keeps and reports per time
 * bucket; a last count holds what is above the last bound. Fixed, so histograms of different
 * processes and buckets add up element by element.
 */
export const DURATION_BOUNDS_MS: readonly number[] = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 300_000];

/** The histogram slot of a duration. */
export function durationSlot(ms: number): number {
  const slot = DURATION_BOUNDS_MS.findIndex((bound) => ms <= bound);
  return slot === -1 ? DURATION_BOUNDS_MS.length : slot;
}

/**
 * The `q` quantile (0..1) of a histogram, as the upper bound of the slot it falls in (the last
 * bound for the overflow slot); null for an empty histogram.
 */
export function histogramQuantile(counts: readonly number[], q: number): number | null {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  let seen = 0;
  for (const [slot, n] of counts.entries()) {
    seen += n;
    if (seen >= q * total) return DURATION_BOUNDS_MS[Math.min(slot, DURATION_BOUNDS_MS.length - 1)]!;
  }
  return DURATION_BOUNDS_MS.at(-1)!;
}
