// Reads: a task, pages of tasks and of a task's items, and the row lock the controls and the
// reconcile start from. Pages are keyset pages (`(created_at, id)` for tasks, `(seq, id)` for
// items) behind an opaque cursor, so a page costs the same however deep it is, and rows inserted
// meanwhile neither repeat nor shift the pages that follow.
import { FanoutError, type ItemRecord, type ListItemsQuery, type ListTasksQuery, type Page, type TaskRecord } from '@fanout/core';
import { decodeCursor, encodeCursor, isUuid } from '../ids.ts';
import type { PrismaQueryable } from '../prisma-like.ts';
import { toItem, toTask, type ItemRow, type TaskRow } from '../rows.ts';

export async function getTask(db: PrismaQueryable, id: string): Promise<TaskRecord | null> {
  const [row] = await db.$queryRaw<TaskRow[]>`SELECT * FROM fanout_task WHERE id = ${id}::uuid`;
  return row ? toTask(row) : null;
}

/** The task row, locked FOR UPDATE until `tx` ends; undefined when there is none. */
export async function lockTask(tx: PrismaQueryable, taskId: string): Promise<TaskRow | undefined> {
  const [row] = await tx.$queryRaw<TaskRow[]>`SELECT * FROM fanout_task WHERE id = ${taskId}::uuid FOR UPDATE`;
  return row;
}

/** Newest first. */
export async function listTasks(db: PrismaQueryable, query: ListTasksQuery): Promise<Page<TaskRecord>> {
  const limit = Math.max(1, Math.min(500, query.limit));
  const cursor = query.cursor ? decodeCursor(query.cursor) : null;
  if (query.cursor && (!cursor || typeof cursor[0] !== 'string' || Number.isNaN(Date.parse(cursor[0])) || !isUuid(cursor[1]))) {
    throw new FanoutError('invalid_argument', 'cursor: not a cursor this API returned', { field: 'cursor' });
  }
  const [afterAt, afterId] = cursor ? [new Date(cursor[0] as string), cursor[1] as string] : [null, null];
  const byTenant = query.tenant !== undefined;
  const rows = await db.$queryRaw<TaskRow[]>`
    SELECT * FROM fanout_task
    WHERE (${query.kind ?? null}::text IS NULL OR kind = ${query.kind ?? null}::text)
      AND (${byTenant}::boolean = false OR tenant IS NOT DISTINCT FROM ${query.tenant ?? null}::text)
      AND (${query.status ?? null}::text IS NULL OR status = ${query.status ?? null}::text)
      AND (${afterAt}::timestamptz IS NULL OR (created_at, id) < (${afterAt}::timestamptz, ${afterId}::uuid))
    ORDER BY created_at DESC, id DESC
    LIMIT ${limit + 1}::int`;
  const page = rows.slice(0, limit).map(toTask);
  const last = page.at(-1);
  return { rows: page, nextCursor: rows.length > limit && last ? encodeCursor([last.createdAt.toISOString(), last.id]) : null };
}

/** In dispatch order (`seq`). */
export async function listItems(db: PrismaQueryable, taskId: string, query: ListItemsQuery): Promise<Page<ItemRecord>> {
  const limit = Math.max(1, Math.min(1000, query.limit));
  const cursor = query.cursor ? decodeCursor(query.cursor) : null;
  if (query.cursor && (!cursor || !Number.isInteger(cursor[0]) || (cursor[0] as number) < 0 || (cursor[0] as number) > 2 ** 31 - 1 || !isUuid(cursor[1]))) {
    throw new FanoutError('invalid_argument', 'cursor: not a cursor this API returned', { field: 'cursor' });
  }
  const [afterSeq, afterId] = cursor ? [cursor[0] as number, cursor[1] as string] : [0, '00000000-0000-0000-0000-000000000000'];
  const rows = await db.$queryRaw<ItemRow[]>`
    SELECT id, task_id, seq, key, snapshot, status, attempts, result, error, round, started_at, finished_at
    FROM fanout_item
    WHERE task_id = ${taskId}::uuid AND (seq, id) > (${afterSeq}::int, ${afterId}::uuid)
      AND (${query.status ?? null}::text IS NULL OR status = ${query.status ?? null}::text)
    ORDER BY seq, id
    LIMIT ${limit + 1}::int`;
  const page = rows.slice(0, limit).map(toItem);
  const last = page.at(-1);
  return { rows: page, nextCursor: rows.length > limit && last ? encodeCursor([last.seq, last.id]) : null };
}

/** Of `ids` (valid uuids), those whose task is no longer `running` (their items should stop). */
export async function stoppedTasks(db: PrismaQueryable, ids: readonly string[]): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT id FROM fanout_task WHERE id = ANY(${ids}::uuid[]) AND status <> 'running'`;
  return rows.map((r) => r.id);
}
