// Retention: the items and item logs of tasks that finished long ago are deleted in bounded
// batches; the task row (its counts, status and times) stays. A task is marked purged (`purged_at`,
// and `purging` until its purge ends) by the batch that starts on it, in the same transaction, so
// its details answer as gone from the first deleted row. Its row is held FOR UPDATE SKIP LOCKED
// while a batch goes: two processes delete the rows of different tasks, and a control on the task
// (a retry) waits for the batch. Once nothing is left of a task, the batch ends its purge, or, when
// the runtime asks for a lease (its app has a purge hook), hands it the purge's end: the task stays
// `purging` under the lease's token, which other batches pass over until it lapses, and only the
// token's holder ends it (`finishPurge`) once the hook ran.
import type { PurgeLease, PurgeResult } from '@fanout/core';
import type { PrismaQueryable } from '../prisma-like.ts';
import { deleteRefusal, ENDING_WAIT_MS } from './controls.ts';

/** Tasks one batch takes at most: small tasks share a batch, up to its limit of rows. */
const TASKS_PER_BATCH = 100;

/**
 * Deletes up to `limit` item rows and `limit` log rows, in `tx`: of the tasks of `kinds` whose purge
 * is under way, else of the oldest finished tasks of `kinds` whose details are older than `olderThanMs`, whose
 * ending was announced and whose fan-in ran (as many, oldest first, as hold about `limit` items).
 * Tasks of other kinds are left to their own processes: their fan-in may not have run, and their
 * purge hook is not this process's to run. With `lease`, the tasks the batch leaves with nothing
 * are held under it, their purge left to `finishPurge`; without, the batch ends their purge.
 */
export async function purgeFinished(tx: PrismaQueryable, olderThanMs: number, limit: number, kinds: readonly string[], lease?: PurgeLease): Promise<PurgeResult> {
  let tasks = await tx.$queryRaw<{ id: string; kind: string }[]>`
    SELECT id, kind FROM fanout_task
    WHERE purging AND kind = ANY(${[...kinds]}::text[]) AND status IN ('completed', 'failed', 'cancelled')
      AND (purge_lease_until IS NULL OR purge_lease_until < clock_timestamp())
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
          -- Read again under the lock, every condition: a retry may have reopened one meanwhile,
          -- or reopened it and its new round ended, not yet announced or fanned in.
          AND t.purged_at IS NULL AND t.status IN ('completed', 'failed', 'cancelled')
          AND t.completed_at < statement_timestamp() - ${olderThanMs}::bigint * interval '1 millisecond'
          AND t.announced_round >= t.round AND t.fanin_round >= t.round
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
  if (purged) {
    await tx.$queryRaw`
      WITH ready AS (DELETE FROM fanout_ready WHERE task_id = ANY(${ids}::uuid[]))
      UPDATE fanout_task
      SET purging = ${lease !== undefined}, purge_token = ${lease?.token ?? null}::uuid,
          purge_lease_until = CASE WHEN ${lease !== undefined} THEN clock_timestamp() + ${lease?.ms ?? 0}::int * interval '1 millisecond' END
      WHERE id = ANY(${ids}::uuid[]) RETURNING id`;
  }
  return { taskId: ids[0]!, deleted: logs!.n + items!.n, purged, tasks: ids, kinds: tasks.map((t) => t.kind) };
}

/** Ends the purge of tasks held under `token` (their app's purge hook ran); resolves the ids it ended. */
export async function finishPurge(db: PrismaQueryable, taskIds: readonly string[], token: string): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE fanout_task SET purging = false, purge_token = NULL, purge_lease_until = NULL
    WHERE id = ANY(${[...taskIds]}::uuid[]) AND purging AND purge_token = ${token}::uuid RETURNING id::text`;
  return rows.map((r) => r.id);
}

/**
 * Holds the purge of tasks held under `token` for `ms` more from now: renews the lease while the
 * hook runs, holds them back after it failed, or (0) lets them go. Resolves the ids still held.
 */
export async function holdPurge(db: PrismaQueryable, taskIds: readonly string[], token: string, ms: number): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- 0 lets them go at once: no lease at all (the clock's now, stored to the millisecond, may be
    -- rounded up past a batch that looks in the same millisecond).
    UPDATE fanout_task SET purge_lease_until = CASE WHEN ${ms}::int > 0 THEN clock_timestamp() + ${ms}::int * interval '1 millisecond' END
    WHERE id = ANY(${[...taskIds]}::uuid[]) AND purging AND purge_token = ${token}::uuid RETURNING id::text`;
  return rows.map((r) => r.id);
}

/**
 * Marks a finished task's details as deleted, before its app's purge hook runs and the task is
 * deleted: `purged_at` (kept when retention set it), which refuses a retry under the task's lock,
 * and `purging` under `lease`, so that retention (should the delete not follow) ends it once the
 * lease lapses. A purge another process holds is a conflict.
 */
export async function markPurged(db: PrismaQueryable, taskId: string, lease: PurgeLease): Promise<void> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE fanout_task
    SET purged_at = coalesce(purged_at, now()), purging = true, purge_token = ${lease.token}::uuid,
        purge_lease_until = clock_timestamp() + ${lease.ms}::int * interval '1 millisecond'
    WHERE id = ${taskId}::uuid AND status IN ('completed', 'failed', 'cancelled')
      AND (NOT purging OR purge_lease_until IS NULL OR purge_lease_until < clock_timestamp())
      -- (its ending come, as deleteRefusal reads it)
      AND ((announced_round >= round AND fanin_round >= round)
           OR coalesce(completed_at, updated_at) < now() - ${ENDING_WAIT_MS}::int * interval '1 millisecond')
      AND (fanin_round >= round OR fanin_token IS NULL OR fanin_lease_until IS NULL OR fanin_lease_until < clock_timestamp())
    RETURNING id`;
  if (rows.length === 0) throw await deleteRefusal(db, taskId, true);
}
