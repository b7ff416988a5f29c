// Retention: the items and item logs of tasks that finished long ago are deleted in bounded
// batches; the task row (its counts, status and times) stays. A task is marked purged (`purged_at`,
// and `purging` until the runtime finishes it, once nothing is left of it and its app's purge hook
// ran) by the batch that starts on it, in the same transaction, so its details answer as gone from
// the first deleted row. Its row is held FOR UPDATE SKIP LOCKED while a batch goes: two processes
// purge different tasks, and a control on the task (a retry) waits for the batch.
import type { PurgeResult } from '@fanout/core';
import type { PrismaQueryable } from '../prisma-like.ts';

/** Tasks one batch takes at most: small tasks share a batch, up to its limit of rows. */
const TASKS_PER_BATCH = 100;

/**
 * Deletes up to `limit` item rows and `limit` log rows, in `tx`: of the tasks of `kinds` whose purge
 * is under way, else of the oldest finished tasks of `kinds` whose details are older than `olderThanMs`, whose
 * ending was announced and whose fan-in ran (as many, oldest first, as hold about `limit` items).
 * Tasks of other kinds are left to their own processes: their fan-in may not have run.
 */
export async function purgeFinished(tx: PrismaQueryable, olderThanMs: number, limit: number, kinds: readonly string[]): Promise<PurgeResult> {
  // (Of `kinds` only: the purge hook of another app's definition is not this process's to run.)
  let tasks = await tx.$queryRaw<{ id: string; kind: string }[]>`
    SELECT id, kind FROM fanout_task WHERE purging AND kind = ANY(${[...kinds]}::text[]) AND status IN ('completed', 'failed', 'cancelled')
    ORDER BY completed_at LIMIT ${TASKS_PER_BATCH}::int FOR UPDATE SKIP LOCKED`;
  if (tasks.length === 0) {
    tasks = await tx.$queryRaw<{ id: string; kind: string }[]>`
        SELECT t.id, t.kind FROM fanout_task t
        WHERE t.id = ANY(ARRAY(
          SELECT id FROM (
            SELECT id, sum(total) OVER (ORDER BY completed_at, id) - total AS before
            FROM (
              -- The oldest due tasks of each definition, read in the order of the retention index
              -- (kind, completed_at), so no more of them than a batch takes: the cut-off is a bound
              -- of that index's scan (statement_timestamp() is stable within the statement; with
              -- clock_timestamp(), volatile, it was a filter on every finished task of the
              -- definition, 79 ms a pass at 200,000 tasks none of them due, and all of a backlog
              -- were sorted at each batch, 146 ms at 200,000 due).
              SELECT d.id, d.total, d.completed_at FROM unnest(${[...kinds]}::text[]) AS k(kind)
              CROSS JOIN LATERAL (
                SELECT id, total, completed_at FROM fanout_task
                WHERE kind = k.kind AND purged_at IS NULL AND status IN ('completed', 'failed', 'cancelled')
                  AND completed_at < statement_timestamp() - ${olderThanMs}::bigint * interval '1 millisecond'
                  AND announced_round >= round AND fanin_round >= round
                ORDER BY completed_at
                LIMIT ${TASKS_PER_BATCH}::int
              ) d
              ORDER BY d.completed_at, d.id
              LIMIT ${TASKS_PER_BATCH}::int
            ) due
          ) c WHERE c.before < ${limit}::int))
          -- Read again under the lock: a retry may have reopened one meanwhile.
          AND t.purged_at IS NULL AND t.status IN ('completed', 'failed', 'cancelled')
        ORDER BY t.id
        FOR UPDATE SKIP LOCKED`;
    if (tasks.length === 0) return { taskId: null, deleted: 0, purged: false, tasks: [], kinds: [] };
    // From this commit on, their details answer as gone (410), while the batches go.
    await tx.$queryRaw`UPDATE fanout_task SET purged_at = now(), purging = true WHERE id = ANY(${tasks.map((t) => t.id)}::uuid[]) RETURNING 1 AS marked`;
  }
  const ids = tasks.map((t) => t.id);
  const [logs] = await tx.$queryRaw<{ n: number }[]>`
    WITH gone AS (
      DELETE FROM fanout_item_log WHERE id IN (SELECT id FROM fanout_item_log WHERE task_id = ANY(${ids}::uuid[]) LIMIT ${limit}::int)
      RETURNING 1)
    SELECT count(*)::int AS n FROM gone`;
  const [items] = await tx.$queryRaw<{ n: number }[]>`
    WITH gone AS (
      DELETE FROM fanout_item WHERE id IN (SELECT id FROM fanout_item WHERE task_id = ANY(${ids}::uuid[]) LIMIT ${limit}::int)
      RETURNING 1)
    SELECT count(*)::int AS n FROM gone`;
  const purged = logs!.n < limit && items!.n < limit;
  // (A finished task has no ready rows; one left behind goes with the last batch.)
  if (purged) await tx.$queryRaw`DELETE FROM fanout_ready WHERE task_id = ANY(${ids}::uuid[]) RETURNING 1 AS gone`;
  return { taskId: ids[0]!, deleted: logs!.n + items!.n, purged, tasks: ids, kinds: tasks.map((t) => t.kind) };
}

/** Ends the purge of tasks whose details are gone and whose app's purge hook ran. */
export async function finishPurge(tx: PrismaQueryable, taskIds: readonly string[]): Promise<void> {
  await tx.$queryRaw`UPDATE fanout_task SET purging = false WHERE id = ANY(${[...taskIds]}::uuid[]) AND purging RETURNING 1 AS finished`;
}
