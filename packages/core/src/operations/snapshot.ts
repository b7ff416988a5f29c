import type { PgBoss } from 'pg-boss';
import type { AnyFanoutDefinition } from '../define/define-fanout.ts';
import type { FanoutStore, MetricPoint } from '../store/types.ts';
import { histogramQuantile } from './durations.ts';
import type { TaskAttention } from '../telemetry/task-gauges.ts';
import { BUCKET_MS, type LimitStats, type RecoveryCounts } from './runtime-stats.ts';

/** A process is listed as lost once it has not reported for this long (it reports every 5 s). */
export const LOST_AFTER_MS = 20_000;

export interface OperationsSnapshot {
  at: Date;
  queues: { name: string; queued: number; active: number; deferred: number; deadLetter: number }[];
  workers: { id: string; role: string; host: string; pid: number; startedAt: Date; lastSeenAt: Date; alive: boolean; concurrency: number; inFlight: number }[];
  limits: { name: string; kind: 'global' | 'rate'; limit: number; inUse: number; waiting: number; waits: number; waitedMs: number }[];
  /** Every 10-second bucket of the window that has ended, oldest first (an empty one: 0 settled, null quantiles). */
  series: { at: Date; settled: number; failed: number; p50Ms: number | null; p95Ms: number | null }[];
  /** What the maintenance loops of the processes listed repaired since they started. */
  recoveries: RecoveryCounts;
  /**
   * Tasks to look at (running past their deadline, making no progress), read like the
   * `fanout.tasks.*` gauges; null when the runtime reads no task gauges.
   */
  attention: TaskAttention | null;
  /** Failed and retried items by error type, claims lost by live workers, since the processes listed started (the `fanout.items.*` counters). */
  errors: { code: string; failed: number; retried: number }[];
  leasesLost: number;
  /** Live streams open on the live processes now, and broadcasts that failed since they started. */
  live: { sseClients: number; notifyFailures: number };
}

/**
 * What an operator looks at when a batch is slow: queue depths, live and lost processes, the
 * shared limits (slots busy, callers waiting), throughput and latency per 10 s over the last
 * `windowMs`, and the maintenance loop's recoveries. For the given definitions only.
 */
export async function operationsSnapshot(
  store: FanoutStore,
  boss: PgBoss,
  definitions: readonly AnyFanoutDefinition[],
  windowMs = 15 * 60_000,
  attention: () => Promise<TaskAttention | null> = async () => null,
): Promise<OperationsSnapshot> {
  const kinds = definitions.map((d) => d.name);
  const now = Date.now();
  const since = Math.floor((now - windowMs) / BUCKET_MS) * BUCKET_MS;
  const [queues, workers, slots, points, tasks] = await Promise.all([
    boss.getQueues(definitions.flatMap((d) => [d.managerQueue, d.childQueue, d.deadLetterQueue])),
    store.workers(kinds, 60 * 60_000),
    store.slotUsage(),
    store.metrics(kinds, new Date(since)),
    attention(),
  ]);
  const errors = new Map<string, { code: string; failed: number; retried: number }>();
  let leasesLost = 0;
  const live = { sseClients: 0, notifyFailures: 0 };
  const byName = new Map(queues.map((q) => [q.name, q]));
  const recoveries: RecoveryCounts = { lapsedRequeued: 0, lapsedFailed: 0, orphansRequeued: 0, countersRepaired: 0 };
  const limits = new Map<string, Omit<LimitStats, 'kind'> & { kind: 'global' | 'rate' }>();
  for (const worker of workers) {
    const stats = worker.stats as {
      recoveries?: Partial<RecoveryCounts>;
      limits?: Record<string, LimitStats>;
      telemetry?: { errors?: Record<string, { failed: number; retried: number }>; leasesLost?: number };
      live?: { clients?: { task?: number; tenant?: number }; notifyFailures?: number };
    };
    for (const key of Object.keys(recoveries) as (keyof RecoveryCounts)[]) recoveries[key] += stats.recoveries?.[key] ?? 0;
    for (const [code, e] of Object.entries(stats.telemetry?.errors ?? {})) {
      const sum = errors.get(code) ?? { code, failed: 0, retried: 0 };
      sum.failed += e.failed;
      sum.retried += e.retried;
      errors.set(code, sum);
    }
    leasesLost += stats.telemetry?.leasesLost ?? 0;
    live.notifyFailures += stats.live?.notifyFailures ?? 0;
    if (now - worker.seenAt.getTime() > LOST_AFTER_MS) continue; // a lost process waits for nothing
    live.sseClients += (stats.live?.clients?.task ?? 0) + (stats.live?.clients?.tenant ?? 0);
    for (const [name, l] of Object.entries(stats.limits ?? {})) {
      const sum = limits.get(name) ?? { kind: l.kind, limit: l.limit, waiting: 0, waits: 0, waitedMs: 0 };
      sum.waiting += l.waiting;
      sum.waits += l.waits;
      sum.waitedMs += l.waitedMs;
      limits.set(name, sum);
    }
  }
  const busy = new Map(slots.map((s) => [s.name, s]));
  return {
    at: new Date(now),
    queues: definitions.flatMap((d) =>
      [d.managerQueue, d.childQueue].map((name) => {
        const q = byName.get(name);
        return { name, queued: q?.queuedCount ?? 0, active: q?.activeCount ?? 0, deferred: q?.deferredCount ?? 0, deadLetter: name === d.childQueue ? (byName.get(d.deadLetterQueue)?.queuedCount ?? 0) : 0 };
      }),
    ),
    workers: workers.map((w) => ({
      id: w.id,
      role: w.role,
      host: w.host,
      pid: w.pid,
      startedAt: w.startedAt,
      lastSeenAt: w.seenAt,
      alive: now - w.seenAt.getTime() <= LOST_AFTER_MS,
      concurrency: w.concurrency,
      inFlight: w.inFlight,
    })),
    limits: [...limits].map(([name, l]) => ({ name, kind: l.kind, limit: l.limit, inUse: busy.get(name)?.busy ?? 0, waiting: l.waiting, waits: l.waits, waitedMs: l.waitedMs })),
    series: denseSeries(points, since, now),
    recoveries,
    attention: tasks,
    errors: [...errors.values()].sort((a, b) => b.failed + b.retried - (a.failed + a.retried)),
    leasesLost,
    live,
  };
}

/**
 * Every bucket of the window, oldest first, up to the last one that has ended: the store keeps only
 * buckets in which something settled, and a chart of those alone would join 12:08 to 12:20 as
 * neighbours; the bucket still filling (processes report every 5 s) would read as a fall to 0.
 */
function denseSeries(points: readonly MetricPoint[], since: number, now: number): OperationsSnapshot['series'] {
  const byBucket = new Map(points.map((p) => [p.bucket.getTime(), p]));
  const series: OperationsSnapshot['series'] = [];
  for (let at = since; at + BUCKET_MS <= now; at += BUCKET_MS) {
    const p = byBucket.get(at);
    series.push(
      p
        ? { at: p.bucket, settled: p.settled, failed: p.failed, p50Ms: histogramQuantile(p.durations, 0.5), p95Ms: histogramQuantile(p.durations, 0.95) }
        : { at: new Date(at), settled: 0, failed: 0, p50Ms: null, p95Ms: null },
    );
  }
  return series;
}
