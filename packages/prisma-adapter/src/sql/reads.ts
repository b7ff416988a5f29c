// Reads: a task, pages of tasks and of a task's items, and the row lock the controls and the
// reconcile start from. Pages are keyset pages (`(created_at, id)` for tasks, `(seq, id)` for
// items) behind an opaque cursor, so a page costs the same however deep it is, and rows inserted
// meanwhile neither repeat nor shift the pages that follow.
import { FanoutError, type FailureGroup, type ItemCounts, type ItemRecord, type ListItemsQuery, type ListTasksQuery, type Page, type TaskRecord, type TaskStatus, type TaskSummary } from '@fanout/core';
import { decodeCursor, encodeCursor, isUuid } from '../ids.ts';
import type { PrismaQueryable } from '../prisma-like.ts';
import { toItem, toTask, type CountsRow, type ItemRow, type TaskRow } from '../rows.ts';

export async function getTask(db: PrismaQueryable, id: string): Promise<TaskRecord | null> {
  const [row] = await db.$queryRaw<TaskRow[]>`SELECT * FROM fanout_task WHERE id = ${id}::uuid`;
  return row ? toTask(row) : null;
}

/** The task row, locked FOR UPDATE until `tx` ends; undefined when there is none. */
export async function lockTask(tx: PrismaQueryable, taskId: string): Promise<TaskRow | undefined> {
  const [row] = await tx.$queryRaw<TaskRow[]>`SELECT * FROM fanout_task WHERE id = ${taskId}::uuid FOR UPDATE`;
  return row;
}

// A cursor's time is one this store wrote: an ISO time of years 1-9999, which PostgreSQL can hold
// (JavaScript dates reach year -271821; PostgreSQL's stop at 4713 BC).
const isCursorTime = (value: unknown): value is string =>
  typeof value === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(value) && !Number.isNaN(Date.parse(value)) && new Date(value).toISOString() === value;

/**
 * Newest first. The rows come without their input (`input` is null): a list shows counts, and an
 * input can be hundreds of kilobytes (10,000 document ids); `getTask` reads it.
 */
export async function listTasks(db: PrismaQueryable, query: ListTasksQuery): Promise<Page<TaskRecord>> {
  const limit = Math.max(1, Math.min(500, query.limit));
  const cursor = query.cursor ? decodeCursor(query.cursor) : null;
  if (query.cursor && (!cursor || !isCursorTime(cursor[0]) || !isUuid(cursor[1]))) {
    throw new FanoutError('invalid_argument', 'cursor: not a cursor this API returned', { field: 'cursor' });
  }
  if (query.idPrefix !== undefined && !/^[0-9a-f-]{1,36}$/i.test(query.idPrefix)) {
    throw new FanoutError('invalid_argument', 'idPrefix: must be the start of a task id (hex digits and dashes)', { field: 'idPrefix' });
  }
  const [afterAt, afterId] = cursor ? [new Date(cursor[0] as string), cursor[1] as string] : [null, null];
  const byTenant = query.tenant !== undefined;
  const statuses = query.statuses ? [...query.statuses] : null;
  const prefix = query.idPrefix === undefined ? null : `${query.idPrefix.toLowerCase()}%`;
  const rows = await db.$queryRaw<TaskRow[]>`
    SELECT id, kind, tenant, NULL::jsonb AS input, status, stop_reason, error, total, succeeded, failed, cancelled, round,
           max_attempts, max_failures, max_failure_ratio, deadline_at, dispatched_at, dispatch_cut, created_at, started_at, completed_at,
           updated_at, summary, archived_at, priority, purged_at, round_started_at, round_settled_at_start, idempotency_key, request_hash
    FROM fanout_task
    WHERE (${query.kind ?? null}::text IS NULL OR kind = ${query.kind ?? null}::text)
      AND (${byTenant}::boolean = false OR tenant IS NOT DISTINCT FROM ${query.tenant ?? null}::text)
      AND (${query.status ?? null}::text IS NULL OR status = ${query.status ?? null}::text)
      AND (${statuses}::text[] IS NULL OR status = ANY(${statuses}::text[]))
      AND (${query.archived ?? null}::boolean IS NULL OR (archived_at IS NOT NULL) = ${query.archived ?? null}::boolean)
      AND (${prefix}::text IS NULL OR id::text LIKE ${prefix}::text)
      AND (${afterAt}::timestamptz IS NULL OR (created_at, id) < (${afterAt}::timestamptz, ${afterId}::uuid))
    ORDER BY created_at DESC, id DESC
    LIMIT ${limit + 1}::int`;
  const page = rows.slice(0, limit).map(toTask);
  const last = page.at(-1);
  return { rows: page, nextCursor: rows.length > limit && last ? encodeCursor([last.createdAt.toISOString(), last.id]) : null };
}

