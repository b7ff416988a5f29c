// Item logs: the lines handlers write with `ctx.log`, stored in batches so they can be read after
// the item ran (the live stream only shows them to whoever watches at the time). One statement per
// batch, whatever its size; a task's lines are deleted with it.
import { FanoutError, type ItemLogEntry } from '@fanout/core';
import { json } from '../json.ts';
import type { PrismaQueryable } from '../prisma-like.ts';
import { sqlStateOf } from '../retry-on-conflict.ts';

export async function appendItemLogs(db: PrismaQueryable, entries: readonly ItemLogEntry[]): Promise<void> {
  if (entries.length === 0) return;
  // Lines of a task deleted or purged meanwhile are skipped rather than failing the batch; the ids follow the
  // batch's order (the join under EXISTS may not), so lines read back in the order they were logged.
  try {
    await insertLines(db, entries).catch((error: unknown) => {
      // A task deleted between the statement's snapshot and its insert (foreign_key_violation): a
      // second statement no longer sees it, and skips its lines alone.
      if (sqlStateOf(error) === '23503') return insertLines(db, entries);
      throw error;
    });
  } catch (error) {
    // What a line holds was refused (SQLSTATE class 22, a data exception: a lone surrogate in its
    // data, say): the caller can store the batch line by line and lose that line only.
    if (sqlStateOf(error)?.startsWith('22')) throw new FanoutError('invalid_argument', `item log lines: the database refused what a line holds (${(error as Error).message})`, { cause: error });
    throw error;
  }
}

async function insertLines(db: PrismaQueryable, entries: readonly ItemLogEntry[]): Promise<void> {
  await db.$queryRaw`
    INSERT INTO fanout_item_log (task_id, item_id, attempt, at, message, data)
    SELECT x.task_id, x.item_id, x.attempt, x.at, x.message, x.data::jsonb
    FROM unnest(${entries.map((e) => e.taskId)}::uuid[], ${entries.map((e) => e.itemId)}::uuid[], ${entries.map((e) => e.attempt)}::int[],
                ${entries.map((e) => e.at)}::timestamptz[], ${entries.map((e) => e.message)}::text[], ${entries.map((e) => json(e.data))}::text[])
         WITH ORDINALITY AS x(task_id, item_id, attempt, at, message, data, ord)
    -- Locked (as the foreign key's check would, a moment later): a purge under way on the task holds
    -- its row, and this waits for it and reads purged_at again on what it committed. Read from the
    -- statement's snapshot, a line could pass, then be stored after the purge deleted the task's
    -- lines, and stay for ever (the task's row stays after retention).
    WHERE EXISTS (SELECT 1 FROM fanout_task t WHERE t.id = x.task_id AND t.purged_at IS NULL FOR KEY SHARE)
    ORDER BY x.ord`;
}

/** An item's lines, oldest first (the first `limit`). */
export async function itemLogs(db: PrismaQueryable, taskId: string, itemId: string, limit: number): Promise<ItemLogEntry[]> {
  const rows = await db.$queryRaw<{ attempt: number; at: Date; message: string; data: Record<string, unknown> | null }[]>`
    SELECT attempt, at, message, data FROM fanout_item_log
    WHERE item_id = ${itemId}::uuid AND task_id = ${taskId}::uuid
    ORDER BY id LIMIT ${limit}::int`;
  return rows.map((r) => ({ taskId, itemId, attempt: r.attempt, at: r.at, message: r.message, ...(r.data ? { data: r.data } : {}) }));
}
