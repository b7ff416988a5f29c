import type { LimitObserver } from '../limits/global-limit.ts';
import type { MetricSample } from '../store/types.ts';
import { DURATION_BOUNDS_MS, durationSlot } from './durations.ts';

/** Width of a metrics bucket. */
export const BUCKET_MS = 10_000;

export interface LimitStats {
  kind: 'global' | 'rate';
  limit: number;
  /** Callers of this process waiting for a slot right now. */
  waiting: number;
  /** Waits that ended, and how long they took in all. */
  waits: number;
  waitedMs: number;
}

/** What the maintenance loop repaired, since the process started. */
export interface RecoveryCounts {
  /** Items whose lease lapsed, given again. */
  lapsedRequeued: number;
  /** Items whose lease lapsed on their last attempt, failed. */
  lapsedFailed: number;
  /** Quiet running tasks with items to run and no job to take them, given jobs again. */
  orphansRequeued: number;
  /** Tasks whose counters disagreed with their items, repaired. */
  countersRepaired: number;
}

/** How long a step of the maintenance loop took in this process: its passes, in all, the longest. */
export interface MaintenanceStepStats {
  passes: number;
  totalMs: number;
  maxMs: number;
}

/**
 * What one process did, kept in memory and reported with its presence: items settled per
 * bucket and kind with a duration histogram, handlers in flight, waits for the shared limits,
 * and the maintenance loop's recoveries. Only counting, no I/O: it sits on the item's path.
 */
export class RuntimeStats {
  readonly startedAt = new Date();
  inFlight = 0;
  readonly recoveries: RecoveryCounts = { lapsedRequeued: 0, lapsedFailed: 0, orphansRequeued: 0, countersRepaired: 0 };
  readonly limits = new Map<string, LimitStats>();
  /** The maintenance loop's steps (recover, overdue, reconcile, announce, fanIn, retention), timed. */
  readonly maintenance = new Map<string, MaintenanceStepStats>();
  /** More counters for the presence report (telemetry's, a live stream's), merged into `snapshot()`. */
  readonly reporters: Array<() => Record<string, unknown>> = [];
  #samples = new Map<string, MetricSample & { durations: number[] }>();

  /** An item's outcome was stored: `durationMs` is how long its handler ran (null if it did not). */
  settled(kind: string, status: 'succeeded' | 'failed' | 'cancelled', durationMs: number | null): void {
    const bucket = Math.floor(Date.now() / BUCKET_MS) * BUCKET_MS;
    const key = `${bucket}\u0000${kind}`;
    let sample = this.#samples.get(key);
    if (!sample) {
      sample = { bucket: new Date(bucket), kind, settled: 0, failed: 0, durations: new Array<number>(DURATION_BOUNDS_MS.length + 1).fill(0) };
      this.#samples.set(key, sample);
    }
    sample.settled++;
    if (status === 'failed') sample.failed++;
    if (durationMs !== null) sample.durations[durationSlot(durationMs)]!++;
  }

  /** The samples gathered since the last call (they are reported once). */
  drainSamples(): MetricSample[] {
    const samples = [...this.#samples.values()];
    this.#samples = new Map();
    return samples;
  }

  /** Puts samples back after a failed report, so they are sent with the next one. */
  restoreSamples(samples: readonly MetricSample[]): void {
    for (const sample of samples) {
      const key = `${sample.bucket.getTime()}\u0000${sample.kind}`;
      const current = this.#samples.get(key);
      if (!current) {
        this.#samples.set(key, { ...sample, durations: [...sample.durations] });
        continue;
      }
      current.settled += sample.settled;
      current.failed += sample.failed;
      sample.durations.forEach((n, i) => (current.durations[i] = (current.durations[i] ?? 0) + n));
    }
  }

  /** A maintenance step took `ms`. */
  maintenanceStep(step: string, ms: number): void {
    let stats = this.maintenance.get(step);
    if (!stats) this.maintenance.set(step, (stats = { passes: 0, totalMs: 0, maxMs: 0 }));
    stats.passes++;
    stats.totalMs += ms;
    stats.maxMs = Math.max(stats.maxMs, ms);
  }

  /** The observer a limit reports its waits to. */
  limitObserver(name: string, kind: 'global' | 'rate', limit: number): LimitObserver {
    let stats = this.limits.get(name);
    if (!stats) this.limits.set(name, (stats = { kind, limit, waiting: 0, waits: 0, waitedMs: 0 }));
    stats.limit = limit;
    const s = stats;
    return {
      waitStarted: () => void s.waiting++,
      waitEnded: (waitedMs) => {
        s.waiting--;
        s.waits++;
        s.waitedMs += waitedMs;
      },
    };
  }

  /** Counters for the presence report. */
  snapshot(): Record<string, unknown> {
    const more = Object.assign({}, ...this.reporters.map((report) => report()));
    return {
      ...more,
      recoveries: { ...this.recoveries },
      limits: Object.fromEntries([...this.limits].map(([name, s]) => [name, { ...s, waitedMs: Math.round(s.waitedMs) }])),
      maintenance: Object.fromEntries([...this.maintenance].map(([step, s]) => [step, { passes: s.passes, totalMs: Math.round(s.totalMs), maxMs: Math.round(s.maxMs) }])),
    };
  }
}