/** In dispatch order (`seq`). `waiting` is pending after a transient failure. */
export async function listItems(db: PrismaQueryable, taskId: string, query: ListItemsQuery): Promise<Page<ItemRecord>> {
  const limit = Math.max(1, Math.min(1000, query.limit));
  const cursor = query.cursor ? decodeCursor(query.cursor) : null;
  if (query.cursor && (!cursor || !Number.isInteger(cursor[0]) || (cursor[0] as number) < 0 || (cursor[0] as number) > 2 ** 31 - 1 || !isUuid(cursor[1]))) {
    throw new FanoutError('invalid_argument', 'cursor: not a cursor this API returned', { field: 'cursor' });
  }
  const [afterSeq, afterId] = cursor ? [cursor[0] as number, cursor[1] as string] : [0, '00000000-0000-0000-0000-000000000000'];
  const waiting = query.status === 'waiting';
  const status = waiting ? 'pending' : (query.status ?? null);
  const rows = await db.$queryRaw<ItemRow[]>`
    SELECT id, task_id, seq, key, snapshot, status, attempts, result, error, round, started_at, finished_at, retry_at
    FROM fanout_item
    WHERE task_id = ${taskId}::uuid AND (seq, id) > (${afterSeq}::int, ${afterId}::uuid)
      AND (${status}::text IS NULL OR status = ${status}::text)
      AND (${waiting}::boolean = false OR attempts > 0)
    ORDER BY seq, id
    LIMIT ${limit + 1}::int`;
  const page = rows.slice(0, limit).map(toItem);
  const last = page.at(-1);
  return { rows: page, nextCursor: rows.length > limit && last ? encodeCursor([last.seq, last.id]) : null };
}

/** One item of a task (by its primary key; the task's id fences off another task's item). */
export async function getItem(db: PrismaQueryable, taskId: string, itemId: string): Promise<ItemRecord | null> {
  const [row] = await db.$queryRaw<ItemRow[]>`
    SELECT id, task_id, seq, key, snapshot, status, attempts, result, error, round, started_at, finished_at, retry_at
    FROM fanout_item WHERE id = ${itemId}::uuid AND task_id = ${taskId}::uuid`;
  return row ? toItem(row) : null;
}

const EMPTY_BY_STATUS = (): Record<TaskStatus, number> => ({ queued: 0, running: 0, stopping: 0, completed: 0, failed: 0, cancelled: 0 });

/** Tasks of a kind and tenant by status (unarchived), and how many are archived. */
export async function taskSummary(db: PrismaQueryable, query: { kind?: string; tenant?: string | null; statuses?: readonly TaskStatus[] }): Promise<TaskSummary> {
  const byTenant = query.tenant !== undefined;
  const rows = query.statuses
    ? // Only some statuses (the unfinished, for the task gauges at every scrape): through the status
      // index, not over every task the table keeps.
      await db.$queryRaw<{ status: string; archived: boolean; n: number }[]>`
        SELECT status, archived_at IS NOT NULL AS archived, count(*)::int AS n FROM fanout_task
        WHERE status = ANY(${[...query.statuses]}::text[])
          AND (${query.kind ?? null}::text IS NULL OR kind = ${query.kind ?? null}::text)
          AND (${byTenant}::boolean = false OR tenant IS NOT DISTINCT FROM ${query.tenant ?? null}::text)
        GROUP BY 1, 2`
    : await db.$queryRaw<{ status: string; archived: boolean; n: number }[]>`
        SELECT status, archived_at IS NOT NULL AS archived, count(*)::int AS n FROM fanout_task
        WHERE (${query.kind ?? null}::text IS NULL OR kind = ${query.kind ?? null}::text)
          AND (${byTenant}::boolean = false OR tenant IS NOT DISTINCT FROM ${query.tenant ?? null}::text)
        GROUP BY 1, 2`;
  const summary: TaskSummary = { byStatus: EMPTY_BY_STATUS(), archived: 0 };
  for (const row of rows) {
    if (row.archived) summary.archived += row.n;
    else summary.byStatus[row.status as TaskStatus] += row.n;
  }
  return summary;
}

