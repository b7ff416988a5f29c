// Fan-in: the hook that runs once a task has finished, once per round (a retry-failed round gets
// its own). A process claims it with one conditional UPDATE on the task row (FOR UPDATE SKIP
// LOCKED picks a task no other process is claiming), under a lease and an owner token, and renews
// the lease while the hook runs; a crashed run's lease lapses and a later maintenance pass claims
// it again with a new token. Only the holder of the current token completes it (a fenced write,
// as an item's claim), so a run that lost its lease cannot record the round a second time. A task
// being deleted (`purged_at`) is not taken up: its app's purge hook may be deleting what the
// fan-in would write (a delete waits for a fan-in already running).
import type { TaskRecord } from '@fanout/core';
import type { PrismaQueryable } from '../prisma-like.ts';
import { toTask, type TaskRow } from '../rows.ts';

/**
 * The finished task (this one, or any of `kinds`) whose fan-in this caller should run now, or null.
 * With a task id, its row is waited for when another statement holds it, and the conditions are
 * checked again on what that statement committed: the caller just finished this task, and a row
 * held for a moment (by the announcement of its ending, say) would otherwise leave its fan-in to
 * the maintenance loop, seconds later. Without one, rows other callers hold are skipped.
 */
export async function claimFanIn(db: PrismaQueryable, taskId: string | null, kinds: readonly string[], leaseMs: number, token: string): Promise<TaskRecord | null> {
  if (taskId !== null) {
    const [row] = await db.$queryRaw<TaskRow[]>`
      UPDATE fanout_task SET fanin_lease_until = clock_timestamp() + ${leaseMs}::int * interval '1 millisecond', fanin_token = ${token}::uuid
      WHERE id = ${taskId}::uuid AND kind = ANY(${[...kinds]}::text[])
        AND status IN ('completed', 'failed', 'cancelled') AND fanin_round < round AND purged_at IS NULL
        AND (fanin_lease_until IS NULL OR fanin_lease_until < clock_timestamp())
      RETURNING *`;
    return row ? toTask(row) : null;
  }
  const [row] = await db.$queryRaw<TaskRow[]>`
    UPDATE fanout_task SET fanin_lease_until = clock_timestamp() + ${leaseMs}::int * interval '1 millisecond', fanin_token = ${token}::uuid
    WHERE id = (
      SELECT id FROM fanout_task
      WHERE kind = ANY(${[...kinds]}::text[])
        AND status IN ('completed', 'failed', 'cancelled') AND fanin_round < round AND purged_at IS NULL
        AND (fanin_lease_until IS NULL OR fanin_lease_until < clock_timestamp())
      ORDER BY completed_at
      LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING *`;
  return row ? toTask(row) : null;
}

/**
 * `claimFanIn` for several finished tasks in one statement, under one token. Their rows are locked
 * in id order and waited for, not skipped: these are the tasks the caller just finished, and a row
 * another statement holds for a moment (the announcement of another task's ending in the same
 * batch) would otherwise leave its fan-in to the maintenance loop, seconds later.
 */
export async function claimFanIns(db: PrismaQueryable, taskIds: readonly string[], leaseMs: number, token: string): Promise<TaskRecord[]> {
  const rows = await db.$queryRaw<TaskRow[]>`
    UPDATE fanout_task t SET fanin_lease_until = clock_timestamp() + ${leaseMs}::int * interval '1 millisecond', fanin_token = ${token}::uuid
    FROM (
      SELECT id FROM fanout_task
      -- The array as a scalar subquery: planned once per connection (see \`poolQueryable\`).
      WHERE id = ANY((SELECT ${[...taskIds]}::uuid[])::uuid[])
        AND status IN ('completed', 'failed', 'cancelled') AND fanin_round < round AND purged_at IS NULL
        AND (fanin_lease_until IS NULL OR fanin_lease_until < clock_timestamp())
      ORDER BY id FOR UPDATE) due
    WHERE t.id = due.id
    RETURNING t.*`;
  return rows.map(toTask);
}

/** `completeFanIn` for several tasks in one statement (rows locked in id order by `locked`); answers the ids recorded. */
export async function completeFanIns(db: PrismaQueryable, done: ReadonlyArray<{ taskId: string; round: number; token: string }>): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- The arrays as scalar subqueries: planned once per connection (see \`poolQueryable\`).
    WITH v AS (SELECT * FROM unnest((SELECT ${done.map((d) => d.taskId)}::uuid[]), (SELECT ${done.map((d) => d.round)}::int[]), (SELECT ${done.map((d) => d.token)}::uuid[])) AS v(id, round, token)),
    locked AS (SELECT t.id FROM fanout_task t JOIN v ON v.id = t.id ORDER BY t.id FOR UPDATE OF t)
    UPDATE fanout_task t SET fanin_round = v.round, fanin_lease_until = NULL, fanin_token = NULL
    FROM v, locked
    WHERE t.id = v.id AND locked.id = v.id AND t.fanin_round < v.round AND t.fanin_token = v.token
    RETURNING t.id`;
  return rows.map((r) => r.id);
}

/** Extends the lease of a fan-in still held under `token`; false when another process took it over. */
export async function renewFanIn(db: PrismaQueryable, taskId: string, token: string, leaseMs: number): Promise<boolean> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE fanout_task SET fanin_lease_until = clock_timestamp() + ${leaseMs}::int * interval '1 millisecond'
    WHERE id = ${taskId}::uuid AND fanin_token = ${token}::uuid AND fanin_lease_until IS NOT NULL
    RETURNING id`;
  return rows.length > 0;
}

/** Records the round's fan-in as done, only for the holder of `token`; false when it was not. */
export async function completeFanIn(db: PrismaQueryable, taskId: string, round: number, token: string): Promise<boolean> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE fanout_task SET fanin_round = ${round}::int, fanin_lease_until = NULL, fanin_token = NULL
    WHERE id = ${taskId}::uuid AND fanin_round < ${round}::int AND fanin_token = ${token}::uuid
    RETURNING id`;
  return rows.length > 0;
}

/** Gives the lease up after the hook failed, so it is claimable again after `retryInMs` (at once when 0). */
export async function releaseFanIn(db: PrismaQueryable, taskId: string, token: string, retryInMs: number): Promise<void> {
  await db.$queryRaw`
    UPDATE fanout_task
    SET fanin_lease_until = CASE WHEN ${retryInMs}::int > 0 THEN clock_timestamp() + ${retryInMs}::int * interval '1 millisecond' END, fanin_token = NULL
    WHERE id = ${taskId}::uuid AND fanin_token = ${token}::uuid`;
}
