// Endings announced at least once per round. The statement that finishes a task commits its
// terminal status; the process that ran it announces the ending (its listeners, and the awaited
// broadcast) and then records the round as announced. When that process dies in between, or the
// broadcast fails, the round stays unannounced: a maintenance pass claims such tasks (only those
// that ended more than `graceMs` ago, so the finishing process has time to do it itself) under a
// short lease, so two passes do not announce one ending together, and announces them again.
import type { TaskCounts } from '@fanout/core';
import type { PrismaQueryable } from '../prisma-like.ts';
import { toCounts, type CountsRow } from '../rows.ts';

export async function markAnnounced(db: PrismaQueryable, taskId: string, round: number): Promise<void> {
  await db.$queryRaw`
    UPDATE fanout_task SET announced_round = ${round}::int, announce_lease_until = NULL
    WHERE id = ${taskId}::uuid AND announced_round < ${round}::int`;
}

/** `markAnnounced` for several tasks in one statement (their rows locked in id order by `locked`, like every batch). */
export async function markAnnouncedMany(db: PrismaQueryable, tasks: ReadonlyArray<{ taskId: string; round: number }>): Promise<void> {
  await db.$queryRaw`
    -- The arrays as scalar subqueries: planned once per connection (see \`poolQueryable\`).
    WITH v AS (SELECT * FROM unnest((SELECT ${tasks.map((t) => t.taskId)}::uuid[]), (SELECT ${tasks.map((t) => t.round)}::int[])) AS v(id, round)),
    locked AS (SELECT t.id FROM fanout_task t JOIN v ON v.id = t.id ORDER BY t.id FOR UPDATE OF t)
    UPDATE fanout_task t SET announced_round = v.round, announce_lease_until = NULL
    FROM v, locked
    WHERE t.id = v.id AND locked.id = v.id AND t.announced_round < v.round`;
}

export async function claimUnannounced(db: PrismaQueryable, kinds: readonly string[], graceMs: number, leaseMs: number, limit: number): Promise<TaskCounts[]> {
  const rows = await db.$queryRaw<CountsRow[]>`
    UPDATE fanout_task t SET announce_lease_until = clock_timestamp() + ${leaseMs}::int * interval '1 millisecond'
    FROM (
      SELECT id FROM fanout_task
      WHERE kind = ANY(${[...kinds]}::text[]) AND status IN ('completed', 'failed', 'cancelled') AND announced_round < round
        AND completed_at < clock_timestamp() - ${graceMs}::int * interval '1 millisecond'
        AND (announce_lease_until IS NULL OR announce_lease_until < clock_timestamp())
      ORDER BY completed_at
      LIMIT ${limit}::int
      FOR UPDATE SKIP LOCKED
    ) due
    WHERE t.id = due.id
    RETURNING t.id, t.kind, t.tenant, t.status, t.stop_reason, t.total, t.succeeded, t.failed, t.cancelled, t.round, t.dispatched_at, t.max_failures, t.max_failure_ratio`;
  return rows.map(toCounts);
}