/** A task's items by state, counted from the item rows (the truth). */
export async function itemCounts(db: PrismaQueryable, taskId: string): Promise<ItemCounts> {
  const [row] = await db.$queryRaw<
    { total: number; queued: number; waiting: number; next_retry_at: Date | null; running: number; succeeded: number; failed: number; retryable: number; cancelled: number }[]
  >`
    SELECT count(*)::int AS total,
           count(*) FILTER (WHERE status = 'pending' AND attempts = 0)::int AS queued,
           count(*) FILTER (WHERE status = 'pending' AND attempts > 0)::int AS waiting,
           min(retry_at) FILTER (WHERE status = 'pending' AND attempts > 0) AS next_retry_at,
           count(*) FILTER (WHERE status = 'running')::int AS running,
           count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
           count(*) FILTER (WHERE status = 'failed')::int AS failed,
           count(*) FILTER (WHERE status = 'failed' AND (error->>'retryable')::boolean IS TRUE)::int AS retryable,
           count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled
    FROM fanout_item WHERE task_id = ${taskId}::uuid`;
  const r = row!;
  return {
    total: r.total,
    queued: r.queued,
    waitingRetry: r.waiting,
    nextRetryAt: r.next_retry_at,
    running: r.running,
    succeeded: r.succeeded,
    failed: r.failed,
    retryableFailed: r.retryable,
    cancelled: r.cancelled,
  };
}

/** A task's failed items by error code, biggest group first. */
export async function failureGroups(db: PrismaQueryable, taskId: string): Promise<FailureGroup[]> {
  const rows = await db.$queryRaw<{ code: string; n: number; retryable: number; message: string }[]>`
    SELECT COALESCE(error->>'code', 'unknown') AS code, count(*)::int AS n,
           count(*) FILTER (WHERE (error->>'retryable')::boolean IS TRUE)::int AS retryable,
           min(COALESCE(error->>'message', '')) AS message
    FROM fanout_item WHERE task_id = ${taskId}::uuid AND status = 'failed'
    GROUP BY 1 ORDER BY 2 DESC, 1`;
  return rows.map((r) => ({ code: r.code, count: r.n, retryable: r.retryable, message: r.message }));
}

/**
 * The counters of a live view's tasks: every unfinished task of the tenant and kinds, and those
 * changed since `since`. Through the `(tenant, created_at)` index; the tasks' hot rows are not
 * indexed by `updated_at`, which every settle changes (an index there would end HOT updates).
 */
export async function liveTaskCounts(db: PrismaQueryable, query: { tenant: string | null; kinds: readonly string[]; since: Date | null; limit: number; unfinished?: boolean }): Promise<CountsRow[]> {
  return db.$queryRaw<CountsRow[]>`
    SELECT id, kind, tenant, status, stop_reason, total, succeeded, failed, cancelled, round, dispatched_at, max_failures, max_failure_ratio
    FROM fanout_task
    WHERE tenant IS NOT DISTINCT FROM ${query.tenant}::text AND kind = ANY(${[...query.kinds]}::text[])
      AND ((${query.unfinished ?? true}::boolean AND status IN ('queued', 'running', 'stopping'))
           OR (${query.since}::timestamptz IS NOT NULL AND updated_at >= ${query.since}::timestamptz))
    ORDER BY created_at DESC, id DESC
    LIMIT ${query.limit}::int`;
}

/** Of `ids` (valid uuids), those whose task is no longer `running` (their items should stop). */
export async function stoppedTasks(db: PrismaQueryable, ids: readonly string[]): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    -- The array as a scalar subquery: planned once per connection (see \`poolQueryable\`).
    SELECT id FROM fanout_task WHERE id = ANY((SELECT ${ids}::uuid[])::uuid[]) AND status <> 'running'`;
  return rows.map((r) => r.id);
}
