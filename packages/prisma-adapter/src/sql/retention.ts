// Retention: the items and item logs of tasks that finished long ago are deleted in bounded
// batches; the task row (its counts, status and times) stays, with `purged_at` set once its
// details are gone. One task at a time, its row held FOR UPDATE SKIP LOCKED while a batch goes:
// two processes purge different tasks, and a control on the task (a retry) waits for the batch.
import type { PurgeResult } from '@fanout/core';
import type { PrismaQueryable } from '../prisma-like.ts';

/**
 * Deletes up to `limit` item rows and `limit` log rows of the oldest finished task whose details
 * are older than `olderThanMs` and whose ending was announced and fan-in run (for the kinds that
 * have one), in `tx`; marks it purged when nothing of it is left.
 */
export async function purgeFinished(tx: PrismaQueryable, olderThanMs: number, limit: number, fanInKinds: readonly string[]): Promise<PurgeResult> {
  const [task] = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM fanout_task
    WHERE purged_at IS NULL AND status IN ('completed', 'failed', 'cancelled')
      AND completed_at < clock_timestamp() - ${olderThanMs}::bigint * interval '1 millisecond'
      AND announced_round >= round AND (fanin_round >= round OR NOT (kind = ANY(${fanInKinds}::text[])))
    ORDER BY completed_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED`;
  if (!task) return { taskId: null, deleted: 0, purged: false };
  const [logs] = await tx.$queryRaw<{ n: number }[]>`
    WITH gone AS (
      DELETE FROM fanout_item_log WHERE id IN (SELECT id FROM fanout_item_log WHERE task_id = ${task.id}::uuid LIMIT ${limit}::int)
      RETURNING 1)
    SELECT count(*)::int AS n FROM gone`;
  const [items] = await tx.$queryRaw<{ n: number }[]>`
    WITH gone AS (
      DELETE FROM fanout_item WHERE id IN (SELECT id FROM fanout_item WHERE task_id = ${task.id}::uuid LIMIT ${limit}::int)
      RETURNING 1)
    SELECT count(*)::int AS n FROM gone`;
  const purged = logs!.n < limit && items!.n < limit;
  // (A finished task has no ready rows; one left behind would go with the last batch.)
  if (purged) {
    await tx.$queryRaw`
      WITH ready AS (DELETE FROM fanout_ready WHERE task_id = ${task.id}::uuid)
      UPDATE fanout_task SET purged_at = now() WHERE id = ${task.id}::uuid RETURNING id`;
  }
  return { taskId: task.id, deleted: logs!.n + items!.n, purged };
}
