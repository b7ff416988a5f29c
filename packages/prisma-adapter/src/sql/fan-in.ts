// Fan-in: the hook that runs once a task has finished, once per round (a retry-failed round gets
// its own). A process claims it under a lease with one conditional UPDATE on the task row
// (FOR UPDATE SKIP LOCKED picks a task no other process is claiming), so exactly one process runs
// the hook; a crashed run's lease lapses and a later maintenance pass claims it again. Completing
// records the round only if it is newer than the one recorded.
import type { TaskRecord } from '@fanout/core';
import type { PrismaQueryable } from '../prisma-like.ts';
import { toTask, type TaskRow } from '../rows.ts';

/** The finished task (this one, or any of `kinds`) whose fan-in this caller should run now, or null. */
export async function claimFanIn(db: PrismaQueryable, taskId: string | null, kinds: readonly string[], leaseMs: number): Promise<TaskRecord | null> {
  const [row] = await db.$queryRaw<TaskRow[]>`
    UPDATE fanout_task SET fanin_lease_until = clock_timestamp() + ${leaseMs}::int * interval '1 millisecond'
    WHERE id = (
      SELECT id FROM fanout_task
      WHERE (${taskId}::uuid IS NULL OR id = ${taskId}::uuid) AND kind = ANY(${[...kinds]}::text[])
        AND status IN ('completed', 'failed', 'cancelled') AND fanin_round < round
        AND (fanin_lease_until IS NULL OR fanin_lease_until < clock_timestamp())
      ORDER BY completed_at
      LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING *`;
  return row ? toTask(row) : null;
}

export async function completeFanIn(db: PrismaQueryable, taskId: string, round: number): Promise<void> {
  await db.$queryRaw`
    UPDATE fanout_task SET fanin_round = ${round}::int, fanin_lease_until = NULL
    WHERE id = ${taskId}::uuid AND fanin_round < ${round}::int`;
}

/** Gives the lease up after the hook failed, so it is claimable again after `retryInMs` (at once when 0). */
export async function releaseFanIn(db: PrismaQueryable, taskId: string, retryInMs: number): Promise<void> {
  await db.$queryRaw`
    UPDATE fanout_task
    SET fanin_lease_until = CASE WHEN ${retryInMs}::int > 0 THEN clock_timestamp() + ${retryInMs}::int * interval '1 millisecond' END
    WHERE id = ${taskId}::uuid`;
}
