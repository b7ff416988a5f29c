// Operations: which processes run a runtime (each reports itself every few seconds), what they
// settled per 10-second bucket with a histogram of durations, and the strict limits' slots. Each
// process writes its own rows only (one upsert of its presence, one of its buckets), so reports
// never contend with each other or with the hot task rows.
import type { MetricPoint, MetricSample, SlotUsage, WorkerPresence, WorkerRecord } from '@fanout/core';
import { json } from '../json.ts';
import type { PrismaQueryable } from '../prisma-like.ts';

export async function reportPresence(db: PrismaQueryable, worker: WorkerPresence, samples: readonly MetricSample[]): Promise<void> {
  await db.$queryRaw`
    INSERT INTO fanout_worker (id, role, host, pid, kinds, concurrency, in_flight, stats, started_at, seen_at)
    VALUES (${worker.id}::uuid, ${worker.role}, ${worker.host}, ${worker.pid}::int, ${[...worker.kinds]}::text[], ${worker.concurrency}::int,
            ${worker.inFlight}::int, ${json(worker.stats)}::jsonb, ${worker.startedAt}::timestamptz, now())
    ON CONFLICT (id) DO UPDATE SET in_flight = EXCLUDED.in_flight, stats = EXCLUDED.stats, concurrency = EXCLUDED.concurrency, seen_at = now()`;
  if (samples.length === 0) return;
  // Histograms are added element by element: a bucket reported in two parts adds up.
  await db.$queryRaw`
    INSERT INTO fanout_metric (bucket, worker_id, kind, settled, failed, durations)
    SELECT x.bucket, ${worker.id}::uuid, x.kind, x.settled, x.failed, string_to_array(x.durations, ',')::int[]
    FROM unnest(${samples.map((s) => s.bucket)}::timestamptz[], ${samples.map((s) => s.kind)}::text[], ${samples.map((s) => s.settled)}::int[],
                ${samples.map((s) => s.failed)}::int[], ${samples.map((s) => s.durations.join(','))}::text[]) AS x(bucket, kind, settled, failed, durations)
    ON CONFLICT (bucket, worker_id, kind) DO UPDATE SET
      settled = fanout_metric.settled + EXCLUDED.settled,
      failed = fanout_metric.failed + EXCLUDED.failed,
      durations = (SELECT array_agg(a + b ORDER BY i) FROM unnest(fanout_metric.durations, EXCLUDED.durations) WITH ORDINALITY AS d(a, b, i))`;
}

export async function removeWorker(db: PrismaQueryable, id: string): Promise<void> {
  await db.$queryRaw`DELETE FROM fanout_worker WHERE id = ${id}::uuid`;
}

export async function workers(db: PrismaQueryable, kinds: readonly string[], withinMs: number): Promise<WorkerRecord[]> {
  const rows = await db.$queryRaw<
    { id: string; role: string; host: string; pid: number; kinds: string[]; concurrency: number; in_flight: number; stats: Record<string, unknown>; started_at: Date; seen_at: Date }[]
  >`
    SELECT * FROM fanout_worker
    WHERE seen_at > now() - ${withinMs}::int * interval '1 millisecond'
      AND (cardinality(${[...kinds]}::text[]) = 0 OR kinds && ${[...kinds]}::text[])
    ORDER BY started_at, id`;
  return rows.map((r) => ({
    id: r.id,
    role: r.role,
    host: r.host,
    pid: r.pid,
    kinds: r.kinds,
    concurrency: r.concurrency,
    inFlight: r.in_flight,
    stats: r.stats,
    startedAt: r.started_at,
    seenAt: r.seen_at,
  }));
}

export async function metrics(db: PrismaQueryable, kinds: readonly string[], since: Date): Promise<MetricPoint[]> {
  const rows = await db.$queryRaw<{ bucket: Date; settled: number; failed: number; durations: number[] }[]>`
    SELECT bucket, sum(settled)::int AS settled, sum(failed)::int AS failed,
           (SELECT array_agg(total ORDER BY i) FROM (
              SELECT i, sum(v)::int AS total FROM fanout_metric m2, unnest(m2.durations) WITH ORDINALITY AS d(v, i)
              WHERE m2.bucket = m.bucket AND (cardinality(${[...kinds]}::text[]) = 0 OR m2.kind = ANY(${[...kinds]}::text[]))
              GROUP BY i) h) AS durations
    FROM fanout_metric m
    WHERE bucket >= ${since}::timestamptz AND (cardinality(${[...kinds]}::text[]) = 0 OR kind = ANY(${[...kinds]}::text[]))
    GROUP BY bucket ORDER BY bucket`;
  return rows.map((r) => ({ bucket: r.bucket, settled: r.settled, failed: r.failed, durations: r.durations ?? [] }));
}

export async function slotUsage(db: PrismaQueryable): Promise<SlotUsage[]> {
  return db.$queryRaw<SlotUsage[]>`
    SELECT name, count(*)::int AS slots, count(*) FILTER (WHERE available_at > clock_timestamp())::int AS busy
    FROM fanout_slot GROUP BY name ORDER BY name`;
}

export async function pruneOperations(db: PrismaQueryable, olderThanMs: number): Promise<void> {
  await db.$queryRaw`DELETE FROM fanout_worker WHERE seen_at < now() - ${olderThanMs}::int * interval '1 millisecond'`;
  await db.$queryRaw`DELETE FROM fanout_metric WHERE bucket < now() - ${olderThanMs}::int * interval '1 millisecond'`;
}
